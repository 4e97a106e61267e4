"""
Axis-parallel against oblique splits
====================================

An axis-parallel tree splits on one feature at a time, so a boundary along a diagonal
becomes a staircase of many leaves. An oblique tree
(:class:`gpu_tree.ObliqueDecisionTreeClassifier`) splits a node on a hyperplane
``coefficients @ x <= threshold`` where that scores better by the criterion, and follows
the diagonal with a single split. Both trees are grown to purity on the same 600 points.
"""

import matplotlib.pyplot as plt
import numpy as np

import gpu_tree

rng = np.random.default_rng(0)
X = rng.normal(size=(600, 2))
y = (X[:, 0] + 0.6 * X[:, 1] > 0.2).astype(int)  # a tilted boundary

axis = gpu_tree.DecisionTreeClassifier(random_state=0).fit(X, y)
oblique = gpu_tree.ObliqueDecisionTreeClassifier(direction="logistic").fit(X, y)

grid = np.linspace(-3.2, 3.2, 300)
xx, yy = np.meshgrid(grid, grid)
points = np.column_stack([xx.ravel(), yy.ravel()])

fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), sharey=True)
for ax, model, name in zip(axes, (axis, oblique), ("axis-parallel", "oblique"), strict=True):
    zz = model.predict(points).reshape(xx.shape)
    ax.contourf(xx, yy, zz, levels=[-0.5, 0.5, 1.5], colors=["#c6dbef", "#fdd0a2"])
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="coolwarm", s=8, edgecolors="none")
    ax.plot(grid, (0.2 - grid) / 0.6, "k--", linewidth=1, label="true boundary")
    ax.set_xlim(-3.2, 3.2)
    ax.set_ylim(-3.2, 3.2)
    ax.set_title(f"{name}: {model.get_n_leaves()} leaves")
    ax.set_xlabel("x0")
axes[0].set_ylabel("x1")
axes[0].legend(loc="lower left")
fig.tight_layout()
plt.show()

# %%
# The oblique tree needs one hyperplane where the axis-parallel tree needs a staircase;
# ``export_text`` prints the hyperplane.

print(gpu_tree.export_text(oblique).splitlines()[0])
print("leaves:", axis.get_n_leaves(), "axis-parallel,", oblique.get_n_leaves(), "oblique")
assert oblique.tree_.n_oblique == 1 and oblique.get_n_leaves() == 2 < axis.get_n_leaves()
