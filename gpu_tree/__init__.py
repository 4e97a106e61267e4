"""gpu_tree: decision trees for large tabular data, on NVIDIA GPUs and on the CPU."""

from gpu_tree._version import __version__
from gpu_tree.estimators import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.model.export import export_graphviz, export_text, plot_tree
from gpu_tree.model.file_format import load_model as load
from gpu_tree.model.tree import Tree
from gpu_tree.testing import assert_tree_equal

__all__ = [
    "DecisionTreeClassifier",
    "DecisionTreeRegressor",
    "Tree",
    "assert_tree_equal",
    "export_graphviz",
    "export_text",
    "load",
    "plot_tree",
    "__version__",
]
