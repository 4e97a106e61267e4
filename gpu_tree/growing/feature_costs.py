"""Splits chosen by a cost-sensitive measure of their gain and their feature's cost, and
split scores between the fit's units and real ones.

With ``feature_costs``, a node splits on the feature of the highest cost-sensitive
measure (criteria.log2_cost_measure: Tan and Schlimmer's, or Nunez's) of its best split's
gain and its cost, not on the feature of the highest gain.
"""

from __future__ import annotations

import numpy as np

from gpu_tree.data.stats import StatsLayout
from gpu_tree.growing.criteria import (
    LINEAR_SCORE_CRITERIA,
    branch_split_info,
    log2_cost_measure,
    poisson_split,
    score_tolerance,
    split_info,
)
from gpu_tree.growing.splitting import ChosenSplits
from gpu_tree.model.tree import MULTIWAY


def real_score(score, criterion: str, layout: StatsLayout):
    """Regression split scores (impurity decreases) in real units from the fit's (its
    targets scaled by 2**-t: a variance scales by 2**-2t, a Poisson deviance and an
    absolute error by 2**-t)."""
    if criterion in LINEAR_SCORE_CRITERIA:
        return np.ldexp(score, layout.target_exponent)
    return layout.target_variance(score)


def fit_score(score: float, criterion: str, layout: StatsLayout) -> float:
    """A real impurity decrease in the fit's units (:func:`real_score`'s inverse)."""
    if criterion in LINEAR_SCORE_CRITERIA:
        return float(np.ldexp(score, -layout.target_exponent))
    return layout.fit_variance(score)


def each_column_alone(mask, n_nodes: int, n_columns: int):
    """A search of each column of each node alone, as one search of ``n_nodes *
    n_columns`` nodes: ``(node, alone)``, ``node`` (n_nodes * n_columns,) the node each
    searched one stands for (node ``i``'s column ``c`` at ``i * n_columns + c``) and
    ``alone`` its feature mask, that column only (none where ``mask``, (n_nodes,
    n_columns) bool or None: every column, leaves it out)."""
    node = np.repeat(np.arange(n_nodes), n_columns)
    alone = np.tile(np.eye(n_columns, dtype=bool), (n_nodes, 1))
    if mask is not None:
        alone &= np.asarray(mask, dtype=bool)[node]
    return node, alone


def select_by_cost(each_column: ChosenSplits, column_costs, params, layout: StatsLayout):
    """The best split of each node among its columns' best splits, by the
    cost-sensitive measure (criteria.log2_cost_measure) of their gains and costs.

    ``each_column``: each node's best split on each column alone (the split search with
    that column only in the node's feature mask), node ``i``'s column ``c`` at ``i *
    n_columns + c`` (:func:`each_column_alone`; ``splitting.select_splits_each_column``);
    ``column_costs`` (n_nodes, n_columns): their features' costs; ``params``: the fit's
    GrowthParams.

    A column's best split (threshold, subset or branches) is the one of highest gain,
    since both measures increase with the gain at a fixed cost. The gain is the split's
    score (chosen.score: the impurity decrease, the gain ratio or the CART measure) in
    real units (a regression's targets may be scaled, which scales its variance
    decreases). Measures that rounding cannot tell apart tie (a column whose gain,
    raised by its score's rounding tolerance, measures at least the best): the lowest
    column wins, as in select_splits. A node with no allowed split in any column keeps
    ``has_split`` False. Every node and column is measured at once, with numpy.
    """
    n_nodes, n_columns = column_costs.shape
    shape = (n_nodes, n_columns)
    has_split = each_column.has_split.reshape(shape)
    score = np.where(has_split, each_column.score.reshape(shape), 0.0)
    tolerance = _score_rounding(each_column, params.criterion, layout).reshape(shape)
    if not layout.is_classification:  # the real variance (or deviance) decreases
        score = real_score(score, params.criterion, layout)
        tolerance = real_score(tolerance, params.criterion, layout)
    measure = log2_cost_measure(params.cost_criterion, score, column_costs, params.cost_weight)
    highest = log2_cost_measure(
        params.cost_criterion, score + tolerance, column_costs, params.cost_weight
    )
    best = np.max(np.where(has_split, measure, -np.inf), axis=1, keepdims=True)
    tied = has_split & (highest >= best)
    winner = np.argmax(tied, axis=1)  # the lowest tied column (0 where none)
    at = np.arange(n_nodes) * n_columns + winner
    fields = {name: getattr(each_column, name)[at] for name in ChosenSplits.__dataclass_fields__}
    fields["has_split"] = found = tied.any(axis=1)
    fields["score"] = np.where(found, fields["score"], -np.inf)
    return ChosenSplits(**fields)


def _score_rounding(chosen: ChosenSplits, criterion: str, layout: StatsLayout) -> np.ndarray:
    """How far each node's chosen score (per unit weight, the fit's units) may be from
    its exact value by rounding: criteria.score_tolerance of its weighted score, per
    unit weight (0 where there is no split)."""
    parent = layout.real(chosen.left_stats + chosen.right_stats)
    weight = layout.weight(parent)
    positive = np.where(weight > 0, weight, 1.0)
    # -inf where there is no split (its score is -inf and its statistics may be zeros:
    # multiplied, a NaN).
    score = np.where(chosen.has_split, chosen.score, 0.0)
    weighted = np.where(chosen.has_split, score * weight, -np.inf)
    divisor = None
    if criterion == "gain_ratio":
        divisor = _split_information(chosen, parent, layout)
    elif criterion == "poisson":  # the chosen split's term scale
        children = np.stack([layout.real(chosen.left_stats), layout.real(chosen.right_stats)], 1)
        divisor = poisson_split(layout, children, parent)[1]
    tolerance = score_tolerance(criterion, layout, parent, weighted, np, divisor)
    return np.where(chosen.has_split, tolerance / positive, 0.0)


def _split_information(chosen: ChosenSplits, parent, layout: StatsLayout) -> np.ndarray:
    """gain_ratio: the split information of each node's chosen split (its score's
    divisor): of its two sides, or of a multiway split's branches."""
    weight = layout.weight(parent)
    left_fraction = layout.weight(layout.real(chosen.left_stats)) / np.where(
        weight > 0, weight, 1.0
    )
    information = split_info(left_fraction)
    for k in np.flatnonzero(chosen.has_split & (chosen.kind == MULTIWAY)):
        branches = layout.weight(layout.real(chosen.branch_stats[k]))
        information[k] = branch_split_info(branches)
    return information
