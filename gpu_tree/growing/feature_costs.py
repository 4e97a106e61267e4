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


def select_by_cost(search, mask, column_costs, params, layout: StatsLayout) -> ChosenSplits:
    """The best split of each node among its features' best splits, by the
    cost-sensitive measure (criteria.log2_cost_measure) of their gains and costs.

    ``search(feature_mask)`` is the node's split search (select_splits) restricted to
    ``feature_mask``; ``mask`` (n_nodes, n_columns) bool, or None: the columns each
    node may use; ``column_costs`` (n_nodes, n_columns): their features' costs;
    ``params``: the fit's GrowthParams.

    Each column is searched alone: its best split (threshold, subset or branches) is
    the one of highest gain, since both measures increase with the gain at a fixed
    cost. The gain is the split's score (chosen.score: the impurity decrease, the
    gain ratio or the CART measure) in real units (a regression's targets may be
    scaled, which scales its variance decreases). Measures that rounding cannot tell
    apart tie (a column whose gain, raised by its score's rounding tolerance, measures
    at least the best): the lowest column wins, as in select_splits. A node with no
    allowed split in any column keeps ``has_split`` False.
    """
    n_nodes, n_columns = column_costs.shape
    per_column: list[ChosenSplits | None] = []
    for column in range(n_columns):
        only = np.zeros((n_nodes, n_columns), dtype=bool)
        only[:, column] = True if mask is None else mask[:, column]
        per_column.append(search(only) if only[:, column].any() else None)
    searched = [chosen for chosen in per_column if chosen is not None]
    if not searched:  # no node may use any column
        return search(np.zeros((n_nodes, n_columns), dtype=bool))
    no_split = np.zeros(n_nodes, dtype=bool)
    has_split = np.stack(
        [no_split if chosen is None else chosen.has_split for chosen in per_column], axis=1
    )
    # A column nobody searched: any search's arrays stand in (never chosen).
    per_column = [searched[0] if chosen is None else chosen for chosen in per_column]
    score = np.stack([chosen.score for chosen in per_column], axis=1)
    tolerance = np.stack(
        [_score_rounding(chosen, params.criterion, layout) for chosen in per_column], axis=1
    )
    score = np.where(has_split, score, 0.0)
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
    rows = np.arange(n_nodes)
    fields = {
        name: np.stack([getattr(chosen, name) for chosen in per_column], axis=1)[rows, winner]
        for name in ChosenSplits.__dataclass_fields__
    }
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
    weighted = np.where(chosen.has_split, chosen.score * weight, -np.inf)
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
