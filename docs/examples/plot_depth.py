"""
Accuracy and fit time against depth
===================================

A deeper tree fits its training rows better, but past some depth it learns their noise:
held-out accuracy levels off and then drops while training accuracy climbs to 100 %.
Fit time grows with depth, more slowly once the nodes get small. The data are 2,400
rows of 6 features (``sklearn.datasets.make_classification`` with 10 % of the labels
flipped), two thirds for training.

At this size (at most 50,000 values) gpu_tree runs its kernels as Python instead of
compiling them, so the times here are those of a first fit on a fresh install, not of
compiled kernels: the :doc:`/benchmarks` page has those.
"""

import time

import matplotlib.pyplot as plt
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

import gpu_tree

X, y = make_classification(
    n_samples=2400, n_features=6, n_informative=4, flip_y=0.1, random_state=0
)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=1 / 3, random_state=0)

depths = list(range(1, 11))
train_accuracy, test_accuracy, fit_seconds = [], [], []
for depth in depths:
    tree = gpu_tree.DecisionTreeClassifier(max_depth=depth, random_state=0)
    start = time.perf_counter()
    tree.fit(X_train, y_train)
    fit_seconds.append(time.perf_counter() - start)
    train_accuracy.append(tree.score(X_train, y_train))
    test_accuracy.append(tree.score(X_test, y_test))

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.plot(depths, train_accuracy, "o-", label="training rows")
left.plot(depths, test_accuracy, "o-", label="held-out rows")
left.set_xlabel("max_depth")
left.set_ylabel("accuracy")
left.legend()
right.plot(depths, [1000 * s for s in fit_seconds], "o-", color="tab:green")
right.set_xlabel("max_depth")
right.set_ylabel("fit time (ms)")
right.set_title("kernels run as Python at this size")
fig.tight_layout()
plt.show()

# %%
# The best held-out depth, and the gap to the training accuracy at the deepest.

best = depths[max(range(len(depths)), key=test_accuracy.__getitem__)]
print(f"best held-out accuracy {max(test_accuracy):.3f} at depth {best}")
print(f"depth {depths[-1]}: training {train_accuracy[-1]:.3f}, held-out {test_accuracy[-1]:.3f}")
assert train_accuracy[-1] > test_accuracy[-1] + 0.05 and 1 < best < depths[-1]
