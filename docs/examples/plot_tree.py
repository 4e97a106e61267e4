"""
A tree, plotted
===============

:func:`gpu_tree.plot_tree` draws a fitted tree with matplotlib, as scikit-learn's
``plot_tree`` does: each box shows the split, the impurity, the rows and the class
weights; ``filled=True`` colours the boxes by their majority class.
:func:`gpu_tree.export_text` prints the same tree as text.
"""

import matplotlib.pyplot as plt
from sklearn.datasets import load_iris

import gpu_tree

iris = load_iris()
tree = gpu_tree.DecisionTreeClassifier(max_depth=3, random_state=0)
tree.fit(iris.data, iris.target)

fig, ax = plt.subplots(figsize=(11, 6))
gpu_tree.plot_tree(
    tree,
    feature_names=iris.feature_names,
    class_names=list(iris.target_names),
    filled=True,
    ax=ax,
)
ax.set_title("A depth-3 tree on iris (gini)")
plt.show()

# %%
# The same tree as text. Its root splits on a petal measurement, as every tree of iris
# does, and its leaves hold 1 to 8 training errors.

print(gpu_tree.export_text(tree, feature_names=iris.feature_names))
assert iris.feature_names[tree.tree_.feature[0]].startswith("petal")
assert tree.get_depth() == 3 and tree.score(iris.data, iris.target) > 0.95
