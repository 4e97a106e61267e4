"""Reading a model file: its JSON parsed (:func:`read_model_document`), then every field
checked before an estimator is built from it (:func:`model_from_document`): a damaged or
foreign file gives a ``ValueError`` naming what is wrong, never a wrong model, and no
field sizes an allocation before it is checked against the rest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gpu_tree.model.file_format.checks import (
    check_categorical_nodes,
    check_structure,
    check_values,
)
from gpu_tree.model.file_format.fields import FORMAT_NAME, INT64_MAX, READABLE_VERSIONS, Reader
from gpu_tree.model.file_format.labels import read_class_labels
from gpu_tree.model.file_format.registry import ESTIMATORS
from gpu_tree.model.tree import NODE_ARRAYS, Tree


def load_model(path):
    """The estimator saved in ``path``; a ``ValueError`` says what is wrong with a bad file.

    Every field is checked before the estimator is built: a damaged, truncated or foreign
    file, or one of a format version this gpu_tree does not read, gives a ``ValueError``
    naming the file and what is wrong, never a wrong model.

    Parameters
    ----------
    path : str or path-like
        A model file written by an estimator's ``save`` (JSON, UTF-8).

    Returns
    -------
    estimator
        The saved tree (decision, extra or oblique) or forest (random forest or extra
        trees), fitted, of the class that was saved and with its parameters: it
        predicts as the saved estimator did.

    Raises
    ------
    ValueError
        The file is not a gpu_tree model, or a field of it is wrong.
    OSError
        The file cannot be read (``FileNotFoundError`` where it is missing).
    """
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
    read = Reader(source, None)
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
        check_values(tree_read(k), tree, not regression)
    maps = _read_categories(read, document, n_features, fitted.get("feature_names_in_"))
    for k, tree in enumerate(trees):
        check_categorical_nodes(tree_read(k), tree, maps.mask)
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
    if not 0 <= seed <= INT64_MAX:
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
    if not 1 <= n_samples <= INT64_MAX:
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


def _read_tree(read, doc, regression: bool) -> Tree:
    n = read.field(doc, "node_count", int, "the tree")
    n_features = read.field(doc, "n_features", int, "the tree")
    n_classes = read.field(doc, "n_classes", int, "the tree")
    n_words = read.field(doc, "n_category_words", int, "the tree")
    if n < 1 or n_features < 1 or n_classes < 1 or n_words < 1:
        read.fail("node_count, n_features, n_classes and n_category_words must be positive")
    if max(n, n_features, n_classes, n_words) > INT64_MAX:
        read.fail("node_count, n_features, n_classes and n_category_words must fit 64 bits")
    arrays = {}
    for name, dtype in NODE_ARRAYS.items():
        reader = read.floats if dtype == np.float64 else read.ints
        arrays[name] = reader(doc, name, n)
    n_outputs = read.field(doc, "n_outputs", int, "the tree") if "n_outputs" in doc else 1
    if not 1 <= n_outputs <= INT64_MAX:
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
    check_structure(read, n, n_features, n_words, arrays, bitsets, branch_children, regression)

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
