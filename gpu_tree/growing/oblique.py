"""Growing oblique trees: per node, a hyperplane fitted to the node's rows, kept where it
beats the node's best axis-parallel split.

Nodes are grown level by level, and every step below runs for all the nodes of a level
at once (see "Batched levels"):

1. The best axis-parallel split: every feature's values sorted, every midpoint between
   distinct values scored by :func:`gpu_tree.growing.criteria.weighted_split_score` on
   cumulative sums of the rows' statistics (the same formulas as every other tree): an
   exact search, as ``splitter="exact"`` does for the axis-parallel trees.
2. Two groups of rows. Classifier: each class goes to the side of that split that holds
   most of its weight (ties: left); should every class land on one side, the class with
   the smallest share on the left goes right alone. Regressor: the rows whose target is
   above the midpoint of the split's two child means against the rest.
3. A direction: the features are standardised on the node's rows (weighted mean and
   standard deviation; constant features get no coefficient), then, with weights scaled
   to sum to 1 (so a weight of 2 is a duplicated row):

   - ``"logistic"``: L2-regularised logistic regression (penalty ``alpha/2 |b|^2``), at
     most ``direction_max_iter`` Newton steps (stopping once a step is below 1e-10);
   - ``"svm"``: a linear SVM with the squared hinge loss (L2-SVM) and the same penalty,
     ``sum w max(0, 1 - s a.b)^2 + alpha/2 |b|^2``, solved by at most
     ``direction_max_iter`` generalised Newton steps (the Hessian of the rows inside the
     margin). Its first step, from b = 0, is the ridge regression of the ±1 labels (the
     direction of Fisher's discriminant): the SVM is warm-started from lda's direction;
   - ``"perceptron"``: ``direction_max_iter`` batch perceptron steps (the weighted sum of the
     misclassified rows), the iterates averaged;
   - ``"lda"``: Fisher's discriminant, ``(S_w + alpha I)^-1 (mu_1 - mu_0)``, closed form;
   - ``"least_squares"`` (regressor only): ridge regression of the target,
     ``(X'WX + alpha I)^-1 X'W y``, closed form.

   The direction is mapped back to the input's units and scaled so that its largest
   |coefficient| is 1. Every step is deterministic: no random numbers are drawn.
4. The rows are projected (as :func:`gpu_tree.model.oblique.project` does, bit for bit)
   and the threshold is searched on the projection exactly as on a feature in step 1.
5. The oblique split is kept only where its score exceeds the axis-parallel one by more
   than rounding (:func:`gpu_tree.growing.criteria.score_tolerance`): ties go to the
   axis-parallel split, which is simpler to read.

Batched levels
--------------
A level's rows are held as one index array grouped by node (``rows``, with the nodes'
row counts on the host). For the work above, the level's nodes are padded into batches:
a node of n rows goes to the batch of length P, the next power of two >= n (at least
16), so that padding at most doubles the memory; a batch is a stack of arrays
``(B, P, ...)`` whose padding rows have weight zero, statistics zero and, when sorted,
the value +inf (they sort last and are never candidates). Every reduction is then one
of: the B Gram matrices ``A'WA``, the weighted sums of the rows ``w'A``, the rows'
products with a vector ``Ab``, a ``cumsum`` along P or a batched ``xp.linalg.solve`` on
``(B, k, k)``. On the CPU the first three are compiled kernels (``kernels/cpu/oblique.py``)
that sum in a fixed order: rows in row order (a Gram entry as numpy's
``einsum("bpi,bpj->bij")`` sums it, bit for bit), columns in column order, rows of
weight zero skipped (they add nothing); not BLAS, whose sums change with its thread
count and whose threads stalled on a busy machine. On a GPU they are CuPy's ``einsum``
and ``matmul``, which round their own way. The threshold search's sort, its gathers and
its ``cumsum`` are one compiled pass on the CPU, and there the features' orders are not
sorted per node but read from each feature's rows sorted once at the root and kept in
order level by level (:class:`_PresortedFeatures`): the same orders, ties in row order.

Newton steps stop per node once its step is below tolerance, and the nodes still
running are gathered so that later steps cost only theirs. One node fitted alone
(:func:`fit_direction`, :func:`best_thresholds`) is the batch of one node with no
padding: there is one implementation. A node's result does not depend on the other
nodes of its batch; it may differ from the node fitted alone in the last bits of the
directions (numpy's pairwise sums, of the weights for one, block by P), never in the
sorted order or the cumulative sums, which padding at the end leaves unchanged.

The arithmetic is written against an array namespace ``xp``: numpy on the CPU, CuPy on
the GPU (``device="cuda"``). There the level's arrays stay on the device and only the
per-node results (row counts, the best feature, thresholds, coefficients: a few numbers
per node) come back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.criteria import (
    CLASSIFICATION_CRITERIA,
    node_impurity,
    score_tolerance,
    weighted_split_score,
)
from gpu_tree.kernels import python_mode
from gpu_tree.kernels.cpu import oblique as cpu_oblique
from gpu_tree.model.oblique import OBLIQUE, TREE_LEAF, TREE_UNDEFINED, ObliqueTree
from gpu_tree.utils.device_copies import to_host

CLASSIFIER_DIRECTIONS = ("logistic", "perceptron", "svm", "lda")
REGRESSOR_DIRECTIONS = ("least_squares", "logistic", "perceptron", "svm", "lda")
# Poisson's scores need the targets' centre, which the oblique search does not carry.
OBLIQUE_CRITERIA = (*CLASSIFICATION_CRITERIA, "squared_error")

# Ridge penalty of every direction fit, on standardised features with weights summing to 1.
DEFAULT_ALPHA = 1e-3
_NEWTON_TOLERANCE = 1e-10
_MIN_PADDED = 16


@dataclass(frozen=True)
class ObliqueParams:
    direction: str
    criterion: str
    is_classification: bool
    n_classes: int  # 0 for regression
    max_depth: int | None
    min_samples_split: int
    min_samples_leaf: int
    max_iter: int
    alpha: float = DEFAULT_ALPHA


@dataclass
class Split:
    score: float  # weighted score (criteria.weighted_split_score), -inf: none
    threshold: float
    feature: int  # OBLIQUE for a hyperplane
    coefficients: object = None  # (n_features,) for an oblique split


def host_array(array) -> np.ndarray:
    """A numpy array of a numpy or CuPy array (or of a numpy scalar, which the reductions
    of numpy return where CuPy returns a 0-d array)."""
    return np.asarray(to_host(array))


# -- threshold search -------------------------------------------------------------------------
def batched_best_thresholds(
    values, stats, n_rows, layout, criterion, min_samples_leaf, xp=np, order=None
):
    """Per node of a batch and column of ``values`` (B, P, m): the best weighted score and
    its threshold. ``stats`` (B, P, n_channels): the rows' real statistics, zero on the
    padding; ``n_rows`` (B,): each node's rows (the first n_rows of its P; the rest are
    padding); ``order`` (B, P, m), on the CPU only: each column's rows already in the
    order of the sort below (:class:`_PresortedFeatures`), or None.

    Rows sorted by value; each position between two distinct values that leaves at least
    ``min_samples_leaf`` rows on either side is a candidate, scored on the cumulative
    statistics. The threshold is the midpoint (the lower value where the midpoint rounds
    up to the higher). Ties: the lowest threshold. Returns (scores (B, m), thresholds
    (B, m)), -inf where no candidate.
    """
    B, P, m = values.shape
    if P < 2:
        return xp.full((B, m), -xp.inf), xp.zeros((B, m))
    n = n_rows[:, None, None]
    ordered, cumulative = _sorted_cumulative_stats(values, stats, n_rows, xp, order)
    total = cumulative[:, -1:]  # (B, 1, m, C): the padding adds zeros
    left = cumulative[:, :-1]
    scores = weighted_split_score(criterion, layout, left, total - left, total, xp)
    position = xp.arange(1, P)[None, :, None]  # rows on the left
    valid = (
        (ordered[:, 1:] > ordered[:, :-1])
        & (position >= min_samples_leaf)
        & (n - position >= min_samples_leaf)
    )
    scores = xp.where(valid, scores, -xp.inf)
    best = xp.argmax(scores, axis=1)[:, None, :]  # (B, 1, m)
    low = xp.take_along_axis(ordered, best, axis=1)[:, 0]
    high = xp.take_along_axis(ordered, best + 1, axis=1)[:, 0]
    threshold = low / 2.0 + high / 2.0
    threshold = xp.where((threshold >= high) | ~xp.isfinite(threshold), low, threshold)
    threshold = xp.where(xp.isfinite(threshold), threshold, 0.0)
    return xp.take_along_axis(scores, best, axis=1)[:, 0], threshold


def _sorted_cumulative_stats(values, stats, n_rows, xp, order=None):
    """(B, P, m) values, (B, P, C) stats -> each column's values sorted (the padding as
    +inf, last; ties in row order) and the statistics' cumulative sums in that order,
    (B, P, m) and (B, P, m, C): on the CPU one compiled pass
    (``kernels/cpu/oblique.py``), the same numbers as the sort, gathers and ``cumsum``
    below."""
    B, P, m = values.shape
    if xp is np:
        ordered = np.empty((B, P, m))
        cumulative = np.empty((B, P, m, stats.shape[2]))
        arguments = (
            np.ascontiguousarray(values, dtype=np.float64),
            np.ascontiguousarray(stats, dtype=np.float64),
            np.ascontiguousarray(n_rows, dtype=np.int64),
        )
        if order is None:
            cpu_oblique.sorted_cumulative_stats(*arguments, ordered, cumulative)
        else:
            cpu_oblique.ordered_cumulative_stats(*arguments, order, ordered, cumulative)
        return ordered, cumulative
    real = xp.arange(P)[None, :, None] < n_rows[:, None, None]
    keyed = xp.where(real, values, xp.inf)
    order = xp.argsort(keyed, axis=1, kind="stable")
    ordered = xp.take_along_axis(keyed, order, axis=1)
    cumulative = xp.cumsum(
        xp.take_along_axis(stats[:, :, None, :], order[..., None], axis=1), axis=1
    )
    return ordered, cumulative


def best_thresholds(values, stats, layout, criterion, min_samples_leaf, xp=np):
    """:func:`batched_best_thresholds` for one node's rows: ``values`` (n, m), ``stats``
    (n, n_channels); returns (scores (m,), thresholds (m,))."""
    n = xp.asarray([values.shape[0]])
    scores, thresholds = batched_best_thresholds(
        values[None], stats[None], n, layout, criterion, min_samples_leaf, xp
    )
    return scores[0], thresholds[0]


# -- directions -------------------------------------------------------------------------------
def _sum_and_gram(A, sum_weight, gram_weight, xp):
    """(B, P, k), (B, P), (B, P) -> (B, k), (B, k, k): w'A and A'WA per node (the weights
    w of ``sum_weight``, W of ``gram_weight``), each entry summed row by row in row order:
    on the CPU in one pass (``kernels/cpu/oblique.py``), the Gram matrices bit for bit as
    numpy's ``einsum`` sums them; a GPU's ``einsum`` and ``matmul`` round their own way
    (the module docstring)."""
    if xp is np:
        k = A.shape[2]
        sums = np.empty((A.shape[0], k))
        gram = np.empty((A.shape[0], k, k))
        cpu_oblique.weighted_sums_and_gram(
            np.ascontiguousarray(A),
            np.ascontiguousarray(sum_weight),
            np.ascontiguousarray(gram_weight),
            sums,
            gram,
        )
        return sums, gram
    return _weighted_sum(sum_weight, A, xp), xp.einsum(
        "bpi,bpj->bij", A * gram_weight[..., None], A
    )


def _gram(A, weight, xp):
    """(B, P, k), (B, P) -> (B, k, k): A'WA per node (:func:`_sum_and_gram`)."""
    return _sum_and_gram(A, weight, weight, xp)[1]


def _weighted_sum(weight, X, xp):
    """(B, P), (B, P, d) -> (B, d): each node's weighted sum of its rows, in row order on
    the CPU (``kernels/cpu/oblique.py``). A BLAS product's order depends on its threads:
    OpenBLAS gave other bits with two threads than with one, and ran four times slower
    with two on a busy two-core machine."""
    if xp is np:
        out = np.empty((X.shape[0], X.shape[2]))
        cpu_oblique.weighted_sums(np.ascontiguousarray(weight), np.ascontiguousarray(X), out)
        return out
    return (weight[:, None, :] @ X)[:, 0]


def _row_dots(A, b, xp):
    """(B, P, k), (B, k) -> (B, P): each row's product with its node's vector, summed in
    column order on the CPU (``kernels/cpu/oblique.py``)."""
    if xp is np:
        out = np.empty(A.shape[:2])
        cpu_oblique.row_dots(np.ascontiguousarray(A), np.ascontiguousarray(b), out)
        return out
    return (A @ b[..., None])[..., 0]


def _standardise(X, weight, xp):
    mean = _weighted_sum(weight, X, xp)
    centred = X - mean[:, None]
    scale = xp.sqrt(_weighted_sum(weight, centred * centred, xp))
    active = scale > 1e-12 * (xp.abs(mean) + 1.0)
    safe = xp.where(active, scale, 1.0)
    return xp.where(active[:, None], centred / safe[:, None], 0.0), scale, active


def _augmented(Xs, xp):
    return xp.concatenate([Xs, xp.ones(Xs.shape[:2] + (1,))], axis=2)


def _solve(matrix, vector, xp):
    return xp.linalg.solve(matrix, vector[..., None])[..., 0]


def _newton(A, z, weight, max_iter, alpha, xp, loss):
    """Batched Newton steps on ``loss`` ("logistic" or "squared_hinge") with the ridge
    penalty ``alpha/2 |b|^2`` (the intercept, A's last column, unpenalised). A node stops
    once its step is below tolerance; the nodes still running are gathered together
    whenever some stop, so that the later steps cost only theirs (a node's steps do not
    depend on the others)."""
    B, _, k = A.shape
    penalty = xp.full(k, alpha)
    penalty[-1] = 0.0
    ridge = xp.diag(penalty + 1e-12)[None]
    beta = xp.zeros((B, k))
    live = xp.arange(B)  # the nodes still running, and their arrays
    b, A, z, weight = beta, A, z, weight
    sign = 2.0 * z - 1.0
    for _ in range(max_iter):
        eta = _row_dots(A, b, xp)
        if loss == "logistic":
            p = 1.0 / (1.0 + xp.exp(-xp.clip(eta, -30.0, 30.0)))
            residual = weight * (p - z)
            curvature = weight * p * (1.0 - p)
        else:  # sum w max(0, 1 - s eta)^2
            slack = xp.maximum(1.0 - sign * eta, 0.0)
            residual = -2.0 * weight * sign * slack
            curvature = 2.0 * weight * (slack > 0.0)
        gradient, hessian = _sum_and_gram(A, residual, curvature, xp)
        gradient = gradient + penalty * b
        hessian = hessian + ridge
        step = _solve(hessian, gradient, xp)
        b = b - step
        beta[live] = b
        running = xp.max(xp.abs(step), axis=1) >= _NEWTON_TOLERANCE
        n_running = int(xp.sum(running))
        if n_running == 0:
            break
        if n_running < live.shape[0]:
            live, b, A, z, weight, sign = (a[running] for a in (live, b, A, z, weight, sign))
    return beta[..., :-1]


def _perceptron(A, z, weight, max_iter, xp):
    sign = 2.0 * z - 1.0
    beta = xp.zeros((A.shape[0], A.shape[2]))
    average = xp.zeros_like(beta)
    for t in range(1, max_iter + 1):
        margin = sign * _row_dots(A, beta, xp)
        beta = beta + _weighted_sum(weight * sign * (margin <= 0.0), A, xp)
        average = average + (beta - average) / t
    return average[..., :-1]


def _lda(Xs, z, weight, alpha, xp):
    d = Xs.shape[2]
    scatter = xp.zeros((Xs.shape[0], d, d))
    means = []
    for group in (0.0, 1.0):
        w = weight * (z == group)
        total = xp.sum(w, axis=1)
        mean = _weighted_sum(w, Xs, xp) / xp.where(total > 0, total, 1.0)[:, None]
        centred = Xs - mean[:, None]
        scatter = scatter + _gram(centred, w, xp)
        means.append(mean)
    return _solve(scatter + alpha * xp.eye(d)[None], means[1] - means[0], xp)


def _least_squares(Xs, y, weight, alpha, xp):
    target = y - xp.sum(weight * y, axis=1)[:, None]
    gram = _gram(Xs, weight, xp)
    return _solve(
        gram + alpha * xp.eye(Xs.shape[2])[None], _weighted_sum(weight * target, Xs, xp), xp
    )


def batched_fit_direction(X, target, weight, direction, max_iter, alpha=DEFAULT_ALPHA, xp=np):
    """Hyperplane normals for a batch of nodes: ``X`` (B, P, d), ``target`` (B, P: the 0/1
    group of each row, a real target for ``"least_squares"``), ``weight`` (B, P; zero on
    padding rows). Returns (coefficients (B, d), in the input's units, scaled so that the
    largest |coefficient| is 1; ok (B,): False where the rows give no direction (constant
    features, a fit that went non-finite), coefficients zero there)."""
    total = xp.sum(weight, axis=1)
    weight = weight / xp.where(total > 0, total, 1.0)[:, None]
    Xs, scale, active = _standardise(X, weight, xp)
    if direction in ("logistic", "svm"):
        loss = "logistic" if direction == "logistic" else "squared_hinge"
        b = _newton(_augmented(Xs, xp), target, weight, max_iter, alpha, xp, loss)
    elif direction == "perceptron":
        b = _perceptron(_augmented(Xs, xp), target, weight, max_iter, xp)
    elif direction == "lda":
        b = _lda(Xs, target, weight, alpha, xp)
    elif direction == "least_squares":
        b = _least_squares(Xs, target, weight, alpha, xp)
    else:
        raise ValueError(f"unknown direction {direction!r}")
    coefficients = xp.where(active, b / xp.where(active, scale, 1.0), 0.0)
    largest = xp.max(xp.abs(coefficients), axis=1)
    ok = xp.isfinite(largest) & (largest > 0.0) & xp.any(active, axis=1)
    coefficients = xp.where(ok[:, None], coefficients / xp.where(ok, largest, 1.0)[:, None], 0.0)
    return coefficients, ok


def fit_direction(X, target, weight, direction, max_iter, alpha=DEFAULT_ALPHA, xp=np):
    """:func:`batched_fit_direction` for one node's rows ``X`` (n, d): its coefficients
    (d,), or None where the rows give none."""
    coefficients, ok = batched_fit_direction(
        X[None], target[None], weight[None], direction, max_iter, alpha, xp
    )
    return coefficients[0] if bool(ok[0]) else None


def batched_project(X, coefficients, xp=np):
    """(B, P, d) rows, (B, d) coefficients -> (B, P) projections, bit for bit as
    :func:`gpu_tree.model.oblique.project` computes them (feature by feature, in order; a
    zero coefficient adds +0.0, which leaves every sum as it was). On the CPU that is
    :func:`_row_dots`: its zero coefficients add ±0 to the rows' finite values, which
    leaves every sum as it was too."""
    if xp is np:
        return _row_dots(X, coefficients, xp)
    out = xp.zeros(X.shape[:2])
    for j in range(X.shape[2]):
        c = coefficients[:, j : j + 1]
        out = out + xp.where(c != 0.0, X[..., j] * c, 0.0)
    return out


# -- a batch of nodes -------------------------------------------------------------------------
def _groups(stats, y, left, n_rows, layout, xp):
    """(B, P) 0/1 group of each row of each node from its best axis-parallel split
    (``left``: (B, P) rows on its left), and (B,) whether a node has two groups: see the
    module docstring."""
    left_stats = xp.sum(stats * left[..., None], axis=1)
    total = xp.sum(stats, axis=1)
    if layout.is_classification:
        present = total > 0
        share = xp.where(present, left_stats / xp.where(present, total, 1.0), 1.0)
        right = present & (share < 0.5)
        smallest = xp.min(xp.where(present, share, 2.0), axis=1, keepdims=True)
        none = ~xp.any(right, axis=1, keepdims=True)
        right = xp.where(none, present & (share == smallest), right)
        two = ~xp.all(right | ~present, axis=1)
        return xp.take_along_axis(right, y, axis=1).astype(xp.float64), two
    right_stats = total - left_stats
    means = [s[:, 1] / s[:, 0] for s in (left_stats, right_stats)]
    z = (y > ((means[0] + means[1]) / 2.0)[:, None]).astype(xp.float64)
    real = xp.arange(y.shape[1])[None, :] < n_rows[:, None]
    high = xp.max(xp.where(real, z, -1.0), axis=1)
    low = xp.min(xp.where(real, z, 2.0), axis=1)
    return z, high != low


def _split_batch(X, y, weight, stats, n_rows, layout, params: ObliqueParams, xp, order=None):
    """The splits of a batch of nodes (see the module docstring): host arrays feature (B,)
    (-1: no split allowed, OBLIQUE: a hyperplane), threshold (B,), coefficients (B, d),
    and the device array (B, P) of the rows that go left. ``order``: the features' sorted
    orders (:class:`_PresortedFeatures`), or None."""
    scores, thresholds = batched_best_thresholds(
        X, stats, n_rows, layout, params.criterion, params.min_samples_leaf, xp, order
    )
    feature = xp.argmax(scores, axis=1)
    axis_score = xp.take_along_axis(scores, feature[:, None], axis=1)[:, 0]
    axis_threshold = xp.take_along_axis(thresholds, feature[:, None], axis=1)[:, 0]
    splits = xp.isfinite(axis_score)
    values = xp.take_along_axis(X, feature[:, None, None], axis=2)[..., 0]
    left = values <= axis_threshold[:, None]
    target, ok = _groups(stats, y, left, n_rows, layout, xp)
    if params.direction == "least_squares":
        target = y
    coefficients, fitted = batched_fit_direction(
        X, target, weight, params.direction, params.max_iter, params.alpha, xp
    )
    ok = ok & fitted & splits
    projection = batched_project(X, coefficients, xp)
    score, threshold = batched_best_thresholds(
        projection[..., None], stats, n_rows, layout, params.criterion, params.min_samples_leaf, xp
    )
    score, threshold = score[:, 0], threshold[:, 0]
    parent = xp.sum(stats, axis=1)
    safe_axis = xp.where(splits, axis_score, 0.0)
    tolerance = score_tolerance(params.criterion, layout, parent, safe_axis, xp)
    oblique = ok & (score > axis_score + tolerance)
    left = xp.where(oblique[:, None], projection <= threshold[:, None], left)
    feature = xp.where(oblique, OBLIQUE, xp.where(splits, feature, -1))
    threshold = xp.where(oblique, threshold, axis_threshold)
    coefficients = xp.where(oblique[:, None], coefficients, 0.0)
    return host_array(feature), host_array(threshold), host_array(coefficients), left


def best_split(X, y, weight, stats, layout, params: ObliqueParams, xp=np) -> Split | None:
    """The split of one node's rows (the batch of one node): its best axis-parallel
    split, replaced by an oblique one where that scores higher (beyond rounding). None
    where no split is allowed."""
    n = xp.asarray([X.shape[0]])
    feature, threshold, coefficients, _ = _split_batch(
        X[None], y[None], weight[None], stats[None], n, layout, params, xp
    )
    if feature[0] == -1:
        return None
    if feature[0] == OBLIQUE:
        return Split(np.nan, float(threshold[0]), OBLIQUE, coefficients[0])
    return Split(np.nan, float(threshold[0]), int(feature[0]))


def _batches(counts):
    """Host: (node indices, padded length) per batch of a level's nodes."""
    padded = np.maximum(_MIN_PADDED, 1 << np.ceil(np.log2(np.maximum(counts, 1))).astype(np.int64))
    return [(np.flatnonzero(padded == length), int(length)) for length in np.unique(padded)]


class _PresortedFeatures:
    """The CPU's order of every node's rows by each feature, sorted once (``kernels/cpu/
    oblique.py``): each level holds each feature's rows grouped by node as the level's
    ``rows`` are, by increasing value within a node and ties in row order, which is the
    order the threshold search's stable sort gives (a node's rows are in row order), so
    that a batch reads its orders instead of sorting ``d`` columns per node."""

    def __init__(self, X):
        self.sorted_rows = np.ascontiguousarray(np.argsort(X, axis=0, kind="stable").T)
        self.position_in_node = np.empty(X.shape[0], dtype=np.int64)
        self.child_of_row = np.empty(X.shape[0], dtype=np.int64)

    def start_level(self, rows, starts, segment):
        self.position_in_node[rows] = np.arange(rows.shape[0]) - starts[segment]

    def orders(self, starts, n_rows, length):
        """(B, P, d): each feature's order of the batch's nodes (starting at ``starts`` in
        the level's rows, ``n_rows`` each, padded to ``length``)."""
        order = np.empty((n_rows.shape[0], length, self.sorted_rows.shape[0]), dtype=np.int64)
        cpu_oblique.node_orders(
            self.sorted_rows,
            self.position_in_node,
            starts.astype(np.int64),
            n_rows.astype(np.int64),
            order,
        )
        return order

    def next_level(self, rows, child, child_counts):
        """``child``: each of the level's rows' child (its group in the next level), -1 for
        a row whose node is not split; ``child_counts``: rows per child."""
        self.child_of_row[rows] = child
        starts = np.concatenate([[0], np.cumsum(child_counts)[:-1]]).astype(np.int64)
        out = np.empty((self.sorted_rows.shape[0], int(child_counts.sum())), dtype=np.int64)
        cpu_oblique.children_sorted_rows(self.sorted_rows, self.child_of_row, starts, out)
        self.sorted_rows = out


# -- the tree ---------------------------------------------------------------------------------
def _row_stats(y, weight, layout, xp):
    if layout.is_classification:
        return (y[:, None] == xp.arange(layout.n_classes)[None]) * weight[:, None]
    return xp.stack([weight, weight * y], axis=1)


def _segment_sum(values, segment, n_segments, xp):
    """Sum of ``values`` (m, K) per segment id (m,): (n_segments, K), row order."""
    K = values.shape[1]
    key = (segment[:, None] * K + xp.arange(K)[None]).ravel()
    return xp.bincount(key, weights=values.ravel(), minlength=n_segments * K).reshape(-1, K)


def grow_oblique_tree(X, y, weight, params: ObliqueParams, xp=np) -> ObliqueTree:
    """Grow an oblique tree on float64 rows ``X`` (n, d) with no missing values, targets
    ``y`` (class codes 0..n_classes-1, or real numbers) and positive weights. ``xp``:
    the array namespace the level's work runs in (numpy, or CuPy for a GPU): the inputs
    are copied there once; the tree comes back as host arrays.

    On the CPU a small fit whose kernels have no compiled code yet runs them as Python
    (``kernels/python_mode.py``: the same tree) instead of compiling them, about 5 s in a
    fresh environment. Its size is counted as rows times (features + 1) squared, the
    Gram matrices' terms per Newton step, that run as Python at a microsecond each."""
    values = X.shape[0] * (X.shape[1] + 1) ** 2 if xp is np else None
    with python_mode.as_python_when_small(values):
        return _grow_oblique_tree(X, y, weight, params, xp)


def _grow_oblique_tree(X, y, weight, params: ObliqueParams, xp) -> ObliqueTree:
    X = xp.asarray(X, dtype=xp.float64)
    weight = xp.asarray(weight, dtype=xp.float64)
    if params.is_classification:
        layout = StatsLayout(True, params.n_classes, has_count_channel=False)
        y = xp.asarray(y, dtype=xp.int64)
        centre = 0.0
        exponent = 0
    else:
        layout = StatsLayout(False, 0, has_count_channel=False)
        # In units of a power of two near the largest |y|: the squared sums the scores
        # read overflow for targets around 1e155 in their own units (every split then
        # scored NaN and the tree stayed a leaf). The scale is exact: the same splits.
        y = xp.asarray(y, dtype=xp.float64)
        exponent = int(np.frexp(float(xp.max(xp.abs(y))))[1]) if y.size else 0
        y = xp.ldexp(y, -exponent)
        centre = float(xp.sum(weight * y) / xp.sum(weight))
        y = y - centre  # centred: better conditioned sums
    stats = _row_stats(y, weight, layout, xp)
    n_features = X.shape[1]
    nodes = []  # dicts, in id order
    rows = xp.arange(X.shape[0])  # the level's rows, grouped by node
    counts = np.asarray([X.shape[0]])  # host: rows per node of the level
    presorted = _PresortedFeatures(X) if xp is np else None
    depth = 0
    while counts.size:
        S = counts.size
        starts = np.concatenate([[0], np.cumsum(counts)])
        segment = xp.repeat(xp.arange(S), xp.asarray(counts))
        totals = _segment_sum(stats[rows], segment, S, xp)
        w = layout.weight(totals, xp)
        if layout.is_classification:
            impurity = node_impurity(params.criterion, layout, totals, xp)
            values = totals / w[:, None]
        else:
            mean = totals[:, 1] / w
            deviation = y[rows] - mean[segment]
            spread = _segment_sum((weight[rows] * deviation * deviation)[:, None], segment, S, xp)
            impurity = xp.ldexp(spread[:, 0] / w, 2 * exponent)
            values = xp.ldexp(centre + mean, exponent)[:, None]
        impurity, w, values = host_array(impurity), host_array(w), host_array(values)
        split_feature = np.full(S, -1, dtype=np.int64)
        split_threshold = np.zeros(S)
        split_coefficients = np.zeros((S, n_features))
        goes_left = xp.zeros(rows.shape[0], dtype=bool)
        can_split = (
            (params.max_depth is None or depth < params.max_depth)
            & (counts >= params.min_samples_split)
            & (counts >= 2 * params.min_samples_leaf)
            & (impurity > 0.0)
        )
        candidates = np.flatnonzero(can_split)
        if presorted is not None and candidates.size:
            presorted.start_level(rows, starts, segment)
        for members, length in _batches(counts[candidates]):
            members = candidates[members]
            n_rows = xp.asarray(counts[members])
            feature_order = None
            if presorted is not None:
                feature_order = presorted.orders(starts[members], counts[members], length)
            offset = xp.arange(length)[None, :]
            real = offset < n_rows[:, None]
            position = xp.asarray(starts[members])[:, None] + xp.where(real, offset, 0)
            index = rows[position]  # (B, P) rows of X; padding repeats a node's first row
            feature, threshold, coefficients, left = _split_batch(
                X[index],
                y[index],
                xp.where(real, weight[index], 0.0),
                xp.where(real[..., None], stats[index], 0.0),
                n_rows,
                layout,
                params,
                xp,
                feature_order,
            )
            split_feature[members] = feature
            split_threshold[members] = threshold
            split_coefficients[members] = coefficients
            goes_left[position[real]] = left[real]
        first_child = len(nodes) + S
        split = np.flatnonzero(split_feature != -1)
        child_of = np.full(S, -1, dtype=np.int64)
        child_of[split] = np.arange(split.size)
        for k in range(S):
            node = {
                "value": values[k],
                "impurity": float(impurity[k]),
                "n": int(counts[k]),
                "w": float(w[k]),
                "feature": int(split_feature[k]),
            }
            if split_feature[k] != -1:
                node["threshold"] = float(split_threshold[k])
                node["coefficients"] = split_coefficients[k]
                child = first_child + 2 * int(child_of[k])
                node["children"] = (child, child + 1)
            nodes.append(node)
        # The next level: each split node's left rows, then its right rows, in row order.
        parent = xp.asarray(child_of)[segment]
        key = xp.where(parent >= 0, 2 * parent + (~goes_left), 2 * split.size)
        order = xp.argsort(key, kind="stable")
        child_counts = host_array(xp.bincount(key, minlength=2 * split.size + 1))[:-1]
        if presorted is not None:
            presorted.next_level(rows, np.where(key < 2 * split.size, key, -1), child_counts)
        rows = rows[order[: int(child_counts.sum())]]
        counts = child_counts.astype(np.int64)
        depth += 1
    return _as_tree(nodes, n_features)


def _as_tree(nodes, n_features):
    n = len(nodes)
    left = np.full(n, TREE_LEAF, dtype=np.int64)
    right = np.full(n, TREE_LEAF, dtype=np.int64)
    feature = np.full(n, TREE_UNDEFINED, dtype=np.int64)
    threshold = np.full(n, float(TREE_UNDEFINED))
    coefficients = np.zeros((n, n_features))
    for k, node in enumerate(nodes):
        if node["feature"] == -1:
            continue
        left[k], right[k] = node["children"]
        feature[k] = node["feature"]
        threshold[k] = node["threshold"]
        if node["feature"] == OBLIQUE:
            coefficients[k] = node["coefficients"]
    return ObliqueTree(
        children_left=left,
        children_right=right,
        feature=feature,
        threshold=threshold,
        coefficients=coefficients,
        value=np.stack([np.asarray(node["value"]) for node in nodes])[:, None, :],
        impurity=[node["impurity"] for node in nodes],
        n_node_samples=[node["n"] for node in nodes],
        weighted_n_node_samples=[node["w"] for node in nodes],
    )
