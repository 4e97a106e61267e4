"""scikit-learn compatible decision-tree estimators."""

from __future__ import annotations

import inspect
import math
import numbers
import time
from typing import NamedTuple

import numpy as np

from gpu_tree.backends.cuda import (
    apply_on_device,
    check_cuda_support,
    cuda_array_module,
    cuda_status,
    predict_on_device,
)
from gpu_tree.backends.devices import resolve_device
from gpu_tree.backends.rows import RowData
from gpu_tree.data.binning import check_category_counts, check_max_bins, missing_by_feature
from gpu_tree.data.categorical import (
    CATEGORICAL_SPLITS,
    CategoryMaps,
    check_text_of_numbers,
    column_kinds,
    declared_features,
    label_codes,
    resolve_categorical_features,
    warn_id_like,
    with_codes,
)
from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.predict_input import checked_host_X, coded_for_predict
from gpu_tree.data.sparse import canonical_csr, check_sparse_X, densified
from gpu_tree.data.stats import StatsLayout, words_for
from gpu_tree.data.validation import (
    check_classification_labels,
    check_sample_weight,
    check_X,
    check_X_on_device,
    check_y,
    feature_names_of,
    is_device_array,
    is_sparse,
    to_host,
    values_in,
)
from gpu_tree.growing.absolute_error import check_absolute_error_fit
from gpu_tree.growing.backend import (
    EXACT_SPLITTERS,
    HISTOGRAM_SPLITTERS,
    PhaseTimer,
    bin_features,
    make_backend,
)
from gpu_tree.growing.criteria import (
    check_cost_criterion,
    check_criterion,
    check_poisson_targets,
)
from gpu_tree.growing.grower import Grower, GrowthParams
from gpu_tree.growing.splitting import CategoricalSearch
from gpu_tree.kernels import python_mode
from gpu_tree.model.pruning import (
    cost_complexity_path,
    cost_complexity_prune,
    reduced_error_prune,
    validation_errors,
)
from gpu_tree.model.tree import labels_per_output, per_output
from gpu_tree.utils.compat import (
    BaseEstimator,
    Bunch,
    ClassifierMixin,
    RegressorMixin,
    check_fitted,
)
from gpu_tree.utils.fit_stats import SETUP, FitCounters, counting
from gpu_tree.utils.progress import check_verbose, estimator_display, step
from gpu_tree.utils.progress import logger as progress_logger

# "best": scikit-learn's name for exact search; "random": extremely randomised trees' split
SPLITTERS = ("hist", "random", "exact", "best")


def check_int(name, value, low, high=None, allow_none=False):
    """``value`` as an int in [low, high] (None where ``allow_none``); a TypeError for
    another type, a ValueError out of range, each naming the parameter."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be an integer{' or None' if allow_none else ''}, got {value!r}"
        )
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return int(value)


def _check_float(name, value, low, high, low_open=False, high_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if too_low or too_high or math.isnan(value):
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value}")
    return value


def _count_or_fraction(name, value, n_samples, int_low, frac_high, frac_high_open):
    """scikit-learn's int-or-fraction parameters (min_samples_split, min_samples_leaf)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(name, value, int_low)
    fraction = _check_float(name, value, 0.0, frac_high, low_open=True, high_open=frac_high_open)
    return max(int_low, math.ceil(fraction * n_samples))


def _resolve_max_features(max_features, n_features):
    if max_features is None:
        return None
    if isinstance(max_features, str):
        if max_features == "sqrt":
            return max(1, int(math.sqrt(n_features)))
        if max_features == "log2":
            return max(1, int(math.log2(n_features)))
        raise ValueError(
            f"max_features must be None, an int, a float, 'sqrt' or 'log2'; got {max_features!r}"
        )
    if isinstance(max_features, numbers.Integral) and not isinstance(max_features, bool):
        return check_int("max_features", max_features, 1, n_features)
    fraction = _check_float("max_features", max_features, 0.0, 1.0, low_open=True)
    return max(1, int(fraction * n_features))


def check_feature_costs(feature_costs, n_features, cost_criterion=None) -> np.ndarray | None:
    """``feature_costs`` as float64, one finite cost >= 0 per feature (None: no costs); a
    ValueError naming the problem: the wrong length, or the first bad cost's feature.
    Tan and Schlimmer's gain**2 / cost is undefined for a cost of 0: such a cost is
    refused where ``cost_criterion`` (the measure the costs are for) is "tan_schlimmer"."""
    if feature_costs is None:
        return None
    try:
        costs = np.asarray(feature_costs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"feature_costs must be None or numbers, one per feature; got {feature_costs!r}"
        ) from None
    if costs.ndim != 1 or costs.size != n_features:
        raise ValueError(
            f"feature_costs must hold one cost per feature: X has {n_features} features, "
            f"feature_costs has shape {costs.shape}"
        )
    bad = np.flatnonzero(~(np.isfinite(costs) & (costs >= 0)))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"feature_costs[{j}] must be finite and >= 0, got {float(costs[j])}")
    # A path's cost sums its features' costs (prediction_cost, the cost-aware criteria):
    # the costs of all the features together must be finite, or a sum overflows to inf.
    with np.errstate(over="ignore"):
        total = np.cumsum(costs)
    over = np.flatnonzero(~np.isfinite(total))
    if over.size:
        j = int(over[0])
        raise ValueError(
            f"feature_costs[{j}] is {float(costs[j])!r}: the costs of all the features "
            f"together must be finite (at most {np.finfo(np.float64).max:.4g}), as a "
            "prediction's cost sums them; scale the costs down"
        )
    free = np.flatnonzero(costs == 0)
    if cost_criterion == "tan_schlimmer" and free.size:
        j = int(free[0])
        raise ValueError(
            f"feature_costs[{j}] is 0, but cost_criterion='tan_schlimmer' divides by the "
            "cost (gain**2 / cost): give it a positive cost, or use cost_criterion='nunez' "
            "((2**gain - 1) / (cost + 1)**cost_weight), which allows free features"
        )
    return costs


def path_costs(tree, leaves, costs) -> np.ndarray:
    """The cost of reaching each of ``leaves`` (node ids of ``tree``): the sum of the
    ``costs`` of the distinct features tested on its path from the root (a feature
    tested twice is measured once)."""
    n_features = costs.size
    parent = tree.parents()
    node = np.asarray(leaves, dtype=np.int64)
    owner = np.arange(node.size)
    tested = []  # owner * n_features + feature, for each split above each leaf
    while node.size:
        node = parent[node]
        above = node >= 0  # the root's parent is < 0: its leaves' paths are done
        node, owner = node[above], owner[above]
        tested.append(owner * n_features + tree.feature[node])
    pairs = np.unique(np.concatenate(tested)) if tested else np.zeros(0, dtype=np.int64)
    return np.bincount(
        pairs // n_features, weights=costs[pairs % n_features], minlength=len(leaves)
    )


def random_seed(random_state) -> int:
    """A seed for the counter-based draws (growing/random_draws.py) from ``random_state``
    (an int gives the same seed every time; None a fresh one; a numpy RandomState or
    Generator is drawn from)."""
    return int(_random_generator(random_state).integers(np.iinfo(np.int64).max))


def _random_generator(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:  # numpy's own message names no parameter
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return np.random.default_rng(random_state)
    if random_state is None:
        return np.random.default_rng()
    raise ValueError(
        f"random_state must be None, an int or a numpy Generator, got {random_state!r}"
    )


class _Settings(NamedTuple):
    """The checked parameters that do not depend on the data."""

    criterion: str
    max_bins: int
    max_depth: int | None
    max_leaf_nodes: int | None
    min_impurity_decrease: float
    min_weight_fraction_leaf: float
    min_purity: float
    ccp_alpha: float
    rng: np.random.Generator
    cost_criterion: str
    cost_weight: float


class _SizeParams(NamedTuple):
    """The parameters that depend on the numbers of rows and features, resolved."""

    min_samples_split: int
    min_samples_leaf: int
    max_features: int | None
    feature_costs: np.ndarray | None  # float64, one per feature; None: no costs


def small_fit_in_python(X, n_trees: int = 1):
    """Where a fit of ``n_trees`` trees on X is small, the context in which its kernels
    that have no compiled code yet run as Python rather than compile (a first fit in a
    fresh environment: kernels/python_mode.py)."""
    values = values_in(X)
    return python_mode.as_python_when_small(None if values is None else values * max(n_trees, 1))


class _PreparedFit(NamedTuple):
    """The training data, checked and encoded (:meth:`_BaseDecisionTree._prepare_fit`)."""

    X: object  # (n_samples, n_features), categories coded; a GPU array stays there
    targets: np.ndarray  # class codes, or the regression targets
    weight: np.ndarray  # sample weights times class weights
    sizes: _SizeParams
    categorical: CategoricalSearch | None
    feature_names: np.ndarray | None


class _BaseDecisionTree(BaseEstimator):
    """Shared fitting and prediction; subclasses say how targets become statistics."""

    _is_classification = False
    # Whether fit takes a 2-D y of several outputs (multi-output regression).
    _fits_multi_output = False

    # -- fitting: the training pipeline, step by step ------------------------------------
    def _fit(self, X, y, sample_weight=None):
        settings = self._check_params()
        with estimator_display(check_verbose(self.verbose)), small_fit_in_python(X):
            return self._fit_checked(settings, X, y, sample_weight)

    def _fit_checked(self, settings, X, y, sample_weight):
        X, targets, weight, sizes, categorical, feature_names = self._prepare_fit(
            settings, X, y, sample_weight
        )
        if self.splitter == "random" and categorical is not None:
            raise ValueError(
                "splitter='random' draws thresholds of numeric features only; the "
                f"categorical features {categorical.features.tolist()} need splitter='hist' "
                "or 'exact' (or categorical_features=[] to treat their codes as numbers)"
            )
        self._check_criterion_support(settings, categorical)
        X, targets, weight = self._drop_zero_weight_rows(X, targets, weight)
        row_data = self._row_data(targets, weight)
        counters = FitCounters(self.device_)
        timer = PhaseTimer(cuda_array_module() if self.device_ == "cuda" else np)
        setup_seconds = {}
        with counting(counters):
            start = time.perf_counter()
            backend = self._make_backend(
                X, row_data, settings.max_bins, categorical, feature_names, timer, setup_seconds
            )
            binning = setup_seconds.get("binning", 0.0)
            setup_seconds["backend"] = time.perf_counter() - start - binning
            del X  # on the GPU only the bin codes are needed from here on
            params = self._growth_params(settings, sizes, row_data, categorical)
            grower = Grower(backend, row_data.layout, params, self.n_features_in_, timer=timer)
            self.tree_ = grower.grow()
        self.fit_stats_ = timer.fit_stats(counters)
        self.fit_setup_stats_ = {**counters.at(SETUP), "seconds": setup_seconds}
        if settings.ccp_alpha > 0.0:
            start, leaves = time.perf_counter(), self.tree_.n_leaves
            self.tree_ = cost_complexity_prune(self.tree_, settings.ccp_alpha)
            progress_logger.info(
                "pruned (ccp_alpha=%g): %d -> %d leaves (%.2f s)",
                settings.ccp_alpha,
                leaves,
                self.tree_.n_leaves,
                time.perf_counter() - start,
                extra=step("pruning", 1, 1, done=True),
            )
        return self

    def _check_criterion_support(self, settings, categorical):
        """Refuse the fits that multi-output y and the absolute-error criterion do not
        serve (trees and forests alike)."""
        if self.n_outputs_ > 1:
            self._check_multi_output_fit(settings, categorical)
        if settings.criterion == "absolute_error":
            check_absolute_error_fit(categorical=categorical)

    def _check_multi_output_fit(self, settings, categorical):
        """Refuse, naming the way out, what multi-output fits do not serve yet: they run
        the vectorised split search (either device), over numeric features, with an impurity
        averaged over the outputs."""
        if settings.criterion in ("cart", "gain_ratio"):
            raise ValueError(
                f"criterion={settings.criterion!r} is defined for one output: multi-output y "
                "is fitted with gini, entropy (log_loss) or misclassification"
            )
        if settings.min_purity < 1.0:
            raise ValueError("min_purity is defined for one output: not with multi-output y")
        if getattr(self, "monotonic_cst", None) is not None:
            raise ValueError("Monotonicity constraints are not supported with multiple outputs")
        if categorical is not None and categorical.features.size:
            raise ValueError(
                "multi-output y is split on numeric features only; the categorical features "
                f"{categorical.features.tolist()} need one output (or pass "
                "categorical_features=[] to treat their codes as numbers)"
            )

    def _prepare_fit(self, settings, X, y, sample_weight) -> _PreparedFit:
        """Learn the categories, check X, y and the weights, resolve the size parameters,
        record the input's shape and encode the targets (weights times class weights)."""
        X = as_pandas_frame(X)  # polars, pyarrow, any Arrow table: one path (data/frames.py)
        feature_names = feature_names_of(X)
        categorical = self._learn_categories(X, feature_names, settings)
        if categorical is not None:
            self._check_category_columns(X, feature_names)
        X, y, weight = self._validate_data(X, y, sample_weight)
        sizes = self._check_size_params(*X.shape)
        self._record_input_shape(X, feature_names, sizes.max_features)
        self.n_outputs_ = 1 if y.ndim == 1 else y.shape[1]
        targets, weight = self._encode_targets(y, weight)
        return _PreparedFit(X, targets, weight, sizes, categorical, feature_names)

    def _check_params(self) -> _Settings:
        """Check the parameters that do not depend on the data; choose the device."""
        settings = self._check_settings()
        self._cpu_only_reason = self._cpu_only(settings)
        self.device_ = resolve_device(self.device, self._cpu_only_reason)
        return settings

    def _cpu_only(self, settings) -> str | None:
        """What of this fit runs on the CPU only (None: nothing), which ``device="auto"``
        then fits there rather than refuse on a GPU machine."""
        if self.splitter in EXACT_SPLITTERS:
            return f"splitter={self.splitter!r} (exact search)"
        return None

    def _check_settings(self) -> _Settings:
        """Check the parameters that do not depend on the data or the machine."""
        criterion = check_criterion(self.criterion, self._is_classification)
        if self.splitter not in SPLITTERS:
            raise ValueError(f"Unknown splitter={self.splitter!r}; choose one of {list(SPLITTERS)}")
        max_bins = check_max_bins(self.max_bins)
        return _Settings(
            criterion=criterion,
            max_bins=max_bins,
            max_depth=check_int("max_depth", self.max_depth, 1, allow_none=True),
            max_leaf_nodes=check_int("max_leaf_nodes", self.max_leaf_nodes, 2, allow_none=True),
            min_impurity_decrease=_check_float(
                "min_impurity_decrease", self.min_impurity_decrease, 0.0, math.inf
            ),
            min_weight_fraction_leaf=_check_float(
                "min_weight_fraction_leaf", self.min_weight_fraction_leaf, 0.0, 0.5
            ),
            min_purity=_check_float(
                "min_purity", getattr(self, "min_purity", 1.0), 0.0, 1.0, low_open=True
            ),
            ccp_alpha=_check_float("ccp_alpha", self.ccp_alpha, 0.0, math.inf),
            rng=_random_generator(self.random_state),
            cost_criterion=check_cost_criterion(getattr(self, "cost_criterion", "tan_schlimmer")),
            cost_weight=_check_float(
                "cost_weight", getattr(self, "cost_weight", 1.0), 0.0, math.inf, high_open=True
            ),
        )

    def _validate_data(self, X, y, sample_weight):
        """X (categories coded; a GPU array stays on the GPU), y and the sample weights,
        checked."""
        X = with_codes(X, self._category_maps)
        if is_device_array(X):
            # A GPU array is used where it is: checked on the device, never copied back.
            if self.device_ != "cuda":
                reason = getattr(self, "_cpu_only_reason", None)
                if self.device == "auto" and reason is not None:
                    raise ValueError(
                        f"X is a GPU array, but {reason} runs on the CPU only: pass X as a "
                        "numpy array (or SciPy sparse matrix)"
                    )
                raise ValueError("X is a GPU array: train on it with device='cuda' (or 'auto')")
            X = check_X_on_device(X, cuda_array_module())
        elif is_sparse(X):  # binned as it is, on the host (data/sparse.py)
            X = check_sparse_X(X, estimator_name=type(self).__name__)
        else:
            X = check_X(X)  # NaN passes: a missing value, learned per split
        y, sample_weight = to_host(y), to_host(sample_weight)
        n_samples, n_features = X.shape
        y = check_y(
            y,
            n_samples,
            estimator_name=type(self).__name__,
            is_classification=self._is_classification,
            multi_output=self._fits_multi_output,
        )
        weight = check_sample_weight(sample_weight, n_samples)
        return X, y, weight

    def _check_size_params(self, n_samples, n_features) -> _SizeParams:
        """The parameters given as fractions of the rows or features, resolved."""
        return _SizeParams(
            min_samples_split=_count_or_fraction(
                "min_samples_split", self.min_samples_split, n_samples, 2, 1.0, False
            ),
            min_samples_leaf=_count_or_fraction(
                "min_samples_leaf", self.min_samples_leaf, n_samples, 1, 1.0, True
            ),
            max_features=_resolve_max_features(self.max_features, n_features),
            feature_costs=check_feature_costs(
                getattr(self, "feature_costs", None),
                n_features,
                getattr(self, "cost_criterion", "tan_schlimmer"),
            ),
        )

    def _record_input_shape(self, X, feature_names, max_features):
        """The fitted attributes that describe the input: n_features_in_ and so on."""
        n_features = X.shape[1]
        self.n_features_in_ = n_features
        if feature_names is not None:
            self.feature_names_in_ = feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_outputs_ = 1  # a multi-output y's fit says otherwise (_prepare_fit)
        self.max_features_ = n_features if max_features is None else max_features

    @staticmethod
    def _drop_zero_weight_rows(X, targets, weight):
        """Rows of zero weight do not exist for the tree (as in scikit-learn): they must
        not add split candidates or bin edges."""
        keep = weight > 0
        if keep.all():
            return X, targets, weight
        if not keep.any():
            raise ValueError(
                "no row has a positive weight once class_weight multiplies sample_weight: "
                "nothing to fit"
            )
        if is_sparse(X):
            return canonical_csr(X[np.flatnonzero(keep)]), targets[keep], weight[keep]
        keep_on_device = keep if isinstance(X, np.ndarray) else cuda_array_module().asarray(keep)
        return X[keep_on_device], targets[keep], weight[keep]

    def _make_backend(
        self, X, row_data, max_bins, categorical, feature_names, timer=None, seconds=None
    ):
        """Bin X (:meth:`_training_data`) and build the backend."""
        data = self._training_data(
            X, row_data.layout, max_bins, categorical, feature_names, seconds
        )
        return make_backend(
            data, row_data, device=self.device_, splitter=self.splitter, timer=timer
        )

    def _training_data(self, X, layout, max_bins, categorical, feature_names, seconds=None):
        """What the backend searches: X binned (histogram search; ``self._bin_mapper``),
        or X itself (exact search). Records which features X has missing values in
        (``self.missing_in_training_``): the exports mark where missing values go only on
        those features' splits."""
        n_categories = self._category_maps.n_categories()
        if self.device_ == "cuda":
            check_cuda_support(self.splitter)
        if self.splitter in HISTOGRAM_SPLITTERS:
            start = time.perf_counter()
            self._bin_mapper, data = bin_features(
                X,
                max_bins=max_bins,
                device=self.device_,
                layout=layout,
                n_categories=n_categories,
                feature_names=feature_names,
            )
            if seconds is not None:
                seconds["binning"] = time.perf_counter() - start
            self.missing_in_training_ = self._bin_mapper.missing_by_feature_
        else:
            if is_sparse(X):  # exact search reads raw columns: they are made dense
                X = densified(X)
            self.missing_in_training_ = missing_by_feature(X)
            if categorical is not None:  # the same limit as in histogram mode
                has_missing = bool(self.missing_in_training_[categorical.features].any())
                check_category_counts(n_categories, max_bins, has_missing, feature_names)
            data = X
        return data

    def _growth_params(self, settings, sizes, row_data, categorical) -> GrowthParams:
        n_categories = self._category_maps.n_categories()
        max_depth = settings.max_depth
        return GrowthParams(
            criterion=settings.criterion,
            max_depth=np.iinfo(np.int64).max if max_depth is None else max_depth,
            min_samples_split=sizes.min_samples_split,
            min_samples_leaf=sizes.min_samples_leaf,
            min_weight_leaf=(
                settings.min_weight_fraction_leaf * row_data.total_weight()
                if settings.min_weight_fraction_leaf
                else 0.0
            ),
            min_purity=settings.min_purity,
            min_impurity_decrease=settings.min_impurity_decrease,
            max_leaf_nodes=settings.max_leaf_nodes,
            max_features=sizes.max_features,
            # The per-node feature draws are keyed by this seed (growing/random_draws.py).
            seed=int(settings.rng.integers(np.iinfo(np.int64).max)),
            categorical=categorical,
            n_category_words=words_for(max(1, int(n_categories.max(initial=0)))),
            feature_costs=sizes.feature_costs,
            cost_criterion=settings.cost_criterion,
            cost_weight=settings.cost_weight,
            random_thresholds=self.splitter == "random",
            monotonic_cst=self._check_monotonic_cst(categorical),
        )

    def _check_monotonic_cst(self, categorical) -> np.ndarray | None:
        """``monotonic_cst`` checked against the fitted input (scikit-learn's messages):
        int8 per feature, or None where no feature is constrained."""
        monotonic_cst = getattr(self, "monotonic_cst", None)
        if monotonic_cst is None:
            return None
        cst = np.asarray(monotonic_cst)
        if cst.ndim != 1 or cst.shape[0] != self.n_features_in_:
            raise ValueError(
                f"monotonic_cst has shape {cst.shape[0] if cst.ndim else cst.shape} but the "
                f"input data X has {self.n_features_in_} features."
            )
        if not np.all(np.isin(cst, (-1, 0, 1))):
            raise ValueError(
                "monotonic_cst must be None or an array-like of -1, 0 or 1, but got "
                f"{np.unique(cst)}"
            )
        cst = cst.astype(np.int8)
        if self._is_classification and self.n_classes_ > 2:
            raise ValueError(
                "Monotonicity constraints are not supported with multiclass classification"
            )
        if categorical is not None:
            constrained = [int(f) for f in categorical.features if cst[f] != 0]
            if constrained:
                raise ValueError(
                    f"monotonic_cst constrains the categorical features {constrained}: "
                    "categories have no order; constrain numeric features only (or pass "
                    "categorical_features=[] to treat their codes as numbers)"
                )
        return cst if np.any(cst) else None

    # -- pruning ------------------------------------------------------------------------
    def cost_complexity_pruning_path(self, X, y, sample_weight=None):
        """The minimal cost-complexity pruning path of the tree this estimator grows on
        (X, y) with ``ccp_alpha=0`` (this estimator is not changed).

        Pruning collapses weakest links one at a time: the internal node t with the
        smallest effective alpha ``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``, where R is the
        impurity weighted by the fraction of the training weight (the cost-complexity
        measure ``R(T) + alpha * |leaves(T)|`` of Breiman et al., *Classification and
        Regression Trees*, 1984, as scikit-learn computes it). Equal alphas
        are collapsed one node per step, the node met first depth first going first, so
        an alpha may repeat, exactly as in scikit-learn.

        Returns
        -------
        Bunch with ``ccp_alphas`` (the effective alpha of each step, 0 for the full tree
        first, non-decreasing up to rounding) and ``impurities`` (the total leaf impurity
        R of the tree after each step, the root alone last). ``ccp_alpha=ccp_alphas[i]``
        in ``fit`` gives the tree after step i (and after any later steps of the same
        alpha).
        """
        params = {**self.get_params(deep=False), "ccp_alpha": 0.0}
        full = type(self)(**params).fit(X, y, sample_weight=sample_weight)
        alphas, impurities = cost_complexity_path(full.tree_)
        return Bunch(ccp_alphas=alphas, impurities=impurities)

    def reduced_error_prune(self, X_val, y_val, sample_weight=None):
        """Reduced-error pruning (Quinlan, 1987; Mitchell, *Machine Learning*, 1997,
        section 3.7.1) on a validation set; returns self.

        Repeatedly replaces by a leaf the internal node whose removal raises the
        validation score (accuracy for a classifier, R^2 for a regressor) the most; a
        collapsed node predicts from its own training ``value``. Removals that leave the
        score unchanged are made too (a smaller tree scoring the same; in particular a
        subtree no validation row reaches is always removed); pruning stops when every
        removal would lower the score, so the validation score never gets worse. Among
        removals changing the score equally, the one removing the most leaves goes first,
        then the lowest node id. R^2 is compared through the weighted squared error (the
        same order); ``sample_weight`` weights the validation rows.

        Each validation row is routed to its leaf once (``apply``) and the leaves' error
        sums are added up the tree, so the cost is that of one ``apply`` plus O(nodes *
        classes) memory and time, then O(depth log n) per removal. A classifier's
        validation labels never seen in training (compared as the categories are: 1 and
        1.0 are one label, True is not 1) count as errors under any pruning (they cannot
        be predicted); if none of them was seen in training, a ``ValueError`` is raised.
        """
        self._check_fitted()
        X_val = to_host(self._validate_X_predict(X_val))
        name = type(self).__name__
        y_val = check_y(
            to_host(y_val),
            X_val.shape[0],
            estimator_name=name,
            is_classification=self._is_classification,
            multi_output=self._fits_multi_output,
        )
        if self._is_classification and self.n_outputs_ > 1:
            raise ValueError(
                "reduced_error_prune counts one output's errors: not for a multi-output "
                "classifier yet (cost-complexity pruning, ccp_alpha, serves it)"
            )
        if (1 if y_val.ndim == 1 else y_val.shape[1]) != self.n_outputs_:
            raise ValueError(
                f"y_val has {1 if y_val.ndim == 1 else y_val.shape[1]} outputs but the tree "
                f"was fitted on {self.n_outputs_}"
            )
        if X_val.shape[0] == 0:
            raise ValueError("reduced_error_prune needs at least one validation row")
        weight = check_sample_weight(to_host(sample_weight), X_val.shape[0])
        if self._is_classification:
            # -1 for labels never seen in training (of any type: [0, "a"] is fine).
            target = label_codes(y_val, self.classes_)
            if not (target >= 0).any():
                distinct = list(dict.fromkeys(y_val.tolist()))
                raise ValueError(
                    f"none of the labels in y_val ({distinct[:5]}...) was seen in "
                    f"training; classes_ is {self.classes_.tolist()[:10]}"
                )
        else:
            target = y_val
        errors = validation_errors(self.tree_, X_val, target, weight, self._is_classification)
        self.tree_ = reduced_error_prune(self.tree_, errors)
        return self

    def _learn_categories(self, X, feature_names, settings):
        """Learn the categorical features' categories (``self._category_maps``); return how
        they are split, or None when there are none."""
        categorical = self._learn_category_maps(X, feature_names)
        if categorical is not None and categorical.multiway and settings.criterion == "cart":
            raise ValueError(
                "criterion='cart' scores binary splits only; use categorical_split='binary' "
                "or another criterion with categorical_split='multiway'"
            )
        return categorical

    def _check_category_columns(self, X, feature_names):
        """The checks of the categorical columns that read X's rows (a Dask fit learns its
        categories from the partitions' distinct values, not rows): a column of text taken
        as categorical by its type that reads as numbers but for a few values is refused
        (check_text_of_numbers), and a column of nearly as many categories as rows is
        warned of (warn_id_like)."""
        maps = self._category_maps
        n_features = maps.mask.size
        declared, exact = declared_features(self.categorical_features, n_features, feature_names)
        if not exact:
            kinds = column_kinds(X, n_features)
            detected = [j for j in maps.features if not declared[j] and kinds[j] in ("O", "U", "S")]
            check_text_of_numbers(X, maps, detected, feature_names)
        warn_id_like(maps, len(X), feature_names, stacklevel=2)

    def _learn_category_maps(self, X, feature_names):
        if self.categorical_split not in CATEGORICAL_SPLITS:
            raise ValueError(
                f"Unknown categorical_split={self.categorical_split!r}; choose one of "
                f"{list(CATEGORICAL_SPLITS)}"
            )
        max_subset = check_int("max_category_subset", self.max_category_subset, 0)
        shape = getattr(X, "shape", None)
        if shape is None:
            shape = np.shape(np.asarray(X, dtype=object))
        n_features = shape[1] if len(shape) == 2 else 0
        mask = resolve_categorical_features(self.categorical_features, X, n_features, feature_names)
        if is_sparse(X) and mask.any():
            named = np.flatnonzero(mask)[:5].tolist()
            raise ValueError(
                f"X is sparse and categorical_features names features {named}: categorical "
                "features of a sparse X are not supported; pass X dense, or one-hot encode "
                "the categories"
            )
        self._category_maps = CategoryMaps(mask, feature_names).fit(X)
        self.is_categorical_ = mask
        found = self._category_maps.categories  # by feature; most fits have none
        self.categories_ = (
            [found.get(j) for j in range(n_features)] if found else [None] * n_features
        )
        if not mask.any():
            return None
        return CategoricalSearch(
            features=np.flatnonzero(mask),
            multiway=self.categorical_split == "multiway",
            max_subset=max_subset,
        )

    # -- prediction helpers -------------------------------------------------------------
    def _check_fitted(self):
        check_fitted(self, hasattr(self, "tree_"))

    def _validate_X_predict(self, X):
        self._check_fitted()
        X = coded_for_predict(self, X)
        if is_device_array(X):
            usable, reason, xp = cuda_status()
            if not usable:
                raise ValueError(f"X is a GPU array but the GPU is not usable here: {reason}")
            return check_X_on_device(
                X, xp, n_features_expected=self.n_features_in_, estimator_name=type(self).__name__
            )
        return checked_host_X(self, X)

    def _leaf_values(self, X):
        """``tree_.value`` of each row's leaf, (n_samples, n_outputs): on the GPU for a
        GPU array (one thread per row walks the tree there), else on the CPU."""
        X = self._validate_X_predict(X)
        if is_device_array(X):
            return predict_on_device(self.tree_, X, cuda_array_module())
        return self.tree_.predict(X)

    def apply(self, X):
        """Index of the leaf each sample ends up in: ndarray of shape (n_samples,)."""
        X = self._validate_X_predict(X)
        if is_device_array(X):
            return apply_on_device(self.tree_, X, cuda_array_module())
        return self.tree_.apply(X)

    def decision_path(self, X):
        """Sparse indicator (n_samples, node_count) of the nodes each sample passes through."""
        return self.tree_.decision_path(self._validate_X_predict(X))

    def prediction_cost(self, X, feature_costs=None):
        """The cost of predicting each row of X: the sum of the costs of the distinct
        features tested on its path from the root to its leaf (a feature tested twice on
        a path is measured, and paid, once). ``prediction_cost(X).mean()`` is the mean
        cost paid per row.

        ``feature_costs`` (array-like of shape (n_features,), finite and >= 0): the costs
        to use; None (the default): the estimator's ``feature_costs``, which must then be
        set. Any tree can be costed so, one grown without costs too.

        Returns ndarray of shape (n_samples,), float64.
        """
        self._check_fitted()
        costs = feature_costs if feature_costs is not None else self.feature_costs
        if costs is None:
            raise ValueError(
                "prediction_cost needs costs: this estimator has feature_costs=None, so "
                "pass prediction_cost(X, feature_costs=...)"
            )
        costs = check_feature_costs(costs, self.n_features_in_)  # only summed: 0 is fine
        leaves = to_host(self.apply(X))
        reached, leaf_of_row = np.unique(leaves, return_inverse=True)
        return path_costs(self.tree_, reached, costs)[leaf_of_row.ravel()]

    def save(self, path):
        """Write the fitted estimator to ``path`` as a versioned JSON model file, atomically
        (a temporary file, then a rename). Read it back with :func:`gpu_tree.load`."""
        from gpu_tree.model.file_format import save_model

        save_model(self, path)

    def get_depth(self) -> int:
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        self._check_fitted()
        return self.tree_.n_leaves

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value, learned per split
        tags.input_tags.sparse = True  # SciPy sparse X: binned as it is (data/sparse.py)
        tags.target_tags.multi_output = self._fits_multi_output
        return tags

    @property
    def feature_importances_(self):
        """Normalised total impurity decrease brought by each feature."""
        self._check_fitted()
        return self.tree_.compute_feature_importances()


class DecisionTreeClassifier(ClassifierMixin, _BaseDecisionTree):
    """Decision-tree classifier with histogram (default) or exact split search.

    Parameters
    ----------
    criterion : {"gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification"}
        Split measure: Gini index (Breiman et al.'s CART, 1984), information gain
        (entropy, Quinlan's ID3, 1986; ``log_loss`` is an alias), gain ratio (Quinlan's
        C4.5, 1993), the CART measure, misclassification rate (Zaki and Meira, *Data
        Mining and Machine Learning*, chapter 19).
    splitter : {"hist", "exact", "best", "random"}
        ``hist`` searches bin boundaries of per-feature histograms; ``exact`` sorts each
        node's values and tries every midpoint (the reference); ``best`` is
        scikit-learn's name for that same exact search. ``random`` (extremely randomised
        trees, Geurts, Ernst and Wehenkel 2006; :class:`ExtraTreeClassifier`): each
        searched feature gets one threshold drawn uniformly between the node's lowest and
        highest value, from the counter-based generator (so both devices draw the same),
        and the split follows the last bin at or below it; numeric features only. With no more distinct values per
        feature than ``max_bins`` they build the same tree; ``hist`` adds speed (one
        pass over a node's rows per level, on a GPU too) and the subtraction of sibling
        histograms.
    max_depth : int or None
        Deepest level a node may be split at (root is depth 0).
    min_samples_split : int or float
        Fewest rows a node needs to be split (Zaki and Meira's leaf-size threshold eta
        of Algorithm 19.1, plus 1); a float is a fraction.
    min_samples_leaf : int or float
        Fewest rows each child must keep.
    min_weight_fraction_leaf : float
        Fewest (weighted) rows each child must keep, as a fraction of the total weight.
    max_features : int, float, "sqrt", "log2" or None
        Features drawn at random for each node's search (None: all).
    random_state : int, numpy Generator or None
        Seed of the per-node feature draws.
    max_leaf_nodes : int or None
        Grow best-first (largest weighted impurity decrease first) up to this many leaves.
    min_impurity_decrease : float
        A split must decrease the weighted impurity (N_t/N times its score) by at least
        this much (as scikit-learn's parameter of the same name).
    class_weight : dict, "balanced" or None
        Weights multiplying each class's sample weights.
    max_bins : int
        Bins per feature in histogram mode, 2..65535.
    min_purity : float
        A node whose majority-class fraction reaches this is a leaf (the purity threshold
        pi of Zaki and Meira's Algorithm 19.1).
    device : {"auto", "cpu", "cuda"}
        Where to train. ``auto`` picks the GPU when one is usable.
    categorical_features : None, "from_dtype", list of indices or names, or boolean mask
        The categorical features. None (the default) and "from_dtype": the columns whose
        type says so, a pandas ``category``, polars ``Categorical`` or ``Enum`` or Arrow
        dictionary column and a column of text (a DataFrame's object or string column, a
        numpy string or object column, whose present values are all strings); a column
        mixing numbers and text is refused, and so is a column of text whose values all
        read as numbers but for at most max(3, 1%) of them (and a tenth): typos, far
        likelier than categories. A list of indices or names adds to those (columns of
        numbers are numeric unless listed; a listed column of text is not checked for
        typos); a boolean mask says exactly which, and an empty list makes every column
        numeric. The values of a categorical feature are labels (numbers or strings);
        missing values and, at prediction, categories not seen in training follow each
        node's missing rule. A feature may have at most ``max_bins`` categories (one less
        with missing values); one with more categories than half the rows (from 20 rows)
        is warned of, as a likely identifier.
    categorical_split : {"binary", "multiway"}
        ``binary``: splits "x in V" (Zaki and Meira, Algorithm 19.3), V a subset of the
        categories; exact for
        binary targets and regression (categories ordered by P(class 1) or the mean
        target), searched for multiclass targets as described under
        ``max_category_subset``. ``multiway``: one child per category (Quinlan's ID3),
        and the feature is not tested again below; missing values and unseen categories
        go to the largest branch. Numeric features always split in two.
    max_category_subset : int
        Multiclass targets, binary splits: every subset of at most this many categories
        is tried (Zaki and Meira's l in Algorithm 19.3; exhaustive up to 2 * l + 1
        categories at a node), and so
        is every prefix of the categories ordered by P(c), for each class c. Default 2.
        Subsets are tried at nodes whose categories give at most 65,536 of them (361
        categories for l = 2, 73 for l = 3); at larger nodes the prefixes alone are the
        search, so time and memory stay linear in the number of categories.
    ccp_alpha : float >= 0
        Minimal cost-complexity pruning after growth (Breiman et al.'s CART, 1984:
        ``alpha * size + sum of leaf impurities``, size counted in leaves, as in
        scikit-learn): weakest
        links are collapsed while their effective alpha is <= ``ccp_alpha``. 0 (default)
        prunes nothing. See :meth:`cost_complexity_pruning_path` for useful values, and
        :meth:`reduced_error_prune` for pruning on a validation set instead.
    feature_costs : array-like of shape (n_features,) or None
        What measuring each feature costs, finite and >= 0. None (the default): no
        costs, every node splits on its best split. With costs, a node's feature is the
        one of the highest cost-sensitive measure (``cost_criterion``) of its best
        split's gain and the feature's cost, so that informative features that are cheap
        to measure are preferred (features with differing costs); the split itself is that
        feature's best. The stopping rules (``min_impurity_decrease`` and the others)
        still read the gain, and best-first growth (``max_leaf_nodes``) still expands
        the node of the largest weighted gain first. :meth:`prediction_cost` gives the
        cost of predicting each row. Multiway categorical splits are chosen the same
        way. Forests take no costs.
    cost_criterion : {"tan_schlimmer", "nunez"}
        The cost-sensitive measure, of a split's ``gain`` and its feature's ``cost``:

        - ``"tan_schlimmer"`` (the default): gain**2 / cost (M. Tan and J. C.
          Schlimmer, "Two case studies in cost-sensitive concept acquisition",
          *AAAI-90*, 1990). A cost of 0 is refused (a ValueError naming the feature):
          the measure divides by it.
        - ``"nunez"``: (2**gain - 1) / (cost + 1)**cost_weight (M. Núñez, "The use of
          background knowledge in decision tree induction", *Machine Learning* 6,
          1991). Free features (cost 0) are allowed.

        ``gain`` is the split's score under ``criterion``: its impurity decrease, so the
        information gain in bits for ``entropy`` (as both papers use) and the variance
        decrease, in the target's units squared, for a regressor; for ``gain_ratio`` and
        ``cart`` their own score stands for it. Measures equal within rounding tie, and
        the lowest feature index wins, as everywhere in the tree.
    cost_weight : float >= 0
        Núñez's w: how much the cost counts (0: not at all, 1: fully, the default; the
        paper takes it in [0, 1]). Read by ``cost_criterion="nunez"`` only.
    monotonic_cst : array-like of int of shape (n_features,) or None
        The monotonicity constraint of each feature, as scikit-learn's: 1 predictions
        non-decreasing in the feature, -1 non-increasing, 0 no constraint; None (the
        default) constrains nothing. Binary classification (the constraints hold over the
        probability of the positive class, ``classes_[1]``) and regression only: multiclass
        targets and constrained categorical features are refused. A split on a
        constrained feature is made only if its children's values are ordered and within
        the node's bounds, and the children's bounds meet at the mean of their values;
        node values are clipped into their bounds (scikit-learn's algorithm). Searched by
        the vectorised split search (slower than the compiled one), in every mode.
    verbose : {0, 1, 2}
        What ``fit`` shows on standard error: 0 (default) nothing; 1 progress bars
        (binning, the tree's levels, with rates and, under a ``max_depth``, an ETA); 2 a
        line per step (binning, each level, the tree grown). The records go through the
        ``"gpu_tree"`` logger (gpu_tree.utils.progress), which a program may also
        configure itself.
    """

    _is_classification = True
    _fits_multi_output = True

    def __init__(
        self,
        *,
        criterion="gini",
        splitter="hist",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=None,
        random_state=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        class_weight=None,
        max_bins=256,
        min_purity=1.0,
        device="auto",
        categorical_features=None,
        categorical_split="binary",
        max_category_subset=2,
        ccp_alpha=0.0,
        feature_costs=None,
        cost_criterion="tan_schlimmer",
        cost_weight=1.0,
        monotonic_cst=None,
        verbose=0,
    ):
        self.criterion = criterion
        self.splitter = splitter
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
        self.max_bins = max_bins
        self.min_purity = min_purity
        self.device = device
        self.categorical_features = categorical_features
        self.categorical_split = categorical_split
        self.max_category_subset = max_category_subset
        self.ccp_alpha = ccp_alpha
        self.feature_costs = feature_costs
        self.cost_criterion = cost_criterion
        self.cost_weight = cost_weight
        self.monotonic_cst = monotonic_cst
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        """Build the tree from X (n_samples, n_features) and class labels y (n_samples,)."""
        return self._fit(X, y, sample_weight)

    def _encode_targets(self, y, weight):
        if y.ndim == 2:  # multi-output: each column its own classes, as scikit-learn's
            return self._encode_multi_output_targets(y, weight)
        self.classes_, encoded = check_classification_labels(y)
        self.n_classes_ = len(self.classes_)
        n_classes = self.n_classes_
        multipliers = self._class_weights(lambda: np.bincount(encoded, minlength=n_classes))
        return encoded, weight * multipliers[encoded]

    def _encode_multi_output_targets(self, y, weight):
        """classes_ (a list of one array per output) and n_classes_ (an intp array), as
        scikit-learn's, and the class codes, (n_samples, n_outputs)."""
        columns = [check_classification_labels(y[:, k]) for k in range(y.shape[1])]
        self.classes_ = [classes for classes, _ in columns]
        self.n_classes_ = np.array([len(classes) for classes in self.classes_], dtype=np.intp)
        encoded = np.column_stack([codes for _, codes in columns]).astype(np.int64)
        class_weight = self.class_weight
        if class_weight is None:
            return encoded, weight
        # As scikit-learn's compute_sample_weight: one weight per output, multiplied.
        if isinstance(class_weight, str):
            per_output = [class_weight] * y.shape[1]
        elif isinstance(class_weight, list | tuple):
            per_output = list(class_weight)
            if len(per_output) != y.shape[1]:
                raise ValueError(
                    "For multi-output, number of elements in class_weight should match "
                    "number of outputs."
                )
        else:
            raise ValueError(
                "For multi-output, class_weight should be a list of dicts, or the string "
                "'balanced'."
            )
        for k, (classes, codes) in enumerate(columns):
            n_classes = len(classes)
            multipliers = class_weight_multipliers(
                per_output[k], classes, lambda c=codes, n=n_classes: np.bincount(c, minlength=n)
            )
            weight = weight * multipliers[codes]
        return encoded, weight

    def _row_data(self, encoded, weight, **options):
        """The rows' statistics; ``options`` go to RowData (``scales``, ``root_sizes``)."""
        weighted = not np.all(weight == 1.0)
        if encoded.ndim == 2:
            counts = tuple(int(n) for n in self.n_classes_)
            layout = StatsLayout(
                True, sum(counts), weighted, n_outputs=len(counts), class_counts=counts
            )
        else:
            layout = StatsLayout(True, self.n_classes_, has_count_channel=weighted)
        return RowData(layout=layout, weight=weight, y_class=encoded, **options)

    def _class_weights(self, count_classes):
        """Per-class multipliers from ``class_weight`` (scikit-learn's 'balanced' formula);
        ``count_classes()`` gives the rows of each class, asked only for 'balanced'."""
        return class_weight_multipliers(self.class_weight, self.classes_, count_classes)

    def predict_proba(self, X):
        """Class probabilities of the leaf each sample reaches: (n_samples, n_classes), or
        for multi-output y a list of one such array per output.

        A GPU array in gives a GPU array out."""
        values = self._leaf_values(X)
        return values if self.n_outputs_ == 1 else per_output(values, self.n_classes_)

    def predict_log_proba(self, X):
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            if self.n_outputs_ == 1:
                return np.log(proba)
            return [np.log(p) for p in proba]

    def predict(self, X):
        """Majority class of the leaf each sample reaches (lowest class index on ties);
        (n_samples, n_outputs) for multi-output y."""
        X = self._validate_X_predict(X)
        if self.n_outputs_ > 1:
            codes = self.tree_.classes_of(self.tree_.apply(to_host(X)))
            return labels_per_output(self.classes_, codes)
        if not is_device_array(X):
            return self.classes_.take(self.tree_.classes_of(self.tree_.apply(X)))
        proba = predict_on_device(self.tree_, X, cuda_array_module())
        return labels_of_winners(self.classes_, proba.argmax(axis=1))


def labels_of_winners(classes, winner):
    """The labels of the winning class indices: on the GPU (``winner`` a device array)
    numeric labels stay there and other labels come back as a host array; on the host,
    host labels."""
    if is_device_array(winner) and classes.dtype.kind in "biuf":
        return cuda_array_module().asarray(classes)[winner]
    return classes.take(to_host(winner))


class DecisionTreeRegressor(RegressorMixin, _BaseDecisionTree):
    """Decision-tree regressor (variance reduction, as in Breiman et al.'s CART, 1984);
    parameters as the classifier's but for ``criterion``.

    Parameters
    ----------
    criterion : {"squared_error", "poisson", "absolute_error"}, default="squared_error"
        "squared_error": variance reduction, nodes' ``impurity`` their weighted variance;
        "poisson": reduction of the half Poisson deviance, as scikit-learn's, for
        non-negative targets (counts, rates) of a positive sum, nodes' ``impurity`` their
        mean half Poisson deviance; a split leaving a child whose targets sum to 0 is
        never made. Leaves predict their weighted mean target with either.
        "absolute_error": reduction of sum w |y - median|, as scikit-learn's; leaves
        predict their weighted median, nodes' ``impurity`` is their mean absolute
        deviation. Splits are searched on each node's rows (CPU only; numeric features;
        a sparse X in exact mode).
        "friedman_mse" is deprecated and maps to "squared_error", as in scikit-learn 1.9.
    """

    _is_classification = False
    _fits_multi_output = True
    # Which of scikit-learn's messages refuses targets summing to 0 for criterion="poisson"
    # (a forest's template says "forest": criteria.check_poisson_targets).
    _poisson_estimator_kind = "tree"

    def __init__(
        self,
        *,
        criterion="squared_error",
        splitter="hist",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=None,
        random_state=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        max_bins=256,
        device="auto",
        categorical_features=None,
        categorical_split="binary",
        max_category_subset=2,
        ccp_alpha=0.0,
        feature_costs=None,
        cost_criterion="tan_schlimmer",
        cost_weight=1.0,
        monotonic_cst=None,
        verbose=0,
    ):
        self.criterion = criterion
        self.splitter = splitter
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.max_bins = max_bins
        self.device = device
        self.categorical_features = categorical_features
        self.categorical_split = categorical_split
        self.max_category_subset = max_category_subset
        self.ccp_alpha = ccp_alpha
        self.feature_costs = feature_costs
        self.cost_criterion = cost_criterion
        self.cost_weight = cost_weight
        self.monotonic_cst = monotonic_cst
        self.verbose = verbose

    def fit(self, X, y, sample_weight=None):
        """Build the tree from X (n_samples, n_features) and real targets y (n_samples,)."""
        return self._fit(X, y, sample_weight)

    def _encode_targets(self, y, weight):
        if self.criterion == "poisson":
            check_poisson_targets(y, self._poisson_estimator_kind)
        return y, weight

    def _row_data(self, y, weight, **options):
        """The rows' statistics; ``options`` go to RowData (``scales``, ``root_sizes``)."""
        layout = StatsLayout(False, 0, has_count_channel=not np.all(weight == 1.0))
        return RowData(layout=layout, weight=weight, y=y, **options)

    def predict(self, X):
        """Mean target of the leaf each sample reaches: ndarray of shape (n_samples,), or
        (n_samples, n_outputs) for a multi-output y."""
        return self._leaf_values(X)[..., 0]


def class_weight_multipliers(class_weight, classes, count_classes) -> np.ndarray:
    """Per-class multipliers of one output's ``classes`` from ``class_weight`` (a dict,
    'balanced' or None; scikit-learn's 'balanced' formula); ``count_classes()`` gives the
    rows of each class, asked only for 'balanced'."""
    n_classes = len(classes)
    if class_weight is None:
        return np.ones(n_classes)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(
                f"class_weight must be a dict, 'balanced' or None; got {class_weight!r}"
            )
        counts = np.asarray(count_classes())
        return counts.sum() / (n_classes * np.maximum(counts, 1))
    if isinstance(class_weight, dict):
        multipliers = np.ones(n_classes)
        lookup = {label: k for k, label in enumerate(classes.tolist())}
        unknown = [label for label in class_weight if label not in lookup]
        if unknown:
            raise ValueError(f"class_weight names labels not present in y: {unknown}")
        for label, value in class_weight.items():
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ValueError(f"class_weight[{label!r}] must be a number, got {value!r}")
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"class_weight[{label!r}] must be finite and >= 0, got {value!r}")
            multipliers[lookup[label]] = float(value)
        return multipliers
    raise ValueError(f"class_weight must be a dict, 'balanced' or None; got {class_weight!r}")


def _init_with_defaults(base, **defaults):
    """``base.__init__`` with other defaults for some parameters: scikit-learn reads an
    estimator's parameters (get_params, clone) from its ``__init__`` signature, so the
    signature itself carries the new defaults."""
    signature = inspect.signature(base.__init__)
    parameters = [
        p.replace(default=defaults.pop(p.name)) if p.name in defaults else p
        for p in signature.parameters.values()
    ]
    if defaults:
        raise TypeError(f"{base.__name__} has no parameters {sorted(defaults)}")
    signature = signature.replace(parameters=parameters)

    def __init__(self, **params):
        bound = signature.bind(self, **params)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        base.__init__(self, **arguments)

    __init__.__signature__ = signature
    return __init__


class ExtraTreeClassifier(DecisionTreeClassifier):
    """An extremely randomised tree (Geurts, Ernst and Wehenkel, "Extremely randomized
    trees", Machine Learning 63, 2006), as scikit-learn's ``ExtraTreeClassifier``: a
    :class:`DecisionTreeClassifier` whose defaults are ``splitter="random"`` (each drawn
    feature gets one threshold drawn uniformly between the node's lowest and highest
    value; the best of those splits wins) and ``max_features="sqrt"``. Meant as the tree
    of an ensemble (:class:`gpu_tree.ExtraTreesClassifier` grows many together)."""

    __init__ = _init_with_defaults(DecisionTreeClassifier, splitter="random", max_features="sqrt")


class ExtraTreeRegressor(DecisionTreeRegressor):
    """An extremely randomised regression tree, as scikit-learn's ``ExtraTreeRegressor``:
    a :class:`DecisionTreeRegressor` whose default is ``splitter="random"`` (see
    :class:`ExtraTreeClassifier`); ``max_features`` stays 1.0 (every feature), as in
    scikit-learn."""

    __init__ = _init_with_defaults(DecisionTreeRegressor, splitter="random", max_features=1.0)
