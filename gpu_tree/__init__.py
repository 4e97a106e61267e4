"""gpu_tree: decision trees for large tabular data, on NVIDIA GPUs and on the CPU."""

from ._export import export_graphviz, export_text, plot_tree
from ._model_file import load_model as load
from ._tree import Tree, assert_tree_equal
from .estimators import DecisionTreeClassifier, DecisionTreeRegressor

__version__ = "0.1.0"

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
