"""gpu_tree: decision trees for large tabular data, on NVIDIA GPUs and on the CPU."""

from gpu_tree._kernel_source import ensure_kernels_importable

# Before anything imports gpu_tree.kernels: a source checkout that is not installed has
# no mapping from kernels/ to gpu_tree.kernels (see _kernel_source).
ensure_kernels_importable()

from gpu_tree._version import __version__  # noqa: E402
from gpu_tree.estimators import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402
from gpu_tree.model.export import export_graphviz, export_text, plot_tree  # noqa: E402
from gpu_tree.model.file_format import load_model as load  # noqa: E402
from gpu_tree.model.tree import Tree  # noqa: E402
from gpu_tree.testing import assert_tree_equal  # noqa: E402

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
