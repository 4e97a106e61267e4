"""
Categorical features and missing values
=======================================

A text or ``category`` column is categorical: a binary split sends a set of its
categories left (Zaki and Meira, Algorithm 19.3; for two classes the categories ordered
by their fraction of class 1, as Breiman et al. showed suffices), with no one-hot
encoding. A missing value (NaN, None) is learned: every split is scored with the node's
missing rows on either side, and keeps the better, which the exports mark "or missing".
The data: 1,200 rows of a colour, a size and a weight with 10 % of the weights missing;
the label depends on the colour's group and the weight.
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import gpu_tree

rng = np.random.default_rng(0)
n = 1200
colour = rng.choice(["red", "orange", "yellow", "green", "blue", "violet"], size=n)
size = rng.choice(["S", "M", "L"], size=n)
weight = rng.normal(50, 15, size=n)
warm = np.isin(colour, ["red", "orange", "yellow"])
label = np.where(warm & (weight > 45) | ~warm & (weight > 65), "heavy", "light")
weight[rng.random(n) < 0.1] = np.nan  # missing, after the labels were drawn
rows = pd.DataFrame({"colour": colour, "size": size, "weight": weight})

tree = gpu_tree.DecisionTreeClassifier(max_depth=3, random_state=0).fit(rows, label)
print(gpu_tree.export_text(tree))

fig, ax = plt.subplots(figsize=(12, 6))
gpu_tree.plot_tree(tree, filled=True, ax=ax, fontsize=8)
ax.set_title("colour splits by sets of categories; weight's splits say where missing values go")
plt.show()

# %%
# Among the heavier rows the tree separates the warm colours from the cold ones, as one
# set of categories, exactly the set the labels were drawn from; the splits of weight
# send their missing rows to one side ("or missing"), and a node may split on whether
# the weight is there at all.

text = gpu_tree.export_text(tree)
assert "colour in {orange, red, yellow}" in text and "or missing" in text
print(f"training accuracy {tree.score(rows, label):.3f}")
assert tree.score(rows, label) > 0.9
