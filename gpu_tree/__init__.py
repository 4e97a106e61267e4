"""gpu_tree: decision trees for large tabular data, on NVIDIA GPUs and on the CPU.

The public names below load on first use (PEP 562), so that ``import gpu_tree`` and the
``gputree`` command start in milliseconds: the command sets its interrupt handlers before
numpy, numba or scikit-learn are imported (see ``gpu_tree.app.launch``).
"""

import importlib

from gpu_tree._kernel_source import ensure_kernels_importable

# Before anything imports gpu_tree.kernels: a source checkout that is not installed has
# no mapping from kernels/ to gpu_tree.kernels (see _kernel_source).
ensure_kernels_importable()

from gpu_tree._version import __version__  # noqa: E402

# Public name -> (module, attribute) it is loaded from.
_PUBLIC = {
    "DAGClassifier": ("gpu_tree.ensemble", "DAGClassifier"),
    "DecisionTreeClassifier": ("gpu_tree.estimators", "DecisionTreeClassifier"),
    "DecisionTreeRegressor": ("gpu_tree.estimators", "DecisionTreeRegressor"),
    "ExtraTreeClassifier": ("gpu_tree.estimators", "ExtraTreeClassifier"),
    "ExtraTreeRegressor": ("gpu_tree.estimators", "ExtraTreeRegressor"),
    "ExtraTreesClassifier": ("gpu_tree.ensemble", "ExtraTreesClassifier"),
    "ExtraTreesRegressor": ("gpu_tree.ensemble", "ExtraTreesRegressor"),
    "ObliqueDecisionTreeClassifier": ("gpu_tree.estimators", "ObliqueDecisionTreeClassifier"),
    "ObliqueDecisionTreeRegressor": ("gpu_tree.estimators", "ObliqueDecisionTreeRegressor"),
    "RandomForestClassifier": ("gpu_tree.ensemble", "RandomForestClassifier"),
    "RandomForestRegressor": ("gpu_tree.ensemble", "RandomForestRegressor"),
    "Tree": ("gpu_tree.model.tree", "Tree"),
    "assert_tree_equal": ("gpu_tree.testing", "assert_tree_equal"),
    "export_graphviz": ("gpu_tree.model.export.dot", "export_graphviz"),
    "export_inputs": ("gpu_tree.model.export.portable", "export_inputs"),
    "export_onnx": ("gpu_tree.model.export.onnx_format", "export_onnx"),
    "export_png": ("gpu_tree.model.export.png", "export_png"),
    "export_text": ("gpu_tree.model.export.text", "export_text"),
    "export_treelite": ("gpu_tree.model.export.treelite_format", "export_treelite"),
    # gpu_tree.ensemble registers the forests and, through gpu_tree.estimators, the trees.
    "load": ("gpu_tree.ensemble", "load_model"),
    "plot_tree": ("gpu_tree.model.export.plot", "plot_tree"),
}

__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name):
    try:
        module, attribute = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'gpu_tree' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
