"""Stage 4 of a fit: the tree grown on the searched data, and pruned.

The whole pipeline, as the tree runs it::

    settings = parameters.check_settings(params, is_classification)   # no data
    device = parameters.resolve_training_device(settings)
    prepared = inputs.prepare(X, y, sample_weight, settings, task, *device)
    inputs.check_fit_support(prepared, settings)
    fitted = fit_tree(prepared, settings, device.name, monotonic_cst)  # bins, grows, prunes
    attributes = inputs.input_attributes(prepared)                     # n_features_in_, ...

The forest runs the same first stages, bins once (``binning.searched_data``) and grows
batches of trees from that with :func:`growth_params`; the distributed fit bins and sums
on its workers and grows with :func:`growth_params` too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpu_tree.backends.cuda import cuda_array_module
from gpu_tree.backends.factory import make_backend
from gpu_tree.data.stats import words_for
from gpu_tree.data.validation import values_in
from gpu_tree.growing.grower import Grower, GrowthParams
from gpu_tree.kernels import python_mode
from gpu_tree.model.pruning import cost_complexity_prune
from gpu_tree.training.binning import SearchedData, searched_data
from gpu_tree.training.checks import check_monotonic_cst
from gpu_tree.training.inputs import Categories, PreparedInput, with_positive_weight
from gpu_tree.training.parameters import Settings, SizeParams
from gpu_tree.training.targets import CodedTargets, row_data
from gpu_tree.utils.fit_stats import SETUP, FitCounters, counting
from gpu_tree.utils.phase_timer import PhaseTimer
from gpu_tree.utils.progress import logger as progress_logger
from gpu_tree.utils.progress import step


def small_fit_in_python(X, n_trees: int = 1):
    """Where a fit of ``n_trees`` trees on X is small, the context in which its kernels
    that have no compiled code yet run as Python rather than compile (a first fit in a
    fresh environment: kernels/python_mode.py)."""
    values = values_in(X)
    return python_mode.as_python_when_small(None if values is None else values * max(n_trees, 1))


def monotonic_constraints(settings: Settings, n_features, coded: CodedTargets, categories):
    """The checked ``monotonic_cst`` of a fit (None: no feature constrained)."""
    search = categories.search
    return check_monotonic_cst(
        settings.given.get("monotonic_cst"),
        n_features,
        None if coded.classes is None else coded.n_classes,
        None if search is None else search.features,
    )


def growth_params(
    settings: Settings,
    sizes: SizeParams,
    total_weight,
    categories: Categories,
    monotonic_cst,
    random_thresholds: bool,
) -> GrowthParams:
    """The grower's parameters; ``total_weight()`` gives the rows' total weight (asked
    only for ``min_weight_fraction_leaf``)."""
    n_categories = categories.maps.n_categories()
    max_depth = settings.max_depth
    return GrowthParams(
        criterion=settings.criterion,
        max_depth=np.iinfo(np.int64).max if max_depth is None else max_depth,
        min_samples_split=sizes.min_samples_split,
        min_samples_leaf=sizes.min_samples_leaf,
        min_weight_leaf=(
            settings.min_weight_fraction_leaf * total_weight()
            if settings.min_weight_fraction_leaf
            else 0.0
        ),
        min_purity=settings.min_purity,
        min_impurity_decrease=settings.min_impurity_decrease,
        max_leaf_nodes=settings.max_leaf_nodes,
        max_features=sizes.max_features,
        # The per-node feature draws are keyed by this seed (growing/random_draws.py).
        seed=int(settings.rng.integers(np.iinfo(np.int64).max)),
        categorical=categories.search,
        n_category_words=words_for(max(1, int(n_categories.max(initial=0)))),
        feature_costs=sizes.feature_costs,
        cost_criterion=settings.cost_criterion,
        cost_weight=settings.cost_weight,
        random_thresholds=random_thresholds,
        monotonic_cst=monotonic_cst,
    )


def pruned(tree, ccp_alpha: float):
    """``tree`` after minimal cost-complexity pruning at ``ccp_alpha`` (0: unchanged)."""
    if ccp_alpha <= 0.0:
        return tree
    start, leaves = time.perf_counter(), tree.n_leaves
    tree = cost_complexity_prune(tree, ccp_alpha)
    progress_logger.info(
        "pruned (ccp_alpha=%g): %d -> %d leaves (%.2f s)",
        ccp_alpha,
        leaves,
        tree.n_leaves,
        time.perf_counter() - start,
        extra=step("pruning", 1, 1, done=True),
    )
    return tree


@dataclass(frozen=True)
class FittedTree:
    """A grown (and pruned) tree, what its search read, and the fit's statistics."""

    tree: object
    searched: SearchedData
    fit_stats: dict
    setup_stats: dict


def fit_tree(prepared: PreparedInput, settings: Settings, device, monotonic_cst) -> FittedTree:
    """Grow one tree on the prepared input: its rows of positive weight binned (or kept,
    for exact search), a backend on ``device``, the grower, and pruning."""
    prepared = with_positive_weight(prepared)
    sizes, categories, n_features = prepared.sizes, prepared.categories, prepared.n_features
    rows = row_data(prepared.coded, prepared.targets, prepared.weight)
    counters = FitCounters(device)
    timer = PhaseTimer(cuda_array_module() if device == "cuda" else np)
    with counting(counters):
        start = time.perf_counter()
        searched = searched_data(prepared, settings, device, rows.layout)
        backend = make_backend(
            searched.data, rows, device=device, splitter=settings.splitter, timer=timer
        )
        seconds = {"binning": searched.seconds} if searched.bin_mapper is not None else {}
        seconds["backend"] = time.perf_counter() - start - searched.seconds
        del prepared  # on the GPU only the bin codes are needed from here on
        params = growth_params(
            settings,
            sizes,
            rows.total_weight,
            categories,
            monotonic_cst,
            random_thresholds=settings.splitter == "random",
        )
        tree = Grower(backend, rows.layout, params, n_features, timer=timer).grow()
    setup = {**counters.at(SETUP), "seconds": seconds}
    return FittedTree(pruned(tree, settings.ccp_alpha), searched, timer.fit_stats(counters), setup)
