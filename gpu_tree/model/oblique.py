"""Oblique (multivariate) trees: nodes that split on a linear combination of features.

:class:`ObliqueTree` is the fitted tree of ``ObliqueDecisionTreeClassifier`` and
``ObliqueDecisionTreeRegressor`` (gpu_tree.estimators.oblique). It is a struct of arrays
named as scikit-learn names them, one entry per node:

- ``children_left``, ``children_right``: child ids, :data:`TREE_LEAF` (-1) at a leaf.
  Children always have larger ids than their parent (nodes are numbered level by level).
- ``feature``: the feature of an axis-parallel split, :data:`OBLIQUE` (-3) at an oblique
  split, :data:`TREE_UNDEFINED` (-2) at a leaf.
- ``threshold``: rows go left where their value (axis-parallel: ``x[feature]``;
  oblique: ``coefficients[node] @ x``, see :func:`project`) is ``<= threshold``.
- ``coefficients`` (node_count, n_features): an oblique node's hyperplane, in the units of
  the input features, scaled so that its largest |coefficient| is 1; zero elsewhere.
- ``value`` (node_count, 1, n_outputs): weighted class fractions (classifier) or the
  weighted mean target (regressor), as scikit-learn stores them.
- ``impurity``, ``n_node_samples``, ``weighted_n_node_samples``.

Prediction walks the tree node by node on numpy arrays (:meth:`ObliqueTree.apply`); the
projection of a row is computed by :func:`project` in training and prediction alike, with
the same operations in the same order, so a row reaches the leaf its training twin did.

Text and DOT: :meth:`ObliqueTree.export_text` and :meth:`ObliqueTree.export_graphviz`
(reached through :func:`gpu_tree.export_text` and :func:`gpu_tree.export_graphviz`) print
an oblique condition as ``0.31·x1 − 0.72·x4 ≤ 1.20``: terms whose |coefficient| is below
:data:`COEFFICIENT_TOLERANCE` times the node's largest are left out of the text (not of
the model).

Model files: :data:`OBLIQUE_CODEC` writes and reads the fields of an oblique estimator's
model file (gpu_tree.model.file_format's writing and reading dispatch to it); the reader
checks every invariant prediction relies on.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.data.validation import check_feature_names, check_X
from gpu_tree.model import packed_arrays
from gpu_tree.model.file_format.labels import read_class_labels

TREE_LEAF = -1
TREE_UNDEFINED = -2
OBLIQUE = -3  # ``feature`` of an oblique node

# How far a classifier node's class fractions may sum from 1 (a fit's: a few ulps, 5.6e-16
# with 300 classes and weights spread over e^+-40).
FRACTION_SUM_TOLERANCE = 1e-9

# Terms with |coefficient| below this fraction of the node's largest are left out of the
# text and DOT exports (the model keeps and uses them).
COEFFICIENT_TOLERANCE = 1e-3

_MINUS = "\u2212"
_DOT = "\u00b7"
_LE = "\u2264"


def project(X, coefficients, xp=np):
    """``X @ coefficients`` as float64, one feature at a time in feature order.

    Elementwise operations only: a row's projection does not depend on which other rows
    are projected with it (a BLAS product's blocking could change its rounding), so
    training and prediction send every row the same way. Zero coefficients are skipped.
    """
    X = xp.asarray(X, dtype=xp.float64)
    out = xp.zeros(X.shape[0], dtype=xp.float64)
    for j in np.flatnonzero(np.asarray(coefficients) != 0).tolist():
        out = out + X[:, j] * float(coefficients[j])
    return out


def refuse_missing_values(X):
    """Refuse an X with NaN, naming its first: oblique trees take no missing values (the
    estimators' fit and predict, and a model file's saved model, check X so)."""
    if np.isnan(X).any():
        rows, cols = np.nonzero(np.isnan(X))
        raise ValueError(
            f"Input X contains NaN (column {cols[0]}, row {rows[0]}): oblique trees do not "
            "take missing values; impute them first"
        )


def checked_oblique_X(model, X):
    """``X`` checked as a fitted oblique tree (``model``) predicts it: its feature names
    and shape against the fit's, no missing value; as float64."""
    check_feature_names(model, X)
    X = check_X(X, n_features_expected=model.n_features_in_, estimator_name=type(model).__name__)
    refuse_missing_values(X)
    return X.astype(np.float64)


class ObliqueTree:
    """A fitted oblique tree (see the module docstring for its arrays)."""

    def __init__(
        self,
        *,
        children_left,
        children_right,
        feature,
        threshold,
        coefficients,
        value,
        impurity,
        n_node_samples,
        weighted_n_node_samples,
    ):
        self.children_left = np.asarray(children_left, dtype=np.int64)
        self.children_right = np.asarray(children_right, dtype=np.int64)
        self.feature = np.asarray(feature, dtype=np.int64)
        self.threshold = np.asarray(threshold, dtype=np.float64)
        self.coefficients = np.asarray(coefficients, dtype=np.float64)
        self.value = np.asarray(value, dtype=np.float64)
        self.impurity = np.asarray(impurity, dtype=np.float64)
        self.n_node_samples = np.asarray(n_node_samples, dtype=np.int64)
        self.weighted_n_node_samples = np.asarray(weighted_n_node_samples, dtype=np.float64)

    # -- shape ----------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        return int(self.children_left.size)

    @property
    def n_features(self) -> int:
        return int(self.coefficients.shape[1])

    @property
    def max_n_classes(self) -> int:
        """Output columns of ``value``: the classes (classifier) or 1 (regressor)."""
        return int(self.value.shape[2])

    @property
    def n_classes(self) -> np.ndarray:
        """scikit-learn's ``Tree.n_classes``: ``array([max_n_classes])`` (intp)."""
        return np.full(self.n_outputs, self.max_n_classes, dtype=np.intp)

    @property
    def n_outputs(self) -> int:
        return 1

    @property
    def is_oblique(self) -> np.ndarray:
        return self.feature == OBLIQUE

    @property
    def n_oblique(self) -> int:
        """How many nodes split obliquely."""
        return int(np.count_nonzero(self.is_oblique))

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.children_left == TREE_LEAF))

    def node_depths(self) -> np.ndarray:
        depth = np.zeros(self.node_count, dtype=np.int64)
        for node in range(self.node_count):  # children come after their parent
            if self.children_left[node] != TREE_LEAF:
                depth[self.children_left[node]] = depth[node] + 1
                depth[self.children_right[node]] = depth[node] + 1
        return depth

    @property
    def max_depth(self) -> int:
        return int(self.node_depths().max()) if self.node_count else 0

    # -- prediction -----------------------------------------------------------------------
    def goes_left(self, node: int, X) -> np.ndarray:
        """Whether each row of ``X`` (float64) goes left at internal ``node``."""
        if self.feature[node] == OBLIQUE:
            values = project(X, self.coefficients[node])
        else:
            values = X[:, self.feature[node]]
        return values <= self.threshold[node]

    def _walk(self, X, record_path=False):
        X = np.asarray(X, dtype=np.float64)
        leaves = np.zeros(X.shape[0], dtype=np.int64)
        path = []
        stack = [(0, np.arange(X.shape[0]))]
        while stack:
            node, rows = stack.pop()
            if record_path:
                path.append((np.full(rows.size, node, dtype=np.int64), rows))
            if self.children_left[node] == TREE_LEAF:
                leaves[rows] = node
                continue
            left = self.goes_left(node, X[rows])
            stack.append((int(self.children_right[node]), rows[~left]))
            stack.append((int(self.children_left[node]), rows[left]))
        return leaves, path

    def apply(self, X) -> np.ndarray:
        """The leaf each row of ``X`` (n_samples, n_features) reaches."""
        return self._walk(X)[0]

    def predict(self, X) -> np.ndarray:
        """``value`` of each row's leaf: (n_samples, n_outputs)."""
        return self.value[self.apply(X), 0]

    def decision_path_csr(self, X):
        """(indptr, indices) of the CSR matrix of the nodes each row passes through."""
        n = np.asarray(X).shape[0]
        _, path = self._walk(X, record_path=True)
        nodes = np.concatenate([p[0] for p in path]) if path else np.zeros(0, np.int64)
        rows = np.concatenate([p[1] for p in path]) if path else np.zeros(0, np.int64)
        order = np.lexsort((nodes, rows))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return indptr, nodes[order]

    # -- export ---------------------------------------------------------------------------
    def condition(self, node: int, names, decimals: int = 2) -> str:
        """The left branch's condition of internal ``node`` as text."""
        threshold = _signed(self.threshold[node], decimals)
        if self.feature[node] != OBLIQUE:
            return f"{names[self.feature[node]]} <= {threshold}"
        return f"{linear_form(self.coefficients[node], names, decimals)} {_LE} {threshold}"

    def _right_condition(self, node, names, decimals):
        threshold = _signed(self.threshold[node], decimals)
        if self.feature[node] != OBLIQUE:
            return f"{names[self.feature[node]]} >  {threshold}"
        return f"{linear_form(self.coefficients[node], names, decimals)} > {threshold}"

    def _leaf_text(self, node, class_names, decimals, show_weights):
        value = self.value[node, 0]
        if class_names is None:  # a regressor
            return f"value: [{value[0]:.{decimals}f}]"
        text = f"class: {class_names[int(np.argmax(value))]}"
        if show_weights:
            weights = value * self.weighted_n_node_samples[node]
            text = f"weights: [{', '.join(f'{w:.{decimals}f}' for w in weights)}] " + text
        return text

    def export_text(
        self,
        *,
        feature_names=None,
        class_names=None,
        max_depth=10,
        decimals=2,
        show_weights=False,
        spacing=3,
    ) -> str:
        """The tree as text, laid out as scikit-learn's ``export_text``: axis-parallel
        splits read ``x1 <= 0.50``, oblique ones ``0.31·x1 − 0.72·x4 ≤ 1.20``.
        ``class_names``: None for a regressor (leaves show ``value: [...]``)."""
        names = feature_names_or_default(feature_names, self.n_features)
        depths = self.node_depths()
        lines = []
        bar = "|" + " " * spacing
        stack = [(0, None)]
        while stack:
            node, condition = stack.pop()
            depth = int(depths[node])
            if condition is not None:
                lines.append(bar * (depth - 1) + "|" + "-" * spacing + " " + condition)
            prefix = bar * depth + "|" + "-" * spacing + " "
            if self.children_left[node] == TREE_LEAF:
                lines.append(prefix + self._leaf_text(node, class_names, decimals, show_weights))
                continue
            if depth > max_depth:
                below = int(self._subtree_depth(node))
                lines.append(prefix + f"truncated branch of depth {below}")
                continue
            stack.append(
                (int(self.children_right[node]), self._right_condition(node, names, decimals))
            )
            stack.append((int(self.children_left[node]), self.condition(node, names, decimals)))
        return "\n".join(lines) + "\n"

    def _subtree_depth(self, node):
        deepest, stack = 0, [(node, 0)]
        while stack:
            n, d = stack.pop()
            deepest = max(deepest, d)
            if self.children_left[n] != TREE_LEAF:
                stack += [(int(self.children_left[n]), d + 1), (int(self.children_right[n]), d + 1)]
        return deepest

    def export_graphviz(
        self, *, feature_names=None, class_names=None, precision=3, criterion="impurity"
    ) -> str:
        """The tree in Graphviz's DOT language: each box shows its left condition (oblique
        ones as ``0.31·x1 − 0.72·x4 ≤ 1.20``), the impurity, the samples and the value;
        edges read True (left) and False."""
        names = feature_names_or_default(feature_names, self.n_features)
        lines = ["digraph Tree {", 'node [shape=box, fontname="helvetica"] ;']
        for node in range(self.node_count):
            label = []
            if self.children_left[node] != TREE_LEAF:
                label.append(self.condition(node, names, precision))
            label.append(f"{criterion} = {self.impurity[node]:.{precision}f}")
            label.append(f"samples = {int(self.n_node_samples[node])}")
            values = ", ".join(f"{v:.{precision}f}" for v in self.value[node, 0])
            label.append(f"value = [{values}]")
            if class_names is not None:
                label.append(f"class = {class_names[int(np.argmax(self.value[node, 0]))]}")
            text = "\\n".join(s.replace("\\", "\\\\").replace('"', '\\"') for s in label)
            lines.append(f'{node} [label="{text}"] ;')
        for node in range(self.node_count):
            if self.children_left[node] == TREE_LEAF:
                continue
            for child, answer in (
                (self.children_left[node], "True"),
                (self.children_right[node], "False"),
            ):
                head = f" [labeldistance=2.5, labelangle={45 if answer == 'True' else -45}, "
                edge = f"{node} -> {int(child)}"
                lines.append(edge + (head + f'headlabel="{answer}"] ;' if node == 0 else " ;"))
        lines.append("}")
        return "\n".join(lines) + "\n"


def feature_names_or_default(feature_names, n_features):
    if feature_names is None:
        return [f"x{j}" for j in range(n_features)]
    names = [str(n) for n in feature_names]
    if len(names) != n_features:
        raise ValueError(
            f"feature_names has {len(names)} names, but the tree has {n_features} features"
        )
    return names


def _signed(x, decimals):
    text = f"{x:.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", _MINUS)


def _magnitude(c, decimals):
    text = f"{abs(c):.{decimals}f}"
    if float(text) == 0:  # too small for the fixed notation: keep it visible
        text = f"{abs(c):.{max(decimals, 1)}e}"
    return text


def linear_form(coefficients, names, decimals=2) -> str:
    """``0.31·x1 − 0.72·x4``: the terms of ``coefficients`` whose |value| is at least
    :data:`COEFFICIENT_TOLERANCE` times the largest, in feature order."""
    coefficients = np.asarray(coefficients, dtype=np.float64)
    largest = np.max(np.abs(coefficients)) if coefficients.size else 0.0
    terms = []
    for j in np.flatnonzero(np.abs(coefficients) >= COEFFICIENT_TOLERANCE * largest).tolist():
        c = float(coefficients[j])
        if c == 0:
            continue
        term = f"{_magnitude(c, decimals)}{_DOT}{names[j]}"
        if not terms:
            terms.append(term if c > 0 else _MINUS + term)
        else:
            terms.append(("+ " if c > 0 else f"{_MINUS} ") + term)
    return " ".join(terms) if terms else "0"


# -- model files ----------------------------------------------------------------------------
_INT_ARRAYS = ("children_left", "children_right", "feature", "n_node_samples")
_FLOAT_ARRAYS = ("threshold", "impurity", "weighted_n_node_samples")


def _finite_floats(array, packed):
    array = np.asarray(array, dtype=np.float64).ravel()
    if not np.all(np.isfinite(array)):
        raise ValueError("cannot save an oblique tree with non-finite numbers")
    return packed_arrays.pack_floats(array) if packed else array.tolist()


class ObliqueCodec:
    """The fields of an oblique estimator's model file, after the common header
    (``format``, ``format_version``, ``estimator``, ``params``...)::

        "n_features_in": 4, "feature_names_in": [...] | null,
        "classes": {"dtype": "<i8", "values": [...]} | null,
        "oblique_tree": {"node_count": 7, "n_features": 4, "n_outputs": 2,
                         "children_left": [...], "children_right": [...],
                         "feature": [...], "threshold": [...],
                         "coefficients": [... node_count * n_features ...],
                         "value": [... node_count * n_outputs ...], "impurity": [...],
                         "n_node_samples": [...], "weighted_n_node_samples": [...]}

    Each array is a JSON list or a packed array (gpu_tree.model.packed_arrays). Every
    number is finite (a tree with a non-finite one is refused when saved)."""

    def document(self, estimator, packed: bool) -> dict:
        """The fields after the header; arrays packed (see gpu_tree.model.packed_arrays)
        or, with ``packed=False``, JSON lists."""
        tree = estimator.tree_
        names = getattr(estimator, "feature_names_in_", None)
        classes = getattr(estimator, "classes_", None)
        doc = {
            "node_count": tree.node_count,
            "n_features": tree.n_features,
            "n_outputs": tree.max_n_classes,
        }
        for name in _INT_ARRAYS:
            doc[name] = packed_arrays.integers(getattr(tree, name), packed)
        for name in (*_FLOAT_ARRAYS, "coefficients", "value"):
            doc[name] = _finite_floats(getattr(tree, name), packed)
        return {
            "n_features_in": int(estimator.n_features_in_),
            "feature_names_in": None if names is None else [str(n) for n in names],
            "classes": None
            if classes is None
            else {
                "dtype": "object" if classes.dtype.kind == "O" else classes.dtype.str,
                "values": classes.tolist(),
            },
            "oblique_tree": doc,
        }

    def read(self, read, document, estimator):
        """Fill ``estimator`` (made with the saved parameters) from ``document``; ``read``:
        the file format's field reader, whose ``fail`` raises a ValueError naming the file."""
        regression = not getattr(type(estimator), "_is_classification", True)
        n_features = read.field(document, "n_features_in", int)
        doc = read.field(document, "oblique_tree", dict)
        n = read.field(doc, "node_count", int, "the tree")
        if n < 1:
            read.fail(f"node_count is {n}, expected at least 1")
        if read.field(doc, "n_features", int, "the tree") != n_features or n_features < 1:
            read.fail(f"the tree's n_features does not match n_features_in ({n_features})")
        n_outputs = read.field(doc, "n_outputs", int, "the tree")
        arrays = {name: read.ints(doc, name, n) for name in _INT_ARRAYS}
        arrays.update({name: read.floats(doc, name, n) for name in _FLOAT_ARRAYS})
        coefficients = read.floats(doc, "coefficients", n * n_features).reshape(n, n_features)
        if n_outputs < 1:
            read.fail(f"n_outputs is {n_outputs}, expected at least 1")
        value = read.floats(doc, "value", n * n_outputs).reshape(n, 1, n_outputs)
        tree = ObliqueTree(coefficients=coefficients, value=value, **arrays)
        problem = tree_problem(tree, regression)
        if problem:
            read.fail(problem)
        names = read.feature_names(document, n_features)
        if names is not None:
            estimator.feature_names_in_ = names
        if regression:
            if n_outputs != 1:
                read.fail(f"a regressor's tree must have 1 output column, not {n_outputs}")
        else:
            labels = read_class_labels(read, read.field(document, "classes", dict))
            if labels.ndim != 1 or labels.size != n_outputs:
                read.fail(f"{labels.size} class labels, but the tree has {n_outputs} classes")
            estimator.classes_ = labels
            estimator.n_classes_ = labels.size
        estimator.tree_ = tree
        estimator.n_features_in_ = n_features
        estimator.n_outputs_ = 1
        return estimator


OBLIQUE_CODEC = ObliqueCodec()


def tree_problem(tree: ObliqueTree, regression: bool) -> str | None:
    """What is wrong with ``tree`` for prediction (None: nothing): the shapes, finite
    numbers, child ids (each child after its parent, each node but the root reached
    exactly once, leaves without children), features in range, oblique nodes with a
    hyperplane, classifier values that are class fractions summing to 1."""
    n, d = tree.node_count, tree.n_features
    left, right, feature = tree.children_left, tree.children_right, tree.feature
    for name in ("threshold", "coefficients", "value", "impurity", "weighted_n_node_samples"):
        if not np.all(np.isfinite(getattr(tree, name))):
            return f"array {name!r} holds a value that is not finite"
    leaf = left == TREE_LEAF
    if np.any(leaf != (right == TREE_LEAF)):
        return "a node has one child only"
    ids = np.arange(n)
    for name, child in (("children_left", left), ("children_right", right)):
        bad = ~leaf & ((child <= ids) | (child >= n))
        if bad.any():
            k = int(np.argmax(bad))
            return f"{name}[{k}] is {child[k]}: a child must come after its node, below {n}"
    reached = np.bincount(np.concatenate([left[~leaf], right[~leaf]]), minlength=n)
    if reached[0] != 0 or np.any(reached[1:] != 1):
        return "the child ids do not form a tree (a node reached twice or never)"
    if np.any(feature[leaf] != TREE_UNDEFINED):
        return f"a leaf's feature must be {TREE_UNDEFINED}"
    internal = feature[~leaf]
    if np.any((internal != OBLIQUE) & ((internal < 0) | (internal >= d))):
        return f"an internal node's feature is neither {OBLIQUE} (oblique) nor in [0, {d})"
    oblique = feature == OBLIQUE
    if np.any(np.all(tree.coefficients[oblique] == 0, axis=1)):
        return "an oblique node has no non-zero coefficient"
    if np.any(tree.coefficients[~oblique] != 0):
        return "a node that is not oblique has non-zero coefficients"
    if np.any(tree.n_node_samples < 1) or np.any(tree.weighted_n_node_samples < 0):
        return "node sample counts must be positive"
    if np.any(tree.impurity < 0):
        return "an impurity is negative"
    if not regression:
        if np.any(tree.value < 0) or np.any(tree.value > 1):
            return "a classifier's node values must be class fractions in [0, 1]"
        fractions = tree.value[:, 0, :]
        bad = np.flatnonzero(np.abs(fractions.sum(axis=1) - 1) > FRACTION_SUM_TOLERANCE)
        if bad.size:
            k = int(bad[0])
            return (
                f"node {k} has value {fractions[k].tolist()!r:.200} (weighted_n_node_samples "
                f"{float(tree.weighted_n_node_samples[k])!r}): a classifier's class fractions must "
                f"sum to 1 (within {FRACTION_SUM_TOLERANCE})"
            )
    return None
