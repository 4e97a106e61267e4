"""Model files: a fitted estimator as a versioned JSON document, and back.

A model file is data, never code: loading parses JSON and checks every field, array
length, index and the tree's shape before building an estimator, so a damaged or foreign
file gives a ``ValueError`` saying what is wrong, never a wrong model. Floats are written
with Python's shortest round-trip repr (exact); infinities and NaN, which JSON lacks,
as the strings "inf", "-inf" and "nan". Files are written atomically: to a temporary
file in the same folder, then renamed over the target, so a reader never sees half a file.

Layout (format "gpu_tree.model", version 1)::

    {"format": "gpu_tree.model", "format_version": 1, "library_version": "...",
     "estimator": "DecisionTreeClassifier", "params": {...}, "device": "cpu",
     "n_features_in": 4, "feature_names_in": [...] | null,
     "classes": {"dtype": "<U3", "values": [...]} | null,
     "categorical": {"is_categorical": [...], "categories": [null | {"kind", "values"}]},
     "binning": null | {"max_bins": 256, "missing_bin": -1, "edges": [[...], ...]},
     "missing_in_training": [false, true, false, false] | null,
     "tree": {"node_count": 7, "n_features": 4, "n_classes": 2, "n_category_words": 1,
              "children_left": [...], ..., "value": [...], "category_bitsets": [...],
              "branch_children": [...]}}

``missing_in_training`` (per feature: whether the training data had a missing value in
it) was added to version 1 without a new version number: prediction does not read it
(only the exports do, to mark where missing values go), so a reader that does not know
it loses nothing by skipping it. A file without it, or with null, loads as a model that
does not know: its exports mark missing values on every split.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import numpy as np

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
FORMAT_VERSION = 1
# The estimator classes a model file may name, by class name. The estimators register
# themselves (gpu_tree.estimators), so that this lower layer never imports them.
_REGISTRY: dict[str, type] = {}
_NON_FINITE = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def register_estimator(estimator_class: type) -> type:
    """Let model files name ``estimator_class`` (by its class name) and load into it."""
    name = estimator_class.__name__
    if _REGISTRY.get(name, estimator_class) is not estimator_class:
        raise ValueError(f"another estimator class is already registered as {name!r}")
    _REGISTRY[name] = estimator_class
    return estimator_class


# -- writing ----------------------------------------------------------------------------------
def _floats(values) -> list:
    """Float array -> JSON list (non-finite values as strings)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).ravel().tolist():
        if v != v:
            out.append("nan")
        elif v in (np.inf, -np.inf):
            out.append("inf" if v > 0 else "-inf")
        else:
            out.append(v)
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


def _params(estimator) -> dict:
    params = {}
    for name, value in estimator.get_params().items():
        if name in _DISPLAY_PARAMS:
            continue
        if name == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
            value = None  # a Generator's state is not kept: only a fitted tree is saved
        if name == "class_weight" and isinstance(value, dict):
            value = {"pairs": [[_json_value(k, name), float(v)] for k, v in value.items()]}
        else:
            value = _json_value(value, f"parameter {name}")
        params[name] = value
    return params


def model_document(estimator) -> dict:
    """The JSON document of a fitted estimator."""
    from gpu_tree._version import __version__

    tree = estimator.tree_
    tree_doc = {
        "node_count": tree.node_count,
        "n_features": tree.n_features,
        "n_classes": tree.n_classes,
        "n_category_words": tree.n_category_words,
    }
    for name, dtype in NODE_ARRAYS.items():
        array = getattr(tree, name)
        tree_doc[name] = _floats(array) if dtype == np.float64 else array.astype(int).tolist()
    tree_doc["value"] = _floats(tree.value)
    tree_doc["category_bitsets"] = tree.category_bitsets.astype(int).tolist()
    tree_doc["branch_children"] = tree.branch_children.astype(int).tolist()

    classes = getattr(estimator, "classes_", None)
    is_categorical = getattr(estimator, "is_categorical_", np.zeros(tree.n_features, bool))
    categories = []
    for values in getattr(estimator, "categories_", [None] * tree.n_features):
        if values is None:
            categories.append(None)
        elif np.asarray(values).dtype.kind == "f":
            categories.append({"kind": "number", "values": _floats(values)})
        else:
            categories.append({"kind": "object", "values": _json_value(list(values), "a category")})
    mapper = getattr(estimator, "_bin_mapper", None)
    binning = None
    if mapper is not None:
        binning = {
            "max_bins": mapper.max_bins,
            "missing_bin": int(mapper.missing_bin_),
            "edges": [_floats(e) for e in mapper.edges_],
        }
    names = getattr(estimator, "feature_names_in_", None)
    missing = getattr(estimator, "missing_in_training_", None)
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "library_version": __version__,
        "estimator": type(estimator).__name__,
        "params": _params(estimator),
        "device": getattr(estimator, "device_", "cpu"),
        "n_features_in": int(estimator.n_features_in_),
        "feature_names_in": None if names is None else [str(n) for n in names],
        "classes": None
        if classes is None
        else {
            "dtype": classes.dtype.str if classes.dtype.kind != "O" else "object",
            "values": _json_value(classes, "a class label"),
        },
        "categorical": {
            "is_categorical": [bool(v) for v in is_categorical],
            "categories": categories,
        },
        "binning": binning,
        "missing_in_training": None if missing is None else [bool(v) for v in missing],
        "tree": tree_doc,
    }


def save_model(estimator, path) -> None:
    """Write ``estimator`` to ``path`` as JSON, atomically (temporary file, then rename)."""
    estimator._check_fitted()
    text = json.dumps(model_document(estimator), allow_nan=False, separators=(",", ":"))
    with atomic_text(path) as out:
        out.write(text)


# -- reading ----------------------------------------------------------------------------------
class _Reader:
    """Field access that names the field in every error."""

    def __init__(self, source):
        self.source = source

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

    def ints(self, document, name, length, where="the tree"):
        values = self.field(document, name, list, where)
        if length is not None and len(values) != length:
            self.fail(f"array {name!r} has {len(values)} entries, expected {length}")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            self.fail(f"array {name!r} holds a value that is not an integer")
        big = next((v for v in values if not _INT64_MIN <= v <= _INT64_MAX), None)
        if big is not None:
            self.fail(f"array {name!r} holds {big}, out of the 64-bit integer range")
        return np.array(values, dtype=np.int64)

    def floats(self, document, name, length, where="the tree"):
        values = self.field(document, name, list, where)
        if length is not None and len(values) != length:
            self.fail(f"array {name!r} has {len(values)} entries, expected {length}")
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


def model_from_document(document, source="model"):
    read = _Reader(source)
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        read.fail(
            f"a JSON document, but not a gpu_tree model (format {found!r}, expected "
            f"{FORMAT_NAME!r})"
        )
    version = read.field(document, "format_version", int)
    if version != FORMAT_VERSION:
        read.fail(
            f"format_version {version} is not supported (this gpu_tree reads version "
            f"{FORMAT_VERSION}); use the gpu_tree version that wrote it"
        )
    kind = read.field(document, "estimator", str)
    if kind not in _REGISTRY:
        read.fail(f"unknown estimator {kind!r}; expected one of {sorted(_REGISTRY)}")
    regression = kind == "DecisionTreeRegressor"
    tree = _read_tree(read, read.field(document, "tree", dict), regression)
    n_features = read.field(document, "n_features_in", int)
    if n_features != tree.n_features:
        read.fail(f"n_features_in is {n_features} but the tree has {tree.n_features} features")

    params = dict(read.field(document, "params", dict))
    class_weight = params.get("class_weight")
    if isinstance(class_weight, dict):
        params["class_weight"] = {k: v for k, v in class_weight.get("pairs", [])}
    estimator_class = _REGISTRY[kind]
    try:
        estimator = estimator_class(**params)
    except TypeError as exc:
        read.fail(f"the saved parameters do not fit {kind}: {exc}")
    estimator.tree_ = tree
    estimator.n_features_in_ = n_features
    estimator.n_outputs_ = 1
    estimator.max_features_ = n_features
    estimator.device_ = read.field(document, "device", str)
    names = document.get("feature_names_in")
    if names is not None:
        if (
            not isinstance(names, list)
            or len(names) != n_features
            or not all(isinstance(n, str) for n in names)
        ):
            read.fail(f"feature_names_in should be {n_features} strings")
        estimator.feature_names_in_ = np.asarray(names, dtype=object)
    _read_classes(read, document, estimator, kind, tree)
    _check_values(read, tree, not regression)
    _read_categories(read, document, estimator, n_features)
    _read_binning(read, document, estimator, n_features)
    _read_missing_in_training(read, document, estimator, n_features)
    return estimator


def _read_missing_in_training(read, document, estimator, n_features):
    """Which features had missing values in training (absent or null in files written
    before it was recorded: unknown, and the attribute is not set)."""
    missing = document.get("missing_in_training")
    if missing is None:
        return
    if (
        not isinstance(missing, list)
        or len(missing) != n_features
        or not all(isinstance(v, bool) for v in missing)
    ):
        read.fail(
            f"missing_in_training should be a list of {n_features} true/false values (one "
            f"per feature), got {missing!r:.60}"
        )
    estimator.missing_in_training_ = np.array(missing, dtype=bool)


def _read_binning(read, document, estimator, n_features):
    """The histogram bin edges (kept for inspection; prediction does not need them)."""
    from gpu_tree.data.binning import BinMapper

    binning = document.get("binning")
    if binning is None:
        return
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
    estimator._bin_mapper = mapper


def _read_classes(read, document, estimator, kind, tree):
    classes = document.get("classes")
    if kind == "DecisionTreeRegressor":
        if tree.n_classes != 1:
            read.fail(f"a regressor's tree must have 1 output column, not {tree.n_classes}")
        return
    values = read.field(classes, "values", list, "classes")
    dtype = read.field(classes, "dtype", str, "classes")
    try:
        labels = np.asarray(values, dtype=object if dtype == "object" else np.dtype(dtype))
    except (TypeError, ValueError) as exc:
        read.fail(f"class labels do not fit their dtype {dtype!r}: {exc}")
    if labels.ndim != 1 or labels.size != tree.n_classes:
        read.fail(f"{labels.size} class labels, but the tree has {tree.n_classes} classes")
    estimator.classes_ = labels
    estimator.n_classes_ = labels.size


def _read_categories(read, document, estimator, n_features):
    from gpu_tree.data.categorical import CategoryMaps

    categorical = read.field(document, "categorical", dict)
    mask = read.field(categorical, "is_categorical", list, "categorical")
    categories = read.field(categorical, "categories", list, "categorical")
    if len(mask) != n_features or len(categories) != n_features:
        read.fail(f"categorical fields should describe {n_features} features")
    if not all(isinstance(v, bool) for v in mask):
        read.fail("categorical.is_categorical should hold true/false values")
    maps = CategoryMaps(np.array(mask, dtype=bool), getattr(estimator, "feature_names_in_", None))
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
    estimator._category_maps = maps
    estimator.is_categorical_ = maps.mask
    estimator.categories_ = [maps.categories.get(j) for j in range(n_features)]
    if estimator.tree_.n_category_words < 1:
        read.fail("n_category_words must be at least 1")
    if estimator.tree_.node_count:
        internal = estimator.tree_.children_left != TREE_LEAF
        kinds = estimator.tree_.split_kind
        categorical_nodes = internal & ((kinds == CATEGORICAL_SUBSET) | (kinds == MULTIWAY))
        bad = np.flatnonzero(categorical_nodes & ~maps.mask[estimator.tree_.feature.clip(0)])
        if bad.size:
            read.fail(
                f"node {bad[0]} splits feature {estimator.tree_.feature[bad[0]]} by "
                "category, but that feature is not categorical"
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
    value = read.floats(doc, "value", n * n_classes)
    bitsets = read.ints(doc, "category_bitsets", None)
    branch_children = read.ints(doc, "branch_children", None)
    _check_structure(read, n, n_features, n_words, arrays, bitsets, branch_children, regression)

    tree = Tree(n_features, n_classes, capacity=n, n_category_words=n_words)
    tree.node_count = n
    for name, dtype in NODE_ARRAYS.items():
        getattr(tree, "_" + name)[:n] = arrays[name].astype(dtype)
    tree._value[:n] = value.reshape(n, 1, n_classes)
    tree.category_bitsets = bitsets
    tree.branch_children = branch_children
    return tree


def _check_structure(read, n, n_features, n_words, arrays, bitsets, branch_children, regression):
    """Every index in range, every node but the root with exactly one parent, and children
    numbered after their parent (so the walk always ends: no cycle)."""
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


def _check_node_numbers(read, arrays, regression):
    """Impurities and weighted sizes are finite and non-negative, node sizes too; but a
    regression impurity may be +inf (a variance beyond float64's range: targets 1e200
    apart)."""
    for name in ("impurity", "weighted_n_node_samples", "n_node_samples"):
        values = arrays[name]
        finite = np.isfinite(values)
        if regression and name == "impurity":
            finite |= values == np.inf
        bad = np.flatnonzero(~finite | (values < 0))
        if bad.size:
            read.fail(f"node {bad[0]} has {name} {values[bad[0]]}, expected a finite number >= 0")


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
    """Values are finite; a classifier's are class probabilities (each >= 0, summing to 1;
    a node of zero weight may hold zeros)."""
    value = tree.value[:, 0, :]
    bad = np.flatnonzero(~np.all(np.isfinite(value), axis=1))
    if bad.size:
        read.fail(f"node {bad[0]} has value {value[bad[0]].tolist()}, expected finite numbers")
    if not is_classification:
        return
    total = value.sum(axis=1)
    bad = np.flatnonzero(np.any(value < 0, axis=1) | ((np.abs(total - 1) > 1e-9) & (total != 0)))
    if bad.size:
        read.fail(
            f"node {bad[0]} has value {value[bad[0]].tolist()}: class probabilities must be "
            ">= 0 and sum to 1"
        )
