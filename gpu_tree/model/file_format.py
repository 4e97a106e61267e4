"""Model files: a fitted estimator as a versioned JSON document, and back.

A model file is data, never code: loading parses JSON and checks every field, array
length, index and the tree's shape before building an estimator, so a damaged or foreign
file gives a ``ValueError`` saying what is wrong, never a wrong model. Files are written
atomically: to a temporary file in the same folder, then renamed over the target, so a
reader never sees half a file.

A tree's node arrays, the bin edges and a forest's out-of-bag values are packed: typed binary,
compressed, as base64 text in the JSON (:mod:`gpu_tree.model.packed_arrays`): a fully
grown tree or forest takes 0.27 of the space of JSON lists and loads 5 to 9 times faster
(bench/RESULTS.md). ``model_document(estimator, packed=False)`` gives every array as a JSON
list instead, for a person or a script to read, and the loader reads either form in any
array. In a JSON list, floats are written with Python's shortest round-trip repr
(exact); infinities and NaN, which JSON lacks, as the strings "inf", "-inf" and "nan".
Version 1 is the layout below with every array a JSON list; it is still read.

Layout (format "gpu_tree.model", version 2)::

    {"format": "gpu_tree.model", "format_version": 2, "library_version": "...",
     "estimator": "DecisionTreeClassifier", "params": {...}, "device": "cpu",
     "n_features_in": 4, "feature_names_in": [...] | null,
     "classes": {"dtype": "<U3", "values": [...]} | null,
     "categorical": {"is_categorical": [...], "categories": [null | {"kind", "values"}]},
     "binning": null | {"max_bins": 256, "missing_bin": -1, "edges": [[...], ...]},
     "missing_in_training": [false, true, false, false] | null,
     "tree": {"node_count": 7, "n_features": 4, "n_classes": 2, "n_category_words": 1,
              "children_left": [...] | {"dtype", "count", "zlib_base64"}, ...,
              "value": ..., "category_bitsets": ..., "branch_children": ...}}

``missing_in_training`` (per feature: whether the training data had a missing value in
it) was added to version 1 without a new version number: prediction does not read it
(only the exports do, to mark where missing values go), so a reader that does not know
it loses nothing by skipping it. A file without it, or with null, loads as a model that
does not know: its exports mark missing values on every split.

Multi-output y was added to version 1 the same way, in fields that one-output files
leave out: the tree's ``n_outputs`` (``value`` then holds node_count x n_outputs x
n_classes numbers), a classifier tree's ``class_counts`` (each output's classes;
``n_classes`` the largest, ``value`` padded with zeros past an output's own), and
``classes`` as a list of one ``{"dtype", "values"}`` per output. A reader that does not
know them refuses such a file (its value array has the wrong length), never misreads it.

A forest (an estimator registered with ``tree_estimator``: RandomForestClassifier,
RandomForestRegressor) is one file of the same format and version: the fields above
that describe the input and what was learned from it (``n_features_in`` to
``missing_in_training``, shared by every tree) once, then ``forest`` and the trees'
arrays in a list, each as a single tree's ``tree``::

     ..., "missing_in_training": [...] | null,
     "forest": {"seed": 123, "n_batches": 1, "max_features": 2,
                "oob": null | {"score": 0.93, "n_samples": 150, "values": [...]}},
     "trees": [{"node_count": 7, ...}, {"node_count": 9, ...}, ...]}

``seed`` is the forest's seed of its bootstrap draws (``warm_start`` and the out-of-bag
rows of a later fit need it); ``max_features`` the trees' resolved ``max_features_``;
``oob`` the out-of-bag score and, row by row, ``oob_decision_function_`` (a classifier,
``n_samples`` x n_classes values) or ``oob_prediction_`` (a regressor). A gpu_tree that
knows no forest refuses such a file as an unknown estimator. The loader checks every
tree as it checks a single tree, and that the trees agree with each other and with the
forest: ``params.n_estimators`` trees, each of ``n_features_in`` features and of the
classes' number of outputs.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gpu_tree.model import packed_arrays
from gpu_tree.model.tree import (
    CATEGORICAL_SUBSET,
    LEAF,
    MULTIWAY,
    NODE_ARRAYS,
    NUMERIC,
    TREE_LEAF,
    TREE_UNDEFINED,
    Tree,
    scaled_weighted_impurity,
)
from gpu_tree.utils.atomic_files import atomic_text

FORMAT_NAME = "gpu_tree.model"
FORMAT_VERSION = 2
# Version 1 is version 2 with every array a JSON list (no packed arrays): still read.
READABLE_VERSIONS = (1, 2)
# The estimator classes a model file may name, by class name. The estimators register
# themselves (gpu_tree.estimators), so that this lower layer never imports them.
_REGISTRY: dict[str, type] = {}
# Ensembles' names -> tree_estimator(ensemble, index): the unfitted tree estimator that holds
# the ensemble's tree ``index`` (its parameters), as the ensemble's fit makes it.
_TREE_ESTIMATORS: dict[str, object] = {}
# Names -> codec of estimators whose fitted state is no Tree (the oblique trees): an object
# with ``document(estimator) -> dict`` (the fields after the header) and
# ``read(reader, document, estimator) -> estimator`` (checks and fills the estimator made
# with the saved parameters; ``reader.fail`` raises the ValueError naming the file).
_CODECS: dict[str, object] = {}


class EstimatorRegistry(NamedTuple):
    """What the loader builds a model file's estimator from, by the file's class name:
    ``classes`` (made with the saved parameters), ``tree_estimators`` (an ensemble's
    ``tree_estimator``) and ``codecs`` (see ``_CODECS``)."""

    classes: dict
    tree_estimators: dict
    codecs: dict


# The estimators' registry (register_estimator fills it). Another registry loads a model
# file into other classes: gpu_tree.model.saved's, which need no estimator.
ESTIMATORS = EstimatorRegistry(_REGISTRY, _TREE_ESTIMATORS, _CODECS)

_NON_FINITE = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def register_estimator(estimator_class: type, *, tree_estimator=None, codec=None) -> type:
    """Let model files name ``estimator_class`` (by its class name) and load into it.

    An ensemble of trees (a forest: fitted, its trees are the tree estimators in
    ``estimators_``) is registered with ``tree_estimator(ensemble, index)``, which returns
    the unfitted tree estimator that holds tree ``index`` (its parameters, as the
    ensemble's fit makes them); the loader gives it the shared fitted state and its tree.
    An estimator whose fitted state is no :class:`Tree` brings a ``codec`` (see
    ``_CODECS``) that writes and reads its fields after the common header.
    """
    name = estimator_class.__name__
    if _REGISTRY.get(name, estimator_class) is not estimator_class:
        raise ValueError(f"another estimator class is already registered as {name!r}")
    _REGISTRY[name] = estimator_class
    if tree_estimator is not None:
        _TREE_ESTIMATORS[name] = tree_estimator
    if codec is not None:
        _CODECS[name] = codec
    return estimator_class


# -- writing ----------------------------------------------------------------------------------
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
    codec = _CODECS.get(type(estimator).__name__)
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
    read = _Reader(source)

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


# -- reading ----------------------------------------------------------------------------------
class _Reader:
    """Field access that names the field in every error."""

    def __init__(self, source, format_version=FORMAT_VERSION):
        self.source = source
        self.format_version = format_version

    def tree_reader(self, k):
        """The reader of a forest's tree ``k``, naming it in its errors."""
        return _Reader(f"{self.source}: tree {k}", self.format_version)

    def fail(self, message):
        raise ValueError(f"{self.source}: {message}")

    def field(self, document, name, kind, where="the model"):
        if not isinstance(document, dict) or name not in document:
            self.fail(f"{where} has no field {name!r}")
        value = document[name]
        if (
            kind is not None
            and not isinstance(value, kind)
            or isinstance(value, bool)
            and kind is int
        ):
            self.fail(f"field {name!r} of {where} should be {_kind_name(kind)}, got {value!r:.60}")
        return value

    def feature_names(self, document, n_features):
        """The model's ``feature_names_in`` as an object array of ``n_features`` strings,
        or None where the model has none."""
        names = document.get("feature_names_in")
        if names is None:
            return None
        if (
            not isinstance(names, list)
            or len(names) != n_features
            or not all(isinstance(n, str) for n in names)
        ):
            self.fail(f"feature_names_in should be {n_features} strings")
        return np.asarray(names, dtype=object)

    def _array(self, document, name, length, where, dtypes):
        """Array field ``name``: a JSON list, or (from format version 2) a packed array,
        then an array of one of ``dtypes``; of ``length`` entries where that is known."""
        values = self.field(document, name, None, where)
        if packed_arrays.is_packed(values) and self.format_version >= 2:
            values = packed_arrays.unpack(
                values, dtypes, lambda message: self.fail(f"array {name!r} of {where}: {message}")
            )
        elif not isinstance(values, list):
            self.fail(
                f"field {name!r} of {where} should be a list"
                + (" or a packed array" if self.format_version >= 2 else "")
                + f", got {values!r:.60}"
            )
        if length is not None and len(values) != length:
            self.fail(f"array {name!r} has {len(values)} entries, expected {length}")
        return values

    def ints(self, document, name, length, where="the tree"):
        values = self._array(document, name, length, where, packed_arrays.INTEGER_DTYPES)
        if isinstance(values, np.ndarray):
            return values.astype(np.int64)
        if set(map(type, values)) <= {int}:  # the usual array, checked at C speed
            try:
                return np.array(values, dtype=np.int64)
            except OverflowError:
                pass  # the value out of range is named below
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            self.fail(f"array {name!r} holds a value that is not an integer")
        big = next((v for v in values if not _INT64_MIN <= v <= _INT64_MAX), None)
        if big is not None:
            self.fail(f"array {name!r} holds {big}, out of the 64-bit integer range")
        return np.array(values, dtype=np.int64)

    def floats(self, document, name, length, where="the tree"):
        values = self._array(document, name, length, where, packed_arrays.FLOAT_DTYPES)
        if isinstance(values, np.ndarray):
            return values.astype(np.float64)
        kinds = set(map(type, values))
        if kinds <= {float, int} and (  # the usual array: numbers, converted at C speed
            int not in kinds or all(_INT64_MIN <= v <= _INT64_MAX for v in values if type(v) is int)
        ):
            return np.array(values, dtype=np.float64)
        out = np.empty(len(values))
        for k, v in enumerate(values):
            if isinstance(v, str) and v in _NON_FINITE:
                out[k] = _NON_FINITE[v]
            elif (
                isinstance(v, float)
                or isinstance(v, int)
                and not isinstance(v, bool)
                and (_INT64_MIN <= v <= _INT64_MAX)
            ):
                out[k] = v
            else:
                self.fail(f"array {name!r} holds {v!r}, which is not a number")
        return out


def _kind_name(kind):
    names = {int: "an integer", str: "a string", list: "a list", dict: "an object"}
    return names.get(kind, getattr(kind, "__name__", str(kind)))


def load_model(path):
    """The estimator saved in ``path``; a ``ValueError`` says what is wrong with a bad file."""
    return model_from_document(read_model_document(path), str(path))


def read_model_document(path) -> dict:
    """The parsed JSON of a model file, not yet checked (:func:`model_from_document` does
    that); a ``ValueError`` for text that is not JSON."""
    path = Path(path)
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{source}: not a gpu_tree model file (not UTF-8 text)") from None
    try:
        document = json.loads(text, parse_constant=lambda c: c)  # NaN stays a string
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{source}: not a gpu_tree model file: invalid or truncated JSON at line "
            f"{exc.lineno}, column {exc.colno} ({exc.msg})"
        ) from None
    except RecursionError:
        raise ValueError(
            f"{source}: not a gpu_tree model file: JSON nested too deeply to read"
        ) from None
    return document


def model_from_document(document, source="model", registry=None):
    """The estimator a parsed model file describes, every field checked; ``registry``:
    the classes to build (default: the estimators', :data:`ESTIMATORS`)."""
    registry = ESTIMATORS if registry is None else registry
    read = _Reader(source, None)
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        read.fail(
            f"a JSON document, but not a gpu_tree model (format {found!r}, expected "
            f"{FORMAT_NAME!r})"
        )
    version = read.field(document, "format_version", int)
    if version not in READABLE_VERSIONS:
        read.fail(
            f"format_version {version} is not supported (this gpu_tree reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}); use the gpu_tree version that wrote it"
        )
    read.format_version = version
    kind = read.field(document, "estimator", str)
    if kind not in registry.classes:
        read.fail(f"unknown estimator {kind!r}; expected one of {sorted(registry.classes)}")
    regression = not getattr(registry.classes[kind], "_is_classification", True)
    if kind in registry.codecs:
        estimator = _construct(read, document, registry.classes[kind])
        estimator.device_ = read.field(document, "device", str)
        return registry.codecs[kind].read(read, document, estimator)
    if kind in registry.tree_estimators:
        return _forest_from_document(read, document, kind, regression, registry)
    tree = _read_tree(read, read.field(document, "tree", dict), regression)
    n_features = read.field(document, "n_features_in", int)
    if n_features != tree.n_features:
        read.fail(f"n_features_in is {n_features} but the tree has {tree.n_features} features")

    estimator = _construct(read, document, registry.classes[kind])
    estimator.tree_ = tree
    estimator.n_features_in_ = n_features
    estimator.n_outputs_ = tree.n_outputs
    estimator.max_features_ = n_features
    estimator.device_ = read.field(document, "device", str)
    fitted = _read_fitted_state(read, document, n_features, regression, [tree], lambda k: read)
    for name, value in fitted.items():
        setattr(estimator, name, value)
    return estimator


def _construct(read, document, estimator_class):
    """``estimator_class`` (the file's, from the registry) made with the saved parameters."""
    params = dict(read.field(document, "params", dict))
    class_weight = params.get("class_weight")
    if isinstance(class_weight, dict):
        params["class_weight"] = {k: v for k, v in class_weight.get("pairs", [])}
    try:
        return estimator_class(**params)
    except TypeError as exc:
        read.fail(f"the saved parameters do not fit {estimator_class.__name__}: {exc}")


def _read_fitted_state(read, document, n_features, regression, trees, tree_read) -> dict:
    """The fitted attributes that describe the input and what was learned from it (feature
    names, classes, categories, bins, missing values), shared by every tree of
    ``trees``, each tree checked against them (``tree_read(k)``: the reader naming tree
    k in its errors); name -> value, to set on the estimator (and a forest's trees)."""
    fitted = {}
    names = read.feature_names(document, n_features)
    if names is not None:
        fitted["feature_names_in_"] = names
    if regression:
        for k, tree in enumerate(trees):
            if tree.max_n_classes != 1:
                tree_read(k).fail(
                    f"a regressor's tree must have 1 output column, not {tree.max_n_classes}"
                )
    elif isinstance(document.get("classes"), list):  # multi-output: labels per output
        labels = [
            _read_labels(read, {"classes": entry}, f"classes[{k}]")
            for k, entry in enumerate(document["classes"])
        ]
        counts = [outputs.size for outputs in labels]
        for k, tree in enumerate(trees):
            if any(outputs.ndim != 1 for outputs in labels) or tree.n_classes.tolist() != counts:
                tree_read(k).fail(
                    f"class labels of {counts} classes per output, but the tree has "
                    f"{tree.n_classes.tolist()}"
                )
        fitted["classes_"] = labels
        fitted["n_classes_"] = np.array(counts, dtype=np.intp)
    else:
        labels = _read_labels(read, document)
        for k, tree in enumerate(trees):
            if labels.ndim != 1 or labels.size != tree.max_n_classes or tree.n_outputs != 1:
                tree_read(k).fail(
                    f"{labels.size} class labels, but the tree has {tree.max_n_classes} classes"
                    + (f" and {tree.n_outputs} outputs" if tree.n_outputs != 1 else "")
                )
        fitted["classes_"] = labels
        fitted["n_classes_"] = labels.size
    for k, tree in enumerate(trees):
        _check_values(tree_read(k), tree, not regression)
    maps = _read_categories(read, document, n_features, fitted.get("feature_names_in_"))
    for k, tree in enumerate(trees):
        _check_categorical_nodes(tree_read(k), tree, maps.mask)
    fitted["_category_maps"] = maps
    fitted["is_categorical_"] = maps.mask
    fitted["categories_"] = [maps.categories.get(j) for j in range(n_features)]
    mapper = _read_binning(read, document, n_features)
    if mapper is not None:
        fitted["_bin_mapper"] = mapper
    missing = _read_missing_in_training(read, document, n_features)
    if missing is not None:
        fitted["missing_in_training_"] = missing
    return fitted


def _forest_from_document(read, document, kind, regression, registry):
    """A forest: every tree read and checked as a single tree is, the trees checked
    against each other and the forest, and the forest's tree estimators rebuilt."""
    documents = read.field(document, "trees", list)
    if not documents:
        read.fail("a forest needs at least one tree, but 'trees' is empty")

    tree_read = read.tree_reader
    trees = [_read_tree(tree_read(k), d, regression) for k, d in enumerate(documents)]
    n_features = read.field(document, "n_features_in", int)
    words = trees[0].n_category_words
    for k, tree in enumerate(trees):
        if tree.n_features != n_features:
            tree_read(k).fail(
                f"the tree has {tree.n_features} features, but n_features_in is {n_features}"
            )
        if tree.n_category_words != words:
            tree_read(k).fail(
                f"n_category_words is {tree.n_category_words}, but tree 0's is {words}: a "
                "forest's trees share their categories"
            )

    forest = _construct(read, document, registry.classes[kind])
    n_estimators = getattr(forest, "n_estimators", None)
    if n_estimators != len(trees) or isinstance(n_estimators, bool):
        read.fail(f"params.n_estimators is {n_estimators!r}, but the forest has {len(trees)} trees")
    device = read.field(document, "device", str)
    fitted = _read_fitted_state(read, document, n_features, regression, trees, tree_read)

    section = read.field(document, "forest", dict)
    seed = read.field(section, "seed", int, "forest")
    if not 0 <= seed <= _INT64_MAX:
        read.fail(f"forest.seed is {seed}, expected an integer in [0, 2**63 - 1]")
    n_batches = section.get("n_batches")
    if n_batches is not None and (
        not isinstance(n_batches, int) or isinstance(n_batches, bool) or n_batches < 1
    ):
        read.fail(f"forest.n_batches should be null or an integer >= 1, got {n_batches!r:.60}")
    max_features = read.field(section, "max_features", int, "forest")
    if not 1 <= max_features <= n_features:
        read.fail(
            f"forest.max_features is {max_features}, expected 1 to {n_features} (the "
            "features a node's search draws)"
        )

    n_outputs = {tree.n_outputs for tree in trees}
    if len(n_outputs) != 1:
        read.fail(f"the forest's trees have different numbers of outputs: {sorted(n_outputs)}")
    (n_outputs,) = n_outputs
    forest.n_features_in_ = n_features
    forest.n_outputs_ = n_outputs
    forest.device_ = device
    for name in ("feature_names_in_", "classes_", "n_classes_"):
        if name in fitted:
            setattr(forest, name, fitted[name])
    forest._seed = seed
    if n_batches is not None:
        forest.n_batches_ = n_batches
    oob = section.get("oob")
    if oob is not None:
        n_classes = fitted.get("n_classes_")
        if regression:
            n_values = n_outputs
        elif n_outputs > 1:  # each output's classes, padded to the most
            n_values = n_outputs * int(np.max(n_classes))
        else:
            n_values = n_classes
        score, values = _read_oob(read, oob, n_values)
        forest.oob_score_ = score
        if regression:
            forest.oob_prediction_ = values[:, 0] if n_outputs == 1 else values
        elif n_outputs > 1:  # scikit-learn's (n_samples, n_classes, n_outputs)
            width = int(np.max(n_classes))
            values = values.reshape(values.shape[0], n_outputs, width).transpose(0, 2, 1)
            forest.oob_decision_function_ = np.ascontiguousarray(values)
        else:
            forest.oob_decision_function_ = values

    tree_estimator = registry.tree_estimators[kind]
    estimators = []
    for k, tree in enumerate(trees):
        try:
            estimator = tree_estimator(forest, k)
        except (TypeError, ValueError) as exc:
            read.fail(f"the saved parameters do not fit {kind}'s trees: {exc}")
        estimator.tree_ = tree
        estimator.n_features_in_ = n_features
        estimator.n_outputs_ = n_outputs
        estimator.max_features_ = max_features
        estimator.device_ = device
        for name, value in fitted.items():  # shared, as in a fit: one object for all trees
            setattr(estimator, name, value)
        estimators.append(estimator)
    forest.estimators_ = estimators
    return forest


def _read_oob(read, oob, n_values):
    """The out-of-bag score and its rows' values, (n_samples, n_values)."""
    score = read.field(oob, "score", None, "forest.oob")
    score = read.floats({"score": [score]}, "score", 1, "forest.oob")[0]
    n_samples = read.field(oob, "n_samples", int, "forest.oob")
    if not 1 <= n_samples <= _INT64_MAX:
        read.fail(f"forest.oob.n_samples is {n_samples}, expected a positive integer")
    values = read.floats(oob, "values", n_samples * n_values, "forest.oob")
    if not np.all(np.isfinite(values)):
        read.fail("forest.oob.values should be finite numbers")
    return float(score), values.reshape(n_samples, n_values)


def _read_missing_in_training(read, document, n_features):
    """Which features had missing values in training (absent or null in files written
    before it was recorded: unknown, and the attribute is not set: None)."""
    missing = document.get("missing_in_training")
    if missing is None:
        return None
    if (
        not isinstance(missing, list)
        or len(missing) != n_features
        or not all(isinstance(v, bool) for v in missing)
    ):
        read.fail(
            f"missing_in_training should be a list of {n_features} true/false values (one "
            f"per feature), got {missing!r:.60}"
        )
    return np.array(missing, dtype=bool)


def _read_binning(read, document, n_features):
    """The histogram bin edges (kept for inspection; prediction does not need them)."""
    from gpu_tree.data.binning import BinMapper

    binning = document.get("binning")
    if binning is None:
        return None
    edges = read.field(binning, "edges", list, "binning")
    if len(edges) != n_features:
        read.fail(f"binning has edges for {len(edges)} features, expected {n_features}")
    try:
        mapper = BinMapper(max_bins=read.field(binning, "max_bins", int, "binning"))
    except (TypeError, ValueError) as exc:
        read.fail(f"binning: {exc}")
    mapper.missing_bin_ = read.field(binning, "missing_bin", int, "binning")
    mapper.edges_ = [
        read.floats({"edges": e}, "edges", None, f"binning of feature {j}")
        for j, e in enumerate(edges)
    ]
    return mapper


def _read_labels(read, document, where="classes"):
    """A classifier's class labels, in their saved dtype (:func:`read_class_labels`)."""
    return read_class_labels(read, document.get("classes"), where)


# The class label dtypes a fit makes and a model file keeps (``classes_.dtype.str``, or
# "object"): bool, integers, floats, datetime64 and timedelta64 (their values saved as
# integers), str (``<U`` n). Nothing else: a structured, bytes, complex or void dtype
# loaded, then failed in predict.
_LABEL_KINDS = "biufMmU"
# A str dtype may be wider than its longest label (a fit keeps y's dtype: "<U10" for
# labels of 2 characters), by this many bytes at most beyond what the labels need: the
# labels' array stays bounded by the file's size ("<U200000000" in a 9 KB file asked
# for 2.4 GB).
_LABEL_STR_SLACK_BYTES = 1 << 20


def read_class_labels(read, classes, where="classes"):
    """The class labels of a model file's ``classes`` entry ({"dtype", "values"}) as a
    1-D array of that dtype, each label checked against it first: JSON booleans for
    bool, integers in the dtype's range for integers (and datetime64 / timedelta64),
    numbers the dtype holds exactly for floats, strings no longer than a str dtype's
    length, and strings, or numbers, or booleans for "object" (as a fit's labels are);
    labels distinct. Anything else, and any other dtype, is a ValueError naming the
    field and the value (never an OverflowError, a huge allocation or a truncated
    label)."""
    values = read.field(classes, "values", list, where)
    dtype_text = read.field(classes, "dtype", str, where)
    if dtype_text == "object":
        labels = _object_labels(read, values, where)
    else:
        dtype = _label_dtype(read, dtype_text, where)
        labels = _typed_labels(read, values, dtype, dtype_text, where)
    try:
        distinct = np.unique(labels).size
    except TypeError:  # an object label NumPy cannot order: refused above, kept safe
        distinct = len(set(labels.tolist()))
    if distinct != labels.size:
        read.fail(f"{where}.values repeat a label: each class needs its own")
    return labels


def _label_dtype(read, text, where):
    try:
        dtype = np.dtype(text) if len(text) <= 40 else None
    except (TypeError, ValueError, SyntaxError, OverflowError):
        dtype = None
    if (
        dtype is None
        or dtype.kind not in _LABEL_KINDS
        or dtype.names is not None
        or dtype.subdtype is not None
    ):
        read.fail(
            f"{where}.dtype is {text!r:.60}: class labels are bool, integers, floats, "
            "datetime64, timedelta64, str (<U) or 'object'"
        )
    return dtype


def _typed_labels(read, values, dtype, text, where):
    def refuse(value, reason):
        read.fail(f"{where}.values holds {value!r:.60}, {reason} (dtype {text!r})")

    kind = dtype.kind
    if kind == "b":
        for v in values:
            if not isinstance(v, bool):
                refuse(v, "not a boolean")
        return np.array(values, dtype=dtype)
    if kind == "U":
        longest = 0
        for v in values:
            if not isinstance(v, str):
                refuse(v, "not a string")
            longest = max(longest, len(v))
        length = dtype.itemsize // 4
        if length < max(longest, 1):
            read.fail(
                f"{where}.dtype is {text!r}, too short for its labels: the longest has "
                f"{longest} characters"
            )
        if len(values) * (length - longest) * 4 > _LABEL_STR_SLACK_BYTES:
            read.fail(
                f"{where}.dtype is {text!r}: {len(values)} labels of {length} characters "
                f"({len(values) * length * 4:,} bytes), for labels of at most {longest}"
            )
        return np.array(values, dtype=dtype)
    if kind in "Mm" and np.datetime_data(dtype)[0] == "generic":
        read.fail(f"{where}.dtype is {text!r}: a datetime64 or timedelta64 label needs a unit")
    if kind in "iuMm":
        low, high = (
            (np.iinfo(dtype).min, np.iinfo(dtype).max)
            if kind in "iu"
            else (np.iinfo(np.int64).min, np.iinfo(np.int64).max)
        )
        for v in values:
            if not isinstance(v, int) or isinstance(v, bool):
                refuse(v, "not an integer")
            if not low <= v <= high:
                refuse(v, f"out of the range [{low}, {high}] of its dtype")
        return np.array(values, dtype=np.int64 if kind in "Mm" else dtype).astype(dtype)

    # Floats: numbers that the dtype holds exactly (a fit's labels are whole, finite).
    def held(v):
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                x = dtype.type(v)
            return bool(np.isfinite(x)) and float(x) == v  # Python's exact comparison
        except OverflowError:  # an integer past the dtype's range
            return False

    for v in values:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            refuse(v, "not a number")
        if not held(v):
            refuse(v, "not a finite number its dtype holds exactly")
    return np.array(values, dtype=dtype)


def _object_labels(read, values, where):
    kinds = set()
    for v in values:
        if isinstance(v, str):
            kinds.add(str)
        elif isinstance(v, (bool, int, float)):
            if isinstance(v, float) and not np.isfinite(v):
                read.fail(f"{where}.values holds {v!r}: a class label is finite")
            kinds.add(float)
        else:
            read.fail(
                f"{where}.values holds {v!r:.60}: an 'object' label is a string, a number "
                "or a boolean"
            )
    if len(kinds) > 1:
        read.fail(f"{where}.values mix strings and numbers: a fit's labels are one or the other")
    labels = np.empty(len(values), dtype=object)
    labels[:] = values
    return labels


def _read_categories(read, document, n_features, feature_names):
    """The categorical features and their categories, as CategoryMaps."""
    from gpu_tree.data.categorical import CategoryMaps

    categorical = read.field(document, "categorical", dict)
    mask = read.field(categorical, "is_categorical", list, "categorical")
    categories = read.field(categorical, "categories", list, "categorical")
    if len(mask) != n_features or len(categories) != n_features:
        read.fail(f"categorical fields should describe {n_features} features")
    if not all(isinstance(v, bool) for v in mask):
        read.fail("categorical.is_categorical should hold true/false values")
    maps = CategoryMaps(np.array(mask, dtype=bool), feature_names)
    for j, entry in enumerate(categories):
        if mask[j] != (entry is not None):
            read.fail(f"feature {j}: is_categorical and its categories disagree")
        if entry is None:
            continue
        kind = read.field(entry, "kind", str, f"categories of feature {j}")
        if kind == "number":
            values = read.floats(entry, "values", None, f"categories of feature {j}")
            # Codes are positions in this order (a value is found by a sorted search).
            if not (np.all(np.isfinite(values)) and np.all(np.diff(values) > 0)):
                read.fail(
                    f"categories of feature {j} should be finite numbers in increasing "
                    "order, each once"
                )
        elif kind == "object":
            values = np.asarray(
                read.field(entry, "values", list, f"categories of feature {j}"), dtype=object
            )
        else:
            read.fail(f"feature {j}: unknown category kind {kind!r}")
        maps.categories[j] = values
    return maps


def _check_categorical_nodes(read, tree, mask):
    """Only categorical features are split by category."""
    if tree.n_category_words < 1:
        read.fail("n_category_words must be at least 1")
    if tree.node_count:
        internal = tree.children_left != TREE_LEAF
        kinds = tree.split_kind
        categorical_nodes = internal & ((kinds == CATEGORICAL_SUBSET) | (kinds == MULTIWAY))
        bad = np.flatnonzero(categorical_nodes & ~mask[tree.feature.clip(0)])
        if bad.size:
            read.fail(
                f"node {bad[0]} splits feature {tree.feature[bad[0]]} by category, but that "
                "feature is not categorical"
            )


def _read_tree(read, doc, regression: bool) -> Tree:
    n = read.field(doc, "node_count", int, "the tree")
    n_features = read.field(doc, "n_features", int, "the tree")
    n_classes = read.field(doc, "n_classes", int, "the tree")
    n_words = read.field(doc, "n_category_words", int, "the tree")
    if n < 1 or n_features < 1 or n_classes < 1 or n_words < 1:
        read.fail("node_count, n_features, n_classes and n_category_words must be positive")
    if max(n, n_features, n_classes, n_words) > _INT64_MAX:
        read.fail("node_count, n_features, n_classes and n_category_words must fit 64 bits")
    arrays = {}
    for name, dtype in NODE_ARRAYS.items():
        reader = read.floats if dtype == np.float64 else read.ints
        arrays[name] = reader(doc, name, n)
    n_outputs = read.field(doc, "n_outputs", int, "the tree") if "n_outputs" in doc else 1
    if not 1 <= n_outputs <= _INT64_MAX:
        read.fail(f"n_outputs is {n_outputs}: a tree has at least 1 output")
    class_counts = None
    if "class_counts" in doc or (n_outputs > 1 and not regression):
        class_counts = read.ints(doc, "class_counts", n_outputs)
        if (
            regression
            or n_outputs < 2
            or np.any(class_counts < 1)
            or class_counts.max() != n_classes
        ):
            read.fail(
                f"class_counts {class_counts.tolist()}: a multi-output classifier's tree has "
                f"one count per output ({n_outputs}), each at least 1, the largest n_classes "
                f"({n_classes})"
            )
    value = read.floats(doc, "value", n * n_outputs * n_classes)
    bitsets = read.ints(doc, "category_bitsets", None)
    branch_children = read.ints(doc, "branch_children", None)
    _check_structure(read, n, n_features, n_words, arrays, bitsets, branch_children, regression)

    tree = Tree(
        n_features,
        n_classes,
        capacity=n,
        n_category_words=n_words,
        n_outputs=n_outputs,
        class_counts=class_counts,
    )
    tree.node_count = n
    for name, dtype in NODE_ARRAYS.items():
        getattr(tree, "_" + name)[:n] = arrays[name].astype(dtype)
    tree._value[:n] = value.reshape(n, n_outputs, n_classes)
    tree.category_bitsets = bitsets
    tree.branch_children = branch_children
    return tree


def _check_structure(read, n, n_features, n_words, arrays, bitsets, branch_children, regression):
    """Every index in range, every node but the root with exactly one parent, and children
    numbered after their parent (so the walk always ends: no cycle); depths, node numbers
    and impurity decreases as below.

    Checked on whole arrays first (:func:`_structure_is_valid`: a forest's trees hold
    millions of nodes); a tree that does not pass is checked node by node, in the order
    below, which names the first problem."""
    if _structure_is_valid(n, n_features, n_words, arrays, bitsets, branch_children, regression):
        return
    _check_structure_node_by_node(
        read, n, n_features, n_words, arrays, bitsets, branch_children, regression
    )


def _structure_is_valid(n, n_features, n_words, arrays, bitsets, branch_children, regression):
    """Whether the tree passes every check of :func:`_check_structure_node_by_node`, on
    whole arrays: True only where that check passes too (same comparisons; offsets
    compared without int64 overflow); False sends the tree to it, for the message."""
    left, right = arrays["children_left"], arrays["children_right"]
    kind, feature = arrays["split_kind"], arrays["feature"]
    go_left = arrays["missing_go_to_left"]
    if np.any((go_left != 0) & (go_left != 1)):
        return False
    leaf = (left == TREE_LEAF) | (right == TREE_LEAF)
    if np.any(leaf & ((left != right) | (kind != LEAF))):
        return False
    for name, expected in _LEAF_FIELDS.items():
        if np.any(leaf & (arrays[name] != expected)):
            return False
    internal = ~leaf
    nodes = np.arange(n)
    for child in (left, right):
        if np.any(internal & ((child < 0) | (child >= n) | (child <= nodes))):
            return False
    if np.any(internal & ((feature < 0) | (feature >= n_features))):
        return False
    multiway = internal & (kind == MULTIWAY)
    subset = internal & (kind == CATEGORICAL_SUBSET)
    numeric = internal & (kind == NUMERIC)
    if np.any(internal & ~(multiway | subset | numeric)):
        return False
    if np.any(internal & ~multiway & (arrays["branch_offset"] >= 0)):
        return False
    if np.any(numeric & (arrays["category_offset"] >= 0)):
        return False
    if np.any(numeric & (left == right)):
        return False
    offset = arrays["category_offset"]
    if np.any(subset & ((offset < 0) | (offset > bitsets.size - n_words))):
        return False
    binary = np.flatnonzero(internal & ~multiway)
    edge_parent, edge_child = [binary, binary], [left[binary], right[binary]]
    for node in np.flatnonzero(multiway):
        children = np.arange(left[node], right[node] + 1)
        start, entries = int(arrays["branch_offset"][node]), int(arrays["n_branches"][node])
        if start < 0 or entries < 1 or start + entries + 1 > branch_children.size:
            return False
        if not np.isin(branch_children[start : start + entries + 1], children).all():
            return False
        edge_parent.append(np.full(children.size, node))
        edge_child.append(children)
    edge_parent, edge_child = np.concatenate(edge_parent), np.concatenate(edge_child)
    parents = np.bincount(edge_child, minlength=n)
    if parents[0] != 0 or np.any(parents[1:] != 1):
        return False
    depth = arrays["depth"]
    if depth[0] != 0 or np.any(depth[edge_child] != depth[edge_parent] + 1):
        return False
    if _bad_node_number(arrays, regression) is not None:
        return False
    return _impurity_decreases_are_valid(arrays, left, right, binary, np.flatnonzero(multiway))


def _impurity_decreases_are_valid(arrays, left, right, binary, multiway):
    """:func:`_check_impurity_decreases`'s comparison, on whole arrays (a binary node's
    two children summed as np.sum sums them; a multiway node's by np.sum itself)."""
    weight, impurity = arrays["weighted_n_node_samples"], arrays["impurity"]
    infinite = np.isinf(impurity)
    weighted, _ = scaled_weighted_impurity(weight, np.where(infinite, 0.0, impurity))
    slack = 1e-9 * np.max(weighted)
    lower, upper = left[binary], right[binary]
    checked = ~(infinite[binary] | infinite[lower] | infinite[upper])
    children_sum = weighted[lower] + weighted[upper]
    if np.any(checked & (children_sum > weighted[binary] * (1 + 1e-9) + slack)):
        return False
    for node in multiway:
        children = np.arange(left[node], right[node] + 1)
        if infinite[node] or infinite[children].any():
            continue
        if np.sum(weighted[children]) > weighted[node] * (1 + 1e-9) + slack:
            return False
    return True


def _check_structure_node_by_node(
    read, n, n_features, n_words, arrays, bitsets, branch_children, regression
):
    """:func:`_check_structure`, node by node: raises naming the first problem."""
    left, right = arrays["children_left"], arrays["children_right"]
    kind, feature = arrays["split_kind"], arrays["feature"]
    go_left = arrays["missing_go_to_left"]
    bad = np.flatnonzero((go_left != 0) & (go_left != 1))
    if bad.size:
        read.fail(f"node {bad[0]} has missing_go_to_left {go_left[bad[0]]}, expected 0 or 1")
    parents = np.zeros(n, dtype=np.int64)
    children_of = {}  # internal node -> its children
    for node in range(n):
        if left[node] == TREE_LEAF or right[node] == TREE_LEAF:
            if left[node] != right[node] or kind[node] != LEAF:
                read.fail(
                    f"node {node} is half a leaf: children {left[node]}, {right[node]}, "
                    f"split kind {kind[node]}"
                )
            # What a leaf holds where a split holds its rule (the tree's own leaves, and
            # pruning's): nothing that a reader of the arrays could follow.
            for name, expected in _LEAF_FIELDS.items():
                if arrays[name][node] != expected:
                    read.fail(f"leaf {node} has {name} {arrays[name][node]}, expected {expected}")
            continue
        for child in (left[node], right[node]):
            if not 0 <= child < n:
                read.fail(f"node {node} has child {child}, out of range (the tree has {n} nodes)")
            if child <= node:
                read.fail(
                    f"node {node} has child {child}, numbered before it: the tree would "
                    "have a cycle"
                )
        if not 0 <= feature[node] < n_features:
            read.fail(
                f"node {node} splits feature {feature[node]}, out of range ({n_features} features)"
            )
        # Prediction picks a node's rule by its offsets, not its split kind: a branch table
        # (branch_offset >= 0) makes it multiway, else a category set (category_offset >= 0)
        # a subset split. They must agree with split_kind, or the walk reads unchecked offsets.
        if kind[node] != MULTIWAY and arrays["branch_offset"][node] >= 0:
            read.fail(
                f"node {node} has branch_offset {arrays['branch_offset'][node]} but split "
                f"kind {kind[node]}: only a multiway node has a branch table"
            )
        if kind[node] == NUMERIC and arrays["category_offset"][node] >= 0:
            read.fail(
                f"node {node} has category_offset {arrays['category_offset'][node]} but "
                "is a numeric split: only a subset node has a category set"
            )
        if kind[node] == MULTIWAY:
            children = np.arange(left[node], right[node] + 1)
            offset, entries = arrays["branch_offset"][node], arrays["n_branches"][node]
            if offset < 0 or entries < 1 or offset + entries + 1 > branch_children.size:
                read.fail(f"multiway node {node}: its branch table is out of range")
            table = branch_children[offset : offset + entries + 1]
            if not np.isin(table, children).all():
                read.fail(f"multiway node {node}: a branch leads outside its children")
        elif kind[node] == CATEGORICAL_SUBSET:
            offset = arrays["category_offset"][node]
            if offset < 0 or offset + n_words > bitsets.size:
                read.fail(f"subset node {node}: its category set is out of range")
            children = np.array([left[node], right[node]])
        elif kind[node] == NUMERIC:
            if left[node] == right[node]:
                read.fail(f"node {node} has the same child on both sides")
            children = np.array([left[node], right[node]])
        else:
            read.fail(f"node {node} has unknown split kind {kind[node]}")
        parents[children] += 1
        children_of[node] = children
    if parents[0] != 0:
        read.fail("the root has a parent")
    orphan = np.flatnonzero(parents[1:] != 1)
    if orphan.size:
        k = orphan[0] + 1
        read.fail(f"node {k} has {parents[k]} parents; every node but the root needs exactly one")
    _check_depths(read, arrays, children_of)
    _check_node_numbers(read, arrays, regression)
    _check_impurity_decreases(read, arrays, children_of)


# A leaf's fields that a split uses for its rule (see Tree.add_nodes and Tree.pruned).
_LEAF_FIELDS = {
    "feature": TREE_UNDEFINED,
    "category_offset": -1,
    "branch_offset": -1,
    "n_branches": 0,
    "missing_go_to_left": 0,
}


def _check_depths(read, arrays, children_of):
    """The root at depth 0, every child one below its parent (what decision_path and the
    level-wise code size their arrays by)."""
    depth = arrays["depth"]
    if depth[0] != 0:
        read.fail(f"the root has depth {depth[0]}, expected 0")
    for node, children in children_of.items():
        for child in children:
            if depth[child] != depth[node] + 1:
                read.fail(
                    f"node {child} has depth {depth[child]}, expected {depth[node] + 1} "
                    f"(one below its parent {node})"
                )


# How far below 0 an impurity may be: a pure node's w - sum_i c_i^2 / w, in floats, comes
# out a few ulps below 0 when its weights are fractions (class_weight="balanced", sample
# weights), and a fitted tree holds it as computed (-1.3e-16, say). Impurities of
# classification nodes are of order 1 (Gini <= 1, entropy <= log2 of the classes), so
# this is rounding, never a real value.
_IMPURITY_ROUNDING = 1e-12


def _check_node_numbers(read, arrays, regression):
    """Impurities and weighted sizes are finite and non-negative (an impurity to rounding:
    _IMPURITY_ROUNDING), node sizes too; but a regression impurity may be +inf (a
    variance beyond float64's range: targets 1e200 apart)."""
    bad = _bad_node_number(arrays, regression)
    if bad is not None:
        node, name, value = bad
        read.fail(f"node {node} has {name} {value}, expected a finite number >= 0")


def _bad_node_number(arrays, regression):
    """(node, array name, value) of the first number _check_node_numbers refuses, or None."""
    for name in ("impurity", "weighted_n_node_samples", "n_node_samples"):
        values = arrays[name]
        finite = np.isfinite(values)
        if regression and name == "impurity":
            finite |= values == np.inf
        low = -_IMPURITY_ROUNDING if name == "impurity" else 0.0
        bad = np.flatnonzero(~finite | (values < low))
        if bad.size:
            return bad[0], name, values[bad[0]]
    return None


def _check_impurity_decreases(read, arrays, children_of):
    """No split raises the weighted impurity (each impurity is concave, so a grown or
    pruned tree never does, to rounding): feature importances and the pruning path sum
    these decreases. Compared on scaled weighted impurities (:func:`scaled_weighted_impurity`),
    so that huge ones do not overflow the check."""
    weight, impurity = arrays["weighted_n_node_samples"], arrays["impurity"]
    # A regression variance beyond float64's range is +inf (its true value is unknown, so
    # splits next to one go unchecked; importances and pruning refuse such trees).
    infinite = np.isinf(impurity)
    weighted, _ = scaled_weighted_impurity(weight, np.where(infinite, 0.0, impurity))
    slack = 1e-9 * np.max(weighted)
    for node, children in children_of.items():
        if infinite[node] or infinite[children].any():
            continue
        if np.sum(weighted[children]) > weighted[node] * (1 + 1e-9) + slack:
            read.fail(
                f"node {node}'s children hold more weighted impurity than it does "
                f"(impurity {impurity[node]!r} at weight {weight[node]!r}): no split raises it"
            )


def _check_values(read, tree, is_classification):
    """Values are finite, every output's; a classifier's are class probabilities (each
    >= 0, summing to 1 within 1e-9: a fit's sum to a few ulps), and past an output's
    classes (multi-output: padding to the most classes) zeros, so that no prediction
    names a class the output does not have. Only a node of zero weight may hold zeros
    (files of fits that rounded weights below their fixed point's unit to 0 hold such
    nodes); a weighted node's zeros would predict probabilities summing to 0."""
    weight = tree.weighted_n_node_samples
    for k, count in enumerate(tree.n_classes):
        value = tree.value[:, k, :]
        where = f" (output {k})" if tree.n_outputs > 1 else ""
        bad = np.flatnonzero(~np.all(np.isfinite(value), axis=1))
        if bad.size:
            read.fail(
                f"node {bad[0]} has value {value[bad[0]].tolist()}{where}, expected finite numbers"
            )
        if not is_classification:
            continue
        if np.any(value[:, count:] != 0):
            node = int(np.flatnonzero(np.any(value[:, count:] != 0, axis=1))[0])
            read.fail(f"node {node} has values past output {k}'s {count} classes")
        value = value[:, :count]
        total = value.sum(axis=1)
        unweighted_zeros = (total == 0) & (weight == 0)
        bad = np.flatnonzero(
            np.any(value < 0, axis=1) | ((np.abs(total - 1) > 1e-9) & ~unweighted_zeros)
        )
        if bad.size:
            node = int(bad[0])
            read.fail(
                f"node {node} has value {value[node].tolist()!r:.200}{where} at "
                f"weighted_n_node_samples {float(weight[node])!r}: class probabilities must be "
                ">= 0 and sum to 1 (only a node of zero weight may hold zeros)"
            )
