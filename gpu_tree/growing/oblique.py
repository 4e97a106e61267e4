"""Growing oblique trees: per node, a hyperplane fitted to the node's rows, kept where it
beats the node's best axis-parallel split.

At each node (nodes are grown level by level):

1. The best axis-parallel split: every feature's values sorted, every midpoint between
   distinct values scored by :func:`gpu_tree.growing.criteria.weighted_split_score` on
   cumulative sums of the rows' statistics (the same formulas as every other tree).
2. Two groups of rows. Classifier: each class goes to the side of that split that holds
   most of its weight (ties: left); should every class land on one side, the class with
   the smallest share on the left goes right alone. Regressor: the rows whose target is
   above the midpoint of the split's two child means against the rest.
3. A direction: the features are standardised on the node's rows (weighted mean and
   standard deviation; constant features get no coefficient), then, with weights scaled
   to sum to 1 (so a weight of 2 is a duplicated row):

   - ``"logistic"``: L2-regularised logistic regression (penalty ``alpha/2 |b|^2``), at
     most ``direction_max_iter`` Newton steps (stopping early once a step is below 1e-10);
   - ``"svm"``: a linear SVM, hinge loss with the same penalty, ``direction_max_iter`` full-batch
     subgradient steps of size 1/(alpha t) (Pegasos), the iterates averaged;
   - ``"perceptron"``: ``direction_max_iter`` batch perceptron steps (the weighted sum of the
     misclassified rows), the iterates averaged;
   - ``"lda"``: Fisher's discriminant, ``(S_w + alpha I)^-1 (mu_1 - mu_0)``, closed form;
   - ``"least_squares"`` (regressor only): ridge regression of the target,
     ``(X'WX + alpha I)^-1 X'W y``, closed form.

   The direction is mapped back to the input's units and scaled so that its largest
   |coefficient| is 1. Every step is deterministic: no random numbers are drawn.
4. The rows are projected (:func:`gpu_tree.model.oblique.project`) and the threshold is
   searched on the projection exactly as on a feature in step 1.
5. The oblique split is kept only where its score exceeds the axis-parallel one by more
   than rounding (:func:`gpu_tree.growing.criteria.score_tolerance`): ties go to the
   axis-parallel split, which is simpler to read.

The arithmetic is written against an array namespace ``xp`` (numpy here) so that a CuPy
path can follow; nodes are fitted one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.criteria import (
    node_impurity,
    score_tolerance,
    weighted_split_score,
)
from gpu_tree.model.oblique import OBLIQUE, TREE_LEAF, TREE_UNDEFINED, ObliqueTree, project

CLASSIFIER_DIRECTIONS = ("logistic", "perceptron", "svm", "lda")
REGRESSOR_DIRECTIONS = ("least_squares", "logistic", "perceptron", "svm", "lda")

# Ridge penalty of every direction fit, on standardised features with weights summing to 1.
DEFAULT_ALPHA = 1e-3
_NEWTON_TOLERANCE = 1e-10


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


# -- threshold search -------------------------------------------------------------------------
def best_thresholds(values, stats, layout, criterion, min_samples_leaf, xp=np):
    """Per column of ``values`` (n, m): the best weighted score and its threshold.

    Rows sorted by value; each position between two distinct values that leaves at least
    ``min_samples_leaf`` rows on either side is a candidate, scored on the cumulative
    statistics (``stats``: (n, n_channels) real statistics per row). The threshold is the
    midpoint (the lower value where the midpoint rounds up to the higher). Ties: the
    lowest threshold. Returns (scores (m,), thresholds (m,)), -inf where no candidate.
    """
    n, m = values.shape
    order = xp.argsort(values, axis=0, kind="stable")
    ordered = xp.take_along_axis(values, order, axis=0)
    cumulative = xp.cumsum(stats[order], axis=0)  # (n, m, C)
    total = cumulative[-1]
    left = cumulative[:-1]
    right = total[None] - left
    scores = weighted_split_score(criterion, layout, left, right, total[None], xp)
    position = xp.arange(1, n)[:, None]  # rows on the left
    valid = (
        (ordered[1:] > ordered[:-1])
        & (position >= min_samples_leaf)
        & (n - position >= min_samples_leaf)
    )
    scores = xp.where(valid, scores, -xp.inf)
    if n < 2:
        return xp.full(m, -xp.inf), xp.zeros(m)
    best = xp.argmax(scores, axis=0)
    columns = xp.arange(m)
    low, high = ordered[best, columns], ordered[best + 1, columns]
    threshold = low / 2.0 + high / 2.0
    threshold = xp.where((threshold >= high) | ~xp.isfinite(threshold), low, threshold)
    return scores[best, columns], threshold


# -- directions -------------------------------------------------------------------------------
def _standardise(X, weight, xp):
    mean = weight @ X
    centred = X - mean
    scale = xp.sqrt(weight @ (centred * centred))
    active = scale > 1e-12 * (xp.abs(mean) + 1.0)
    return centred[:, active] / scale[active], scale, active


def _augmented(Xs, xp):
    return xp.concatenate([Xs, xp.ones((Xs.shape[0], 1))], axis=1)


def _logistic(Xs, z, weight, max_iter, alpha, xp):
    A = _augmented(Xs, xp)
    d = A.shape[1]
    penalty = xp.full(d, alpha)
    penalty[-1] = 0.0
    beta = xp.zeros(d)
    for _ in range(max_iter):
        eta = xp.clip(A @ beta, -30.0, 30.0)
        p = 1.0 / (1.0 + xp.exp(-eta))
        gradient = A.T @ (weight * (p - z)) + penalty * beta
        curvature = weight * p * (1.0 - p)
        hessian = (A * curvature[:, None]).T @ A + xp.diag(penalty + 1e-12)
        step = xp.linalg.solve(hessian, gradient)
        beta = beta - step
        if float(xp.max(xp.abs(step))) < _NEWTON_TOLERANCE:
            break
    return beta[:-1]


def _averaged_subgradient(Xs, z, weight, max_iter, alpha, xp, hinge):
    A = _augmented(Xs, xp)
    sign = 2.0 * z - 1.0
    beta = xp.zeros(A.shape[1])
    average = xp.zeros(A.shape[1])
    for t in range(1, max_iter + 1):
        margin = sign * (A @ beta)
        if hinge:  # Pegasos on the full batch: (alpha/2)|b|^2 + sum w max(0, 1 - s a.b)
            violated = margin < 1.0
            step = 1.0 / (alpha * t)
            gradient = alpha * beta - A.T @ (weight * sign * violated)
            gradient[-1] -= alpha * beta[-1]  # no penalty on the intercept
            beta = beta - step * gradient
        else:  # batch perceptron: add the misclassified rows
            wrong = margin <= 0.0
            beta = beta + A.T @ (weight * sign * wrong)
        average = average + (beta - average) / t
    return average[:-1]


def _lda(Xs, z, weight, alpha, xp):
    directions = []
    scatter = xp.zeros((Xs.shape[1], Xs.shape[1]))
    for group in (0.0, 1.0):
        w = weight * (z == group)
        total = xp.sum(w)
        mean = (w @ Xs) / total if float(total) > 0 else xp.zeros(Xs.shape[1])
        centred = Xs - mean
        scatter = scatter + (centred * w[:, None]).T @ centred
        directions.append(mean)
    return xp.linalg.solve(scatter + alpha * xp.eye(Xs.shape[1]), directions[1] - directions[0])


def _least_squares(Xs, y, weight, alpha, xp):
    target = y - weight @ y
    gram = (Xs * weight[:, None]).T @ Xs
    return xp.linalg.solve(gram + alpha * xp.eye(Xs.shape[1]), Xs.T @ (weight * target))


def fit_direction(X, target, weight, direction, max_iter, alpha=DEFAULT_ALPHA, xp=np):
    """A hyperplane's normal for the rows ``X`` (n, d), in the input's units, scaled so that
    its largest |coefficient| is 1; None where the rows give none (constant features, a
    fit that went non-finite). ``target``: the 0/1 group of each row (a real target for
    ``"least_squares"``); ``weight``: the rows' weights."""
    weight = weight / xp.sum(weight)
    Xs, scale, active = _standardise(X, weight, xp)
    if Xs.shape[1] == 0:
        return None
    if direction == "logistic":
        b = _logistic(Xs, target, weight, max_iter, alpha, xp)
    elif direction == "svm":
        b = _averaged_subgradient(Xs, target, weight, max_iter, alpha, xp, hinge=True)
    elif direction == "perceptron":
        b = _averaged_subgradient(Xs, target, weight, max_iter, alpha, xp, hinge=False)
    elif direction == "lda":
        b = _lda(Xs, target, weight, alpha, xp)
    elif direction == "least_squares":
        b = _least_squares(Xs, target, weight, alpha, xp)
    else:
        raise ValueError(f"unknown direction {direction!r}")
    coefficients = xp.zeros(X.shape[1])
    coefficients[active] = b / scale[active]
    largest = float(xp.max(xp.abs(coefficients)))
    if not np.isfinite(largest) or largest == 0.0:
        return None
    return coefficients / largest


# -- one node ---------------------------------------------------------------------------------
def _groups(stats, y, layout, left_mask, xp):
    """0/1 group of each row of a node, from its best axis-parallel split (``left_mask``):
    see the module docstring. None where there are not two groups."""
    left_stats = xp.sum(stats[left_mask], axis=0)
    total = xp.sum(stats, axis=0)
    if layout.is_classification:
        present = total > 0
        share = xp.where(present, left_stats / xp.where(present, total, 1.0), 1.0)
        right_classes = present & (share < 0.5)
        if not bool(xp.any(right_classes)):
            right_classes = present & (share == xp.min(xp.where(present, share, 2.0)))
        if bool(xp.all(right_classes[present])):
            return None
        return right_classes[y].astype(xp.float64)
    right_stats = total - left_stats
    means = [s[1] / s[0] for s in (left_stats, right_stats)]
    z = (y > (means[0] + means[1]) / 2.0).astype(xp.float64)
    if float(xp.min(z)) == float(xp.max(z)):
        return None
    return z


def best_split(X, y, weight, stats, layout, params: ObliqueParams, xp=np) -> Split | None:
    """The split of a node's rows: its best axis-parallel split, replaced by an oblique
    one where that scores higher (beyond rounding). None where no split is allowed."""
    scores, thresholds = best_thresholds(
        X, stats, layout, params.criterion, params.min_samples_leaf, xp
    )
    feature = int(xp.argmax(scores))
    axis = Split(float(scores[feature]), float(thresholds[feature]), feature)
    if not np.isfinite(axis.score):
        return None
    left = X[:, feature] <= axis.threshold
    target = _groups(stats, y, layout, left, xp)
    if params.direction == "least_squares":
        target = y
    if target is None:
        return axis
    coefficients = fit_direction(
        X, target, weight, params.direction, params.max_iter, params.alpha, xp
    )
    if coefficients is None:
        return axis
    projection = project(X, coefficients, xp)
    score, threshold = best_thresholds(
        projection[:, None], stats, layout, params.criterion, params.min_samples_leaf, xp
    )
    parent = xp.sum(stats, axis=0)
    tolerance = float(score_tolerance(params.criterion, layout, parent, xp.asarray(axis.score), xp))
    if float(score[0]) > axis.score + tolerance:
        return Split(float(score[0]), float(threshold[0]), OBLIQUE, coefficients)
    return axis


# -- the tree ---------------------------------------------------------------------------------
def _row_stats(y, weight, layout, xp):
    if layout.is_classification:
        stats = xp.zeros((y.size, layout.n_classes))
        stats[xp.arange(y.size), y] = weight
        return stats
    return xp.stack([weight, weight * y], axis=1)


def _node_impurity(stats, y, weight, layout, criterion, xp):
    if layout.is_classification:
        return float(node_impurity(criterion, layout, xp.sum(stats, axis=0), xp))
    mean = (weight @ y) / xp.sum(weight)
    return float((weight @ ((y - mean) ** 2)) / xp.sum(weight))


def grow_oblique_tree(X, y, weight, params: ObliqueParams, xp=np) -> ObliqueTree:
    """Grow an oblique tree on float64 rows ``X`` (n, d) with no missing values, targets
    ``y`` (class codes 0..n_classes-1, or real numbers) and positive weights."""
    if params.is_classification:
        layout = StatsLayout(True, params.n_classes, has_count_channel=False)
    centre = 0.0
    if not params.is_classification:
        layout = StatsLayout(False, 0, has_count_channel=False)
        centre = float((weight @ y) / xp.sum(weight))
        y = y - centre  # centred: better conditioned sums
    stats = _row_stats(y, weight, layout, xp)
    n_features = X.shape[1]
    nodes = []  # dicts, in id order
    level = [(xp.arange(X.shape[0]), 0)]
    while level:
        next_level = []
        first_child = len(nodes) + len(level)  # the next level's first id
        for rows, depth in level:
            node_stats = stats[rows]
            node_y, node_w = y[rows], weight[rows]
            total = xp.sum(node_stats, axis=0)
            impurity = _node_impurity(node_stats, node_y, node_w, layout, params.criterion, xp)
            w = float(layout.weight(total, xp))
            if layout.is_classification:
                value = total / w
            else:
                value = xp.asarray([centre + float(total[1]) / w])
            node = {
                "rows": rows,
                "value": value,
                "impurity": impurity,
                "n": int(rows.size),
                "w": w,
                "split": None,
            }
            nodes.append(node)
            can_split = (
                (params.max_depth is None or depth < params.max_depth)
                and rows.size >= params.min_samples_split
                and rows.size >= 2 * params.min_samples_leaf
                and impurity > 0.0
            )
            if not can_split:
                continue
            split = best_split(X[rows], node_y, node_w, node_stats, layout, params, xp)
            if split is None:
                continue
            node["split"] = split
            if split.feature == OBLIQUE:
                values = project(X[rows], split.coefficients, xp)
            else:
                values = X[rows, split.feature]
            left = values <= split.threshold
            child = first_child + len(next_level)
            node["children"] = (child, child + 1)
            next_level += [(rows[left], depth + 1), (rows[~left], depth + 1)]
        level = next_level
    return _as_tree(nodes, n_features, xp)


def _as_tree(nodes, n_features, xp):
    n = len(nodes)
    left = np.full(n, TREE_LEAF, dtype=np.int64)
    right = np.full(n, TREE_LEAF, dtype=np.int64)
    feature = np.full(n, TREE_UNDEFINED, dtype=np.int64)
    threshold = np.full(n, float(TREE_UNDEFINED))
    coefficients = np.zeros((n, n_features))
    for k, node in enumerate(nodes):
        split = node["split"]
        if split is None:
            continue
        left[k], right[k] = node["children"]
        feature[k] = split.feature
        threshold[k] = split.threshold
        if split.feature == OBLIQUE:
            coefficients[k] = np.asarray(split.coefficients)
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
