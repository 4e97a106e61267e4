"""Writing a model file: a fitted estimator as its JSON document (:func:`model_document`),
written atomically (:func:`save_model`); and a parsed document with its packed arrays
as JSON lists (:func:`unpacked_document`), as ``model_document(..., packed=False)``
writes them."""

from __future__ import annotations

import json
import numbers

import numpy as np

from gpu_tree.model import packed_arrays
from gpu_tree.model.file_format.fields import FORMAT_NAME, FORMAT_VERSION, Reader
from gpu_tree.model.file_format.registry import ESTIMATORS
from gpu_tree.model.tree import NODE_ARRAYS
from gpu_tree.utils.atomic_files import atomic_text


def _floats(values) -> list:
    """Float array -> JSON list (non-finite values as strings)."""
    array = np.asarray(values, dtype=np.float64).ravel()
    out = array.tolist()
    for k in np.flatnonzero(~np.isfinite(array)).tolist():
        v = out[k]
        out[k] = "nan" if v != v else "inf" if v > 0 else "-inf"
    return out


def _json_value(value, what):
    """A parameter or label as JSON data; refuses what JSON cannot hold faithfully."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _floats([value])[0]
    if isinstance(value, (list, tuple, np.ndarray)):
        return [
            _json_value(v, what) for v in (value.tolist() if hasattr(value, "tolist") else value)
        ]
    raise ValueError(f"cannot save {what}: {value!r} ({type(value).__name__}) is not JSON data")


# Parameters that say how a fit is shown, not what it learned: not kept in a model file
# (a loaded model has their defaults), so files of one model are equal however it was fit.
_DISPLAY_PARAMS = frozenset({"verbose"})
# Parameters added after the format was fixed, kept only where set (not None): files of
# models that do not use them stay as they were (a loaded model gets the default).
_PARAMS_KEPT_WHERE_SET = frozenset({"monotonic_cst"})


def _params(estimator) -> dict:
    params = {}
    for name, value in estimator.get_params().items():
        if name in _DISPLAY_PARAMS or (name in _PARAMS_KEPT_WHERE_SET and value is None):
            continue
        if name == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
            value = None  # a Generator's state is not kept: only a fitted tree is saved
        if name == "class_weight" and isinstance(value, dict):
            value = {"pairs": [[_json_value(k, name), float(v)] for k, v in value.items()]}
        else:
            value = _json_value(value, f"parameter {name}")
        params[name] = value
    return params


def _float_array(values, packed: bool):
    """A float array field: packed binary (exact, non-finite values included), or a JSON
    list (non-finite values as strings)."""
    return packed_arrays.pack_floats(values) if packed else _floats(values)


def _tree_document(tree, packed: bool) -> dict:
    """One tree's arrays (a single tree's ``tree``, an entry of a forest's ``trees``)."""
    tree_doc = {
        "node_count": tree.node_count,
        "n_features": tree.n_features,
        "n_classes": tree.max_n_classes,
        "n_category_words": tree.n_category_words,
    }
    if tree.n_outputs > 1:  # multi-output y (one-output files leave it out)
        tree_doc["n_outputs"] = tree.n_outputs
    if getattr(tree, "class_counts", None) is not None:  # multi-output classes per output
        tree_doc["class_counts"] = list(tree.class_counts)
    for name, dtype in NODE_ARRAYS.items():
        array = getattr(tree, name)
        write = _float_array if dtype == np.float64 else packed_arrays.integers
        tree_doc[name] = write(array, packed)
    tree_doc["value"] = _float_array(tree.value, packed)
    tree_doc["category_bitsets"] = packed_arrays.integers(tree.category_bitsets, packed)
    tree_doc["branch_children"] = packed_arrays.integers(tree.branch_children, packed)
    return tree_doc


def _header(estimator) -> dict:
    from gpu_tree._version import __version__

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": type(estimator).__name__,
        "params": _params(estimator),
        "device": getattr(estimator, "device_", "cpu"),
    }


def _labels_document(classes) -> dict:
    """One output's class labels, with their dtype."""
    return {
        "dtype": classes.dtype.str if classes.dtype.kind != "O" else "object",
        "values": _json_value(classes, "a class label"),
    }


def _fitted_state(estimator, learned, n_features, packed: bool) -> dict:
    """What the model knows of its input: ``estimator``'s feature names and classes, and
    ``learned``'s categories, bins and missing values (a forest's first tree's, which
    every tree shares; a single tree's own)."""
    classes = getattr(estimator, "classes_", None)
    is_categorical = getattr(learned, "is_categorical_", np.zeros(n_features, bool))
    categories = []
    for values in getattr(learned, "categories_", [None] * n_features):
        if values is None:
            categories.append(None)
        elif np.asarray(values).dtype.kind == "f":
            categories.append({"kind": "number", "values": _floats(values)})
        else:
            categories.append({"kind": "object", "values": _json_value(list(values), "a category")})
    mapper = getattr(learned, "_bin_mapper", None)
    binning = None
    if mapper is not None:
        binning = {
            "max_bins": mapper.max_bins,
            "missing_bin": int(mapper.missing_bin_),
            "edges": [_float_array(e, packed) for e in mapper.edges_],
        }
    names = getattr(estimator, "feature_names_in_", None)
    missing = getattr(learned, "missing_in_training_", None)
    return {
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": None if names is None else [str(n) for n in names],
        "classes": None
        if classes is None
        else [_labels_document(c) for c in classes]  # multi-output: one entry per output
        if isinstance(classes, list)
        else _labels_document(classes),
        "categorical": {
            "is_categorical": [bool(v) for v in is_categorical],
            "categories": categories,
        },
        "binning": binning,
        "missing_in_training": None if missing is None else [bool(v) for v in missing],
    }


def model_document(estimator, packed: bool = True) -> dict:
    """The JSON document of a fitted estimator (a tree, or a forest of trees); its node
    arrays packed (typed, compressed binary) or, with ``packed=False``, JSON lists that a
    person or a script can read and edit."""
    if hasattr(estimator, "estimators_"):
        return _forest_document(estimator, packed)
    codec = ESTIMATORS.codecs.get(type(estimator).__name__)
    if codec is not None:
        return {**_header(estimator), **codec.document(estimator, packed)}
    tree = estimator.tree_
    return {
        **_header(estimator),
        **_fitted_state(estimator, estimator, tree.n_features, packed),
        "tree": _tree_document(tree, packed),
    }


def _forest_document(forest, packed: bool) -> dict:
    trees = forest.estimators_
    n_estimators = forest.get_params()["n_estimators"]
    if n_estimators != len(trees):
        raise ValueError(
            f"cannot save {type(forest).__name__}: n_estimators is {n_estimators!r} but the "
            f"forest has {len(trees)} trees; fit it again (or set n_estimators back) first"
        )
    first = trees[0]
    oob = None
    score = getattr(forest, "oob_score_", None)
    values = getattr(
        forest, "oob_decision_function_" if hasattr(forest, "classes_") else "oob_prediction_", None
    )
    if score is not None and values is not None:
        if isinstance(values, list):  # multi-output classes: each padded to the most
            widest = max(v.shape[1] for v in values)
            values = np.concatenate(
                [np.pad(v, ((0, 0), (0, widest - v.shape[1]))) for v in values], axis=1
            )
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 3:  # (n_samples, n_classes, n_outputs): stored output by output
            values = values.transpose(0, 2, 1).reshape(values.shape[0], -1)
        oob = {
            "score": _floats([score])[0],
            "n_samples": values.shape[0],
            "values": _float_array(values, packed),
        }
    n_batches = getattr(forest, "n_batches_", None)
    return {
        **_header(forest),
        **_fitted_state(forest, first, int(forest.n_features_in_), packed),
        "forest": {
            "seed": int(forest._seed),
            "n_batches": None if n_batches is None else int(n_batches),
            "max_features": int(getattr(first, "max_features_", forest.n_features_in_)),
            "oob": oob,
        },
        "trees": [_tree_document(tree.tree_, packed) for tree in trees],
    }


def unpacked_document(document, source="model"):
    """``document`` (a parsed model file) with every packed array a JSON list, as
    ``model_document(..., packed=False)`` writes it: for reading or editing a file as text.
    A damaged packed array gives the ``ValueError`` the loader gives."""
    read = Reader(source)

    def plain(value, where):
        if isinstance(value, list):
            return [plain(v, where) for v in value]
        if not isinstance(value, dict):
            return value
        if set(value) == packed_arrays.FIELDS:
            if value.get("dtype") in packed_arrays.FLOAT_DTYPES:
                return _floats(read.floats({where: value}, where, None))
            return read.ints({where: value}, where, None).tolist()
        return {k: plain(v, k) for k, v in value.items()}

    return plain(document, "document")


def save_model(estimator, path, packed: bool = True) -> None:
    """Write ``estimator`` to ``path`` as JSON, atomically (temporary file, then rename);
    its arrays packed or, with ``packed=False``, as JSON lists (:func:`model_document`)."""
    estimator._check_fitted()
    text = json.dumps(model_document(estimator, packed), allow_nan=False, separators=(",", ":"))
    with atomic_text(path) as out:
        out.write(text)
