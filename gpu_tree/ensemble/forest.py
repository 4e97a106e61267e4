"""Random forests (Breiman, "Random Forests", Machine Learning 45, 2001): many trees,
each grown on a bootstrap sample of the rows with features drawn at random per node,
combined by averaging their class probabilities or predictions.

The trees of a forest grow together: a batch of trees is one row table with a root per
tree (each tree's in-bag rows, their bootstrap counts as integer weights), and the
grower builds every level of every tree of the batch in one histogram pass
(:meth:`gpu_tree.growing.grower.Grower.grow_forest`). A tree does not depend on the
batch it grew in: its random draws are keyed by (seed, tree, node path)
(``growing/random_draws.py``), its bootstrap by (seed, tree), and the integer units of
its statistics are fixed from bounds of any one tree's sums (:func:`forest_row_scales`),
so CPU and GPU forests, and forests grown in batches of any size or by ``warm_start``,
are the same, tree for tree.
"""

from __future__ import annotations

import math
import numbers
import os
import time
import warnings
import weakref
from typing import NamedTuple

import numpy as np

from gpu_tree.backends.contract import BinnedData
from gpu_tree.backends.cuda import (
    cuda_array_module,
    free_device_bytes,
    labels_of_winners,
    predict_forest_on_device,
)
from gpu_tree.backends.factory import make_backend
from gpu_tree.backends.rows import forest_row_scales
from gpu_tree.data.binning import SparseCodes
from gpu_tree.data.stats import FIXED_POINT_BITS
from gpu_tree.data.validation import DEVICE
from gpu_tree.estimators.tree import (
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    ExtraTreeClassifier,
    ExtraTreeRegressor,
)
from gpu_tree.growing.grower import Grower
from gpu_tree.model.pruning import cost_complexity_prune
from gpu_tree.model.tree import (
    forest_lockstep_arrays,
    forest_walk_arrays,
    labels_per_output,
    per_output,
    predict_forest,
    predict_forest_lockstep,
)
from gpu_tree.training.binning import searched_attributes, searched_data
from gpu_tree.training.checks import random_seed
from gpu_tree.training.fit import growth_params, monotonic_constraints, small_fit_in_python
from gpu_tree.training.inputs import (
    PreparedInput,
    Task,
    check_fit_support,
    input_attributes,
    prepare,
    prepared_for_predict,
    refuse_random_categorical,
    refuse_sparse_y,
    set_attributes,
)
from gpu_tree.training.parameters import (
    Settings,
    check_parameter,
    check_settings,
    documented,
    resolve_training_device,
)
from gpu_tree.training.targets import row_data
from gpu_tree.utils.compat import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    check_fitted,
)
from gpu_tree.utils.device_copies import to_host
from gpu_tree.utils.memory import reusing_freed_memory
from gpu_tree.utils.progress import check_verbose, estimator_display, step
from gpu_tree.utils.progress import logger as progress_logger
from gpu_tree.utils.threads import numba_threads

__all__ = [
    "ExtraTreesClassifier",
    "ExtraTreesRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
    "forest_batches",
]

# A batch of trees grows together while its rows and two levels of dense histograms fit
# in this many bytes (on the CPU; a GPU takes half its free memory). Trees do not depend
# on their batch, so this changes speed and memory only.
FOREST_BATCH_BYTES = 2 << 30

# A tree's bootstrap sample is drawn this many rows at a time (or the number of rows, if
# more), each chunk counted before the next is drawn: the same counts as one draw of every
# index (one stream of numbers), in memory that does not grow with max_samples.
BOOTSTRAP_CHUNK = 1 << 20

# scikit-learn's message for a max_samples of the wrong type or out of its range.
_MAX_SAMPLES_RULE = (
    "The 'max_samples' parameter of {name} must be None, a float in the range (0.0, inf) "
    "or an int in the range [1, inf). Got {value!r} instead."
)


class _Growing(NamedTuple):
    """What every batch of a forest's trees grows from."""

    settings: Settings
    prepared: PreparedInput
    data: object  # the searched data of every row (training.binning.searched_data)
    device: str
    scales: object  # the rows' RowScales, shared by every tree
    n_drawn: int  # rows drawn per tree
    monotonic_cst: np.ndarray | None
    random_thresholds: bool


def unfitted_tree(forest, index):
    """The unfitted tree estimator that holds tree ``index`` of ``forest``: the forest's
    tree parameters and the tree's own random_state, as the forest's fit makes it (and
    the model file's loader)."""
    return forest._tree_class(**forest._tree_parameters(random_state=index))


def forest_batches(n_trees, bytes_per_tree, budget) -> list[range]:
    """Consecutive batches of tree indices, each holding at most ``budget`` bytes (one
    tree at least)."""
    per_batch = max(1, min(n_trees, int(budget // max(bytes_per_tree, 1))))
    return [range(first, min(first + per_batch, n_trees)) for first in range(0, n_trees, per_batch)]


class _BaseForest(BaseEstimator):
    """Shared fitting and prediction; subclasses name their tree class."""

    _tree_class = DecisionTreeClassifier
    # The unfitted tree of scikit-learn's ``estimator`` attribute (the kind of tree a
    # forest of this class is made of, with its default parameters).
    _estimator_class = DecisionTreeClassifier
    # Extremely randomised trees: a random threshold per node and feature.
    _random_thresholds = False
    # Parameters passed on to every tree (the rest are the forest's own).
    _tree_params = (
        "criterion",
        "splitter",
        "max_depth",
        "min_samples_split",
        "min_samples_leaf",
        "min_weight_fraction_leaf",
        "max_features",
        "max_leaf_nodes",
        "min_impurity_decrease",
        "max_bins",
        "device",
        "categorical_features",
        "categorical_split",
        "max_category_subset",
        "ccp_alpha",
        "monotonic_cst",
    )

    # -- scikit-learn's ensemble surface ---------------------------------------------------
    # The forest's parameters each tree is given (scikit-learn's ``estimator_params``; a
    # tree's random_state is its index in the forest, and class weights the forest's).
    estimator_params = _tree_params

    @property
    def estimator(self):
        """The kind of tree the forest is made of, unfitted, with its default parameters
        (scikit-learn's forests' ``estimator``; not a parameter, as there)."""
        return self._estimator_class()

    @property
    def estimator_(self):
        """The fitted forest's ``estimator`` (scikit-learn's fitted attribute of that name;
        worked out, not stored: a forest read from a model file has it too)."""
        if not getattr(self, "estimators_", None):
            raise AttributeError(f"{type(self).__name__} is not fitted: it has no estimator_")
        return self.estimator

    def __len__(self):
        """The number of fitted trees (scikit-learn's ``BaseEnsemble``)."""
        return len(self.estimators_)

    def __getitem__(self, index):
        """The fitted tree(s) at ``index`` of ``estimators_``."""
        return self.estimators_[index]

    def __iter__(self):
        """The fitted trees, in order."""
        return iter(self.estimators_)

    # -- checks ---------------------------------------------------------------------------
    def _check_forest_params(self, n_samples):
        """n_estimators, bootstrap, oob_score and max_samples checked; returns the rows
        each tree draws (the bootstrap size; every row without bootstrap)."""
        check_parameter("n_estimators", self.n_estimators)
        if not isinstance(self.bootstrap, bool | np.bool_):
            raise ValueError(f"bootstrap must be True or False, got {self.bootstrap!r}")
        if self.oob_score and not self.bootstrap:
            raise ValueError("Out of bag estimation only available if bootstrap=True")
        if not (callable(self.oob_score) or isinstance(self.oob_score, bool | np.bool_)):
            raise ValueError(f"oob_score must be True or False, got {self.oob_score!r}")
        return self._n_samples_bootstrap_of(n_samples)

    def _n_samples_bootstrap_of(self, n_samples):
        """The rows each tree draws, by scikit-learn's rules (its
        ``_get_n_samples_bootstrap``): None, every row; an int >= 1, that many (more than
        there are rows too); a float > 0, that fraction of the rows, rounded down (at least
        one; above 1.0 too), with scikit-learn's warning where that is few. A bool is
        refused (True is no fraction). Refused too: a sample whose row indices cannot fit
        in memory, before anything is drawn."""
        max_samples = self.max_samples
        if max_samples is None:
            return n_samples
        rule = _MAX_SAMPLES_RULE.format(name=type(self).__name__, value=max_samples)
        if isinstance(max_samples, bool | np.bool_):
            raise TypeError(rule)
        integral = isinstance(max_samples, numbers.Integral)
        if not integral and not isinstance(max_samples, float):
            raise TypeError(rule)  # scikit-learn's RealNotInt: a float (np.float64 too)
        if (integral and max_samples < 1) or (not integral and not 0.0 < max_samples < math.inf):
            raise ValueError(rule)
        if not self.bootstrap:
            raise ValueError(
                "max_samples cannot be set if bootstrap=False: either switch to "
                "bootstrap=True or set max_samples=None"
            )
        if integral:
            n_drawn = int(max_samples)
        else:
            n_drawn = max(int(max_samples * n_samples), 1)
            if n_drawn < max(10, n_samples ** (1 / 3)):
                warnings.warn(
                    f"Using the fractional value {max_samples=} when the number of samples "
                    f"is {n_samples} results in a low number ({n_drawn}) of bootstrap "
                    "samples. We recommend passing `max_samples` as an integer instead.",
                    UserWarning,
                    stacklevel=5,  # fit's caller
                )
        _check_sample_fits(max_samples, n_drawn)
        return n_drawn

    def _tree_parameters(self, random_state=0) -> dict:
        """The parameters of the forest's trees: the forest's tree parameters, its class
        weights as each tree reads them, and ``random_state``."""
        params = {name: getattr(self, name) for name in self._tree_params}
        if self._is_classification:
            class_weight = self.class_weight
            if class_weight == "balanced_subsample":
                # Each tree's bootstrap sample weighed by the forest (_in_bag); without
                # bootstrap every tree's sample is every row: 'balanced', as scikit-learn.
                class_weight = None if self.bootstrap else "balanced"
            params["class_weight"] = class_weight
            params["min_purity"] = self.min_purity
        return {**params, "random_state": random_state}

    # -- fitting --------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Grow the forest on X (n_samples, n_features) and y (n_samples,) or
        (n_samples, n_outputs).

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels for a classifier, real targets for a regressor.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows (None: 1 each).

        Returns
        -------
        self
            The fitted estimator.
        """
        # scikit-learn's forests' words
        refuse_sparse_y(y, "sparse multilabel-indicator for y is not supported.")
        with estimator_display(check_verbose(self.verbose)):
            return self._fit(X, y, sample_weight)

    def _fit(self, X, y, sample_weight):
        settings = check_settings(self._tree_parameters(), self._is_classification)
        device = resolve_training_device(settings)
        task = Task(self._is_classification, True, self._tree_class.__name__, "forest")
        # n_estimators is checked below; a value that is no count counts one tree here.
        n_trees = self.n_estimators if isinstance(self.n_estimators, int) else 1
        with numba_threads(self.n_jobs), small_fit_in_python(X, n_trees):
            prepared = prepare(X, y, sample_weight, settings, task, *device)
            check_fit_support(prepared, settings)
            random_thresholds = self._random_thresholds or settings.splitter == "random"
            if random_thresholds:
                kind = "Classifier" if self._is_classification else "Regressor"
                refuse_random_categorical(prepared, type(self).__name__, f"RandomForest{kind}")
            n_samples = prepared.weight.shape[0]
            n_drawn = self._check_forest_params(n_samples)
            attributes = {**input_attributes(prepared), "device_": device.name}
            self._check_kept_trees_read_alike(attributes)
            self._fitted_from(attributes)
            first = self._first_new_tree()
            # As scikit-learn: scored when trees are added, or when asked for the first
            # time of the trees there are (a warm start that adds none).
            score_oob = bool(self.oob_score) and (
                first is not None or not hasattr(self, "oob_score_")
            )
            if score_oob:
                self._check_oob_target()  # before any tree grows
            self._n_samples = n_samples
            self._n_samples_bootstrap = n_drawn if self.bootstrap else None
            if first is None:
                if score_oob:
                    self._set_oob_score(prepared, n_drawn)
                return self
            # No GPU memory check for all rows: batches are sized to fit.
            searched = searched_data(prepared, settings, device.name)
            attributes.update(searched_attributes(searched))
            growing = _Growing(
                settings,
                prepared,
                searched.data,
                device.name,
                forest_row_scales(
                    prepared.weight,
                    None if self._is_classification else prepared.targets,
                    n_drawn if self.bootstrap else n_samples,
                    self._weight_bound(prepared, n_drawn),
                ),
                n_drawn,
                monotonic_constraints(
                    settings, prepared.n_features, prepared.coded, prepared.categories
                ),
                random_thresholds,
            )
            trees = self._grow_trees(growing, range(first, self.n_estimators))
        new = [self._tree_estimator(attributes, tree, t) for t, tree in trees]
        self.estimators_ = [*self.estimators_[:first], *new]
        if score_oob:
            self._set_oob_score(prepared, n_drawn)
        else:  # the trees changed: an earlier fit's out-of-bag attributes no longer hold
            for name in ("oob_score_", "oob_decision_function_", "oob_prediction_"):
                self.__dict__.pop(name, None)
        return self

    def _check_kept_trees_read_alike(self, attributes):
        """A warm start keeps the trees grown before: this fit's input must mean to them
        what it meant then (the same features, outputs, classes and category codes), or
        they would read the new codes with the old ones' meaning."""
        kept = getattr(self, "estimators_", None) if self.warm_start else None
        if not kept:
            return
        before = kept[0]
        way_out = "fit with warm_start=False to grow every tree on this data"
        for name in ("n_features_in_", "n_outputs_"):
            if attributes[name] != getattr(before, name):
                raise ValueError(
                    f"warm_start: this fit has {name}={attributes[name]} but the kept "
                    f"trees have {getattr(before, name)}; {way_out}"
                )
        if not _same_values(
            attributes["feature_names_in_"], getattr(before, "feature_names_in_", None)
        ):
            raise ValueError(
                f"warm_start: the feature names differ from the kept trees'; {way_out}"
            )
        classes = attributes.get("classes_")
        if self._is_classification and not _same_values(classes, before.classes_):
            raise ValueError(
                f"warm_start: the classes {_listed(classes)} differ from the kept "
                f"trees' {_listed(before.classes_)}; {way_out}"
            )
        names = attributes["feature_names_in_"]
        numeric = [None] * attributes["n_features_in_"]
        now = attributes["categories_"] or numeric
        then = getattr(before, "categories_", None) or numeric
        for j, (new, old) in enumerate(zip(now, then, strict=True)):
            if not _same_values(new, old):
                column = names[j] if names is not None else f"feature {j}"
                raise ValueError(
                    f"warm_start: column {column!r} has the categories {_listed(new)} in this "
                    f"fit but {_listed(old)} in the kept trees, which would read its new codes "
                    f"as the old ones; {way_out}"
                )

    def _fitted_from(self, attributes):
        """The forest's fitted attributes that describe the input, as its trees have them."""
        names = ("n_features_in_", "feature_names_in_", "n_outputs_", "classes_", "n_classes_")
        set_attributes(self, {name: attributes.get(name) for name in (*names, "device_")})

    def _first_new_tree(self):
        """The index of the first tree to grow (0 unless warm_start keeps trees); None
        when there is none to grow. Sets the forest's seed on a fresh fit."""
        kept = len(getattr(self, "estimators_", [])) if self.warm_start else 0
        if kept == 0:
            self.estimators_ = []
            self._seed = random_seed(self.random_state)
        if self.n_estimators < kept:
            raise ValueError(
                f"n_estimators={self.n_estimators} must be larger or equal to "
                f"len(estimators_)={kept} when warm_start==True"
            )
        if self.n_estimators == kept:
            warnings.warn(
                "Warm-start fitting without increasing n_estimators does not fit new trees.",
                UserWarning,
                stacklevel=3,
            )
            return None
        return kept

    def _weight_bound(self, prepared, n_drawn):
        """The largest total weight one tree's rows can have."""
        weight = prepared.weight
        if not self.bootstrap:
            return None  # every tree holds every row once
        bound = n_drawn * float(weight.max(initial=0.0))
        if self._is_classification and self.class_weight == "balanced_subsample":
            # One output's balanced weights of a sample of N draws sum to N (each present
            # class's draws weigh N / n_present in all), so a tree weighs at most N times
            # the largest weight. Each further output multiplies a row's weight by at most
            # N / 2 (its class drawn once, among at least two present), or by 1 where the
            # output has one class.
            n_classes = np.atleast_1d(self.n_classes_)
            several = int(np.count_nonzero(n_classes > 1))
            bound *= max(1.0, n_drawn / 2) ** max(several - 1, 0)
            if several > 1:
                self._check_balanced_subsample_range(weight, n_classes, n_drawn, bound)
        return bound

    @staticmethod
    def _check_balanced_subsample_range(weight, n_classes, n_drawn, bound):
        """Several outputs' 'balanced_subsample' weights: refuse a bound so far above the
        smallest weight a drawn row can have (its sample weight over the product of the
        outputs' class counts) that the forest's fixed-point units (bound / 2**61) would
        hold that weight to worse than 1 part in 4096."""
        smallest = float(weight[weight > 0].min(initial=math.inf)) / float(np.prod(n_classes))
        if bound > smallest * 2.0 ** (FIXED_POINT_BITS - 12):
            raise ValueError(
                f"class_weight='balanced_subsample' with {n_classes.size} outputs and "
                f"{n_drawn:,} rows drawn per tree: a tree's rows may weigh up to "
                f"{bound:.3g} in all (each further output multiplies a row's weight by up "
                f"to {n_drawn / 2:g}), too wide a range for the forest's integer statistics "
                "to hold its smallest weights precisely; draw fewer rows per tree "
                "(max_samples), or use class_weight='balanced'"
            )

    def _in_bag(self, tree, prepared, n_drawn):
        """Tree ``tree``'s rows and their weights: its bootstrap sample (rows drawn with
        replacement from a generator keyed by the forest's seed and the tree, each
        weighted by the times drawn), or every row; rows of zero weight left out."""
        weight = prepared.weight
        n_samples = weight.shape[0]
        if self.bootstrap:
            draws = self._bootstrap_counts(tree, n_samples, n_drawn)
            weight = weight * draws
            if self._is_classification and self.class_weight == "balanced_subsample":
                weight = weight * self._balanced_multipliers(prepared.targets, draws)
        rows = np.flatnonzero(weight > 0)
        if rows.size == 0:
            raise ValueError(
                f"tree {tree} drew only rows of zero weight (sample_weight times "
                "class_weight): nothing to fit"
            )
        return rows, weight[rows]

    def _bootstrap_counts(self, tree, n_samples, n_drawn):
        """How many times each row is drawn into tree ``tree``'s bootstrap sample."""
        counts = None
        for drawn in self._bootstrap_draws(tree, n_samples, n_drawn):
            chunk = np.bincount(drawn, minlength=n_samples)
            counts = chunk if counts is None else counts + chunk
        return counts

    def _bootstrap_draws(self, tree, n_samples, n_drawn):
        """Tree ``tree``'s bootstrap sample, the rows in the order drawn (with replacement,
        from a generator keyed by the forest's seed and the tree), chunk by chunk
        (BOOTSTRAP_CHUNK rows, or the number of rows if more): one stream of numbers, so
        the chunks are the one draw of every row's index, without ever holding it."""
        generator = np.random.default_rng([self._seed, tree])
        chunk = max(BOOTSTRAP_CHUNK, n_samples)
        for start in range(0, n_drawn, chunk):
            yield generator.integers(0, n_samples, min(chunk, n_drawn - start))

    def _grow_trees(self, growing, trees):
        """Grow ``trees`` (indices), batch by batch: [(index, Tree)]."""
        settings, prepared = growing.settings, growing.prepared
        one_at_a_time = settings.max_leaf_nodes is not None or (
            settings.min_weight_fraction_leaf > 0 and self.bootstrap
        )
        # A tree holds each row once at most, however many times drawn.
        n_rows = min(growing.n_drawn, prepared.weight.shape[0])
        per_tree = self._bytes_per_tree(growing.data, settings, n_rows, prepared.n_features)
        budget = FOREST_BATCH_BYTES if growing.device == "cpu" else _device_budget()
        batches = [range(t, t + 1) for t in trees] if one_at_a_time else None
        if batches is None:
            batches = [
                range(trees.start + b.start, trees.start + b.stop)
                for b in forest_batches(len(trees), per_tree, budget)
            ]
        self.n_batches_ = len(batches)
        progress_logger.info(
            "growing %d trees in %d batches of up to %d (%.0f MB each)",
            len(trees),
            len(batches),
            len(batches[0]),
            per_tree * len(batches[0]) / 1e6,
            extra=step("forest", 0, len(trees), unit="tree"),
        )
        grown = []
        start = time.perf_counter()
        # Each batch (and level) allocates the same large arrays again: the pages the
        # last one freed are reused instead of faulted in afresh (utils.memory).
        with reusing_freed_memory():
            for batch in batches:
                grown += self._grow_batch(growing, batch)
                progress_logger.info(
                    "%d of %d trees grown (%.2f s)",
                    len(grown),
                    len(trees),
                    time.perf_counter() - start,
                    extra=step(
                        "forest", len(grown), len(trees), unit="tree", done=len(grown) == len(trees)
                    ),
                )
        return grown

    def _grow_batch(self, growing, batch):
        settings, prepared = growing.settings, growing.prepared
        in_bag = [self._in_bag(t, prepared, growing.n_drawn) for t in batch]
        rows = np.concatenate([r for r, _ in in_bag])
        weight = np.concatenate([w for _, w in in_bag])
        batch_rows = row_data(
            prepared.coded,
            prepared.targets[rows],
            weight,
            scales=growing.scales,
            root_sizes=[r.size for r, _ in in_bag],
        )
        backend = make_backend(
            _rows_of(growing.data, rows, growing.device),
            batch_rows,
            device=growing.device,
            splitter=settings.splitter,
        )
        params = growth_params(
            settings,
            prepared.sizes,
            batch_rows.total_weight,
            prepared.categories,
            growing.monotonic_cst,
            growing.random_thresholds,
        )
        params.seed, params.first_tree = self._seed, batch.start
        if settings.min_weight_fraction_leaf:
            # Of a tree's own weight: a batch's trees weigh the same (_grow_trees), so
            # this is the batch's total over its trees.
            tree_weight = batch_rows.total_weight() / len(batch)
            params.min_weight_leaf = settings.min_weight_fraction_leaf * tree_weight
        grower = Grower(backend, batch_rows.layout, params, prepared.n_features)
        trees = grower.grow_forest()
        if settings.ccp_alpha > 0.0:
            trees = [cost_complexity_prune(tree, settings.ccp_alpha) for tree in trees]
        return list(zip(batch, trees, strict=True))

    @staticmethod
    def _bytes_per_tree(data, settings, n_drawn, n_features):
        """About the memory one tree of a batch needs: its rows (codes, index, statistics)
        and two levels of dense histograms at their widest."""
        codes = data.X_binned if isinstance(data, BinnedData) else data
        if isinstance(codes, SparseCodes):
            codes = codes.codes  # (rows' share of the stored values: bounded by a dense row)
        itemsize = np.dtype(codes.dtype).itemsize
        row_bytes = n_drawn * (n_features * itemsize + 64)
        if not isinstance(data, BinnedData):
            return row_bytes
        n_bins = data.bin_lower.shape[1]
        depth = settings.max_depth if settings.max_depth is not None else 64
        widest = min(2 ** min(depth - 1, 40), max(1, n_drawn // n_bins))
        return row_bytes + 2 * widest * n_features * n_bins * 3 * 8

    def _tree_estimator(self, attributes, tree, index):
        """A fitted tree estimator holding ``tree``, with the fit's input attributes."""
        estimator = unfitted_tree(self, index)
        set_attributes(estimator, attributes)
        estimator.tree_ = tree
        return estimator

    # -- out-of-bag -----------------------------------------------------------------------
    def _oob_values(self, prepared, n_drawn):
        """Each row's average leaf values over the trees it was out of bag for, and the
        number of such trees."""
        X = to_host(prepared.X)
        n_samples = X.shape[0]
        total = np.zeros((n_samples, self._n_values()))
        n_trees = np.zeros(n_samples, dtype=np.int64)
        for t, estimator in enumerate(self.estimators_):
            out = np.flatnonzero(self._bootstrap_counts(t, n_samples, n_drawn) == 0)
            if out.size:  # every output's values in a row (several: (n, K, C) flattened)
                total[out] += estimator.tree_.predict(X[out]).reshape(out.size, -1)
                n_trees[out] += 1
        if (n_trees == 0).any():
            warnings.warn(
                "Some inputs do not have OOB scores. This probably means too few trees "
                "were used to compute any reliable OOB estimates.",
                UserWarning,
                stacklevel=5,  # fit's caller
            )
        return total / np.maximum(n_trees, 1)[:, None], n_trees

    def _check_oob_target(self):
        """Refuse, as scikit-learn does, targets whose OOB score has no default: a
        classifier's multiclass-multioutput y (several outputs, one of more than two
        classes), even with a callable ``oob_score``."""
        if not self._is_classification or self.n_outputs_ == 1:
            return
        if int(np.max(self.n_classes_)) > 2:
            raise ValueError(
                "The type of target cannot be used to compute OOB estimates. Got "
                "multiclass-multioutput while only the following are supported: "
                "continuous, continuous-multioutput, binary, multiclass, "
                "multilabel-indicator."
            )

    def _oob_scoring(self, default):
        """The OOB score's function: ``oob_score`` itself if callable (called as
        ``oob_score(y, y_pred)``, as scikit-learn calls it), else ``default``."""
        return self.oob_score if callable(self.oob_score) else default

    @staticmethod
    def _oob_y(prepared):
        """y as scikit-learn passes it to the OOB score: (n_samples, n_outputs), float64
        (a classifier's class indices)."""
        targets = prepared.targets
        return np.ascontiguousarray(targets.reshape(targets.shape[0], -1), dtype=np.float64)

    # -- prediction -----------------------------------------------------------------------
    def _check_fitted(self):
        check_fitted(self, bool(getattr(self, "estimators_", None)))

    def _mean_leaf_values(self, X):
        """The trees' leaf values averaged, (n_samples, n_values); X checked once."""
        self._check_fitted()
        kind, X = prepared_for_predict(self.estimators_[0], X)
        with numba_threads(self.n_jobs):
            if kind == DEVICE:
                return predict_forest_on_device(self._packed_trees(), X, cuda_array_module())
            # Numeric splits of a dense X only: the faster walk, the same bits.
            lockstep = self._packed_trees(lockstep=True) if isinstance(X, np.ndarray) else None
            if lockstep is not None:
                return predict_forest_lockstep(lockstep, X)
            return predict_forest(self._packed_trees(), X)

    def _packed_trees(self, lockstep=False):
        """The trees in one walk table (model.tree.forest_walk_arrays), or with
        ``lockstep`` in one lock-step table (forest_lockstep_arrays: None where a split
        is not numeric), each packed on first use and kept until a tree changes (the key
        holds each tree and its building count). Kept outside the estimator: predicting
        leaves its attributes as they were, as scikit-learn checks."""
        trees = [e.tree_ for e in self.estimators_]
        key = tuple((id(t), t.__dict__.get("_changes", 0), t.node_count) for t in trees)
        cached = _PACKED_TREES.get(self)
        if cached is None or cached[0] != key:
            cached = _PACKED_TREES[self] = (key, {}, trees)
        tables = cached[1]
        if lockstep not in tables:
            pack = forest_lockstep_arrays if lockstep else forest_walk_arrays
            tables[lockstep] = pack(trees)
        return tables[lockstep]

    def apply(self, X):
        """The leaf each sample reaches in each tree: (n_samples, n_estimators).

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        leaves : ndarray of shape (n_samples, n_estimators)
            The node index of each row's leaf in each tree.
        """
        self._check_fitted()
        X = to_host(prepared_for_predict(self.estimators_[0], X).X)
        return np.stack([e.tree_.apply(X) for e in self.estimators_], axis=1)

    def decision_path(self, X):
        """The nodes each sample passes through in every tree, as scikit-learn's forests
        give them: (indicator, n_nodes_ptr), a SciPy CSR matrix (n_samples, the trees'
        nodes side by side) and (n_estimators + 1,) offsets, tree t's columns being
        ``indicator[:, n_nodes_ptr[t]:n_nodes_ptr[t + 1]]``.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        indicator : scipy.sparse.csr_matrix of shape (n_samples, total nodes)
            1 where a row passes through a node, the trees side by side.
        n_nodes_ptr : ndarray of shape (n_estimators + 1,)
            Where each tree's columns start.
        """
        from scipy.sparse import hstack

        self._check_fitted()
        X = to_host(prepared_for_predict(self.estimators_[0], X).X)
        indicators = [e.tree_.decision_path(X) for e in self.estimators_]
        n_nodes_ptr = np.array([0, *(i.shape[1] for i in indicators)]).cumsum()
        return hstack(indicators).tocsr(), n_nodes_ptr

    @property
    def estimators_samples_(self):
        """Each tree's sample, as scikit-learn's forests give it: the indices of the rows
        drawn into its bootstrap sample (``n_samples_bootstrap`` of them, in the order
        drawn, repeats included: its rows' counts are the weights it grew with), or every
        row without bootstrap; int32 (int64 past 2**31 - 1 rows). Drawn again at each
        access, not stored."""
        self._check_fitted()
        n_samples = getattr(self, "_n_samples", None)
        if n_samples is None:
            raise AttributeError(
                "estimators_samples_ is known from the fit only: a forest read from a model "
                "file does not record its training rows"
            )
        n_drawn = self._n_samples_bootstrap
        dtype = np.int32 if n_samples <= np.iinfo(np.int32).max else np.int64
        per_tree = n_samples if n_drawn is None else n_drawn
        needed = len(self.estimators_) * per_tree * np.dtype(dtype).itemsize
        available = _available_memory_bytes()
        if available is not None and needed > available:
            raise MemoryError(
                f"estimators_samples_ of {len(self.estimators_)} trees of {per_tree:,} rows "
                f"each (max_samples={self.max_samples!r}) needs {needed:,} bytes, more than "
                f"the {available:,} bytes of memory available"
            )
        if n_drawn is None:
            return [np.arange(n_samples, dtype=dtype) for _ in self.estimators_]
        samples = []
        for t in range(len(self.estimators_)):
            drawn = np.empty(n_drawn, dtype=dtype)
            start = 0
            for chunk in self._bootstrap_draws(t, n_samples, n_drawn):
                drawn[start : start + chunk.size] = chunk
                start += chunk.size
            samples.append(drawn)
        return samples

    @property
    def feature_importances_(self):
        """The trees' normalised impurity-based importances, averaged (trees that are a
        single leaf left out, as in scikit-learn), normalised to sum to 1."""
        self._check_fitted()
        importances = [
            e.tree_.compute_feature_importances()
            for e in self.estimators_
            if e.tree_.node_count > 1
        ]
        if not importances:
            return np.zeros(self.n_features_in_)
        mean = np.mean(importances, axis=0)
        return mean / mean.sum()

    def save(self, path):
        """Write the fitted forest to ``path`` as a versioned JSON model file.

        Parameters
        ----------
        path : str or path-like
            Where to write the model file.
        """
        from gpu_tree.model.file_format.writing import save_model

        save_model(self, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value, learned per split
        tags.input_tags.sparse = True  # SciPy sparse X: binned as it is (data/sparse.py)
        return tags


# Each fitted forest's packed trees (_BaseForest._packed_trees), while the forest lives.
_PACKED_TREES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _rows_of(data, rows, device):
    """The training data of the rows ``rows`` (a batch's rows, a tree's after another)."""
    if not isinstance(data, BinnedData):
        return data[rows]
    codes = data.X_binned
    if isinstance(codes, SparseCodes):
        return data._replace(X_binned=codes.take_rows(np.asarray(rows, dtype=np.int64)))
    if device == "cuda":
        return data._replace(X_binned=codes[:, cuda_array_module().asarray(rows)])
    if codes.T.flags.c_contiguous:
        # The CPU's codes are row-major (indexed [feature, row] through a transposed
        # view): taking whole rows of the row-major array is 3x faster than indexing the
        # view's columns (about 80 -> 27 ms for a batch of 7 trees of a million rows).
        return data._replace(X_binned=np.take(codes.T, rows, axis=0).T)
    return data._replace(X_binned=codes[:, rows])


def _available_memory_bytes():
    """Bytes of memory available now (Linux's MemAvailable, else free pages), or None
    where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _check_sample_fits(max_samples, n_drawn):
    """Refuse a bootstrap sample whose row indices (int64, as a tree's sample is drawn,
    and as scikit-learn holds it) cannot fit in the memory available: drawn chunk by
    chunk it would not be held, but it could never be returned (estimators_samples_),
    and its draws would take hours."""
    needed = 8 * n_drawn
    available = _available_memory_bytes()
    if available is not None and needed > available:
        raise ValueError(
            f"max_samples={max_samples!r} draws {n_drawn:,} rows per tree, whose indices "
            f"take {needed:,} bytes: more than the {available:,} bytes of memory "
            f"available; use a max_samples of at most {available // 8:,} rows"
        )


def _device_budget():
    """Half the GPU's free memory: a batch's rows and histograms (the CPU's budget in the
    simulator)."""
    free = free_device_bytes(cuda_array_module())
    return FOREST_BATCH_BYTES if free is None else free // 2


def _subset_accuracy(y, predicted):
    """The fraction of rows whose every output is predicted right (scikit-learn's
    accuracy_score, for one output or several)."""
    predicted = predicted.reshape(y.shape[0], -1)
    return float(np.mean(np.all(y == predicted, axis=1)))


@documented("forest", "classifier")
class RandomForestClassifier(ClassifierMixin, _BaseForest):
    """A random forest of gpu_tree decision-tree classifiers (Breiman, 2001).

    Attributes
    ----------
    estimators_ : list of DecisionTreeClassifier
        Also ``len(forest)``, ``forest[i]`` and ``iter(forest)``, as scikit-learn's
        ensembles.
    estimator, estimator_ : the kind of tree (unfitted, default parameters), as
        scikit-learn's; ``estimator_params`` the parameters each tree is given.
    estimators_samples_ : list of ndarray
        Each tree's bootstrap sample: the indices of its drawn rows, repeats included
        (every row without bootstrap).
    classes_, n_classes_, n_features_in_, feature_names_in_, n_outputs_
    feature_importances_ : ndarray of shape (n_features,)
    oob_score_ : float
    oob_decision_function_ : ndarray of shape (n_samples, n_classes), or (n_samples,
        n_classes, n_outputs) for multilabel y, as scikit-learn's
    n_batches_ : int
        How many batches the last fit grew its trees in (each batch's levels in one
        histogram pass).
    """

    _tree_class = DecisionTreeClassifier
    _estimator_class = DecisionTreeClassifier
    _is_classification = True
    estimator_params = (*_BaseForest._tree_params, "min_purity")

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        splitter="hist",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=256,
        min_purity=1.0,
        device="auto",
        categorical_features=None,
        categorical_split="binary",
        max_category_subset=2,
        monotonic_cst=None,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.splitter = splitter
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.max_bins = max_bins
        self.min_purity = min_purity
        self.device = device
        self.categorical_features = categorical_features
        self.categorical_split = categorical_split
        self.max_category_subset = max_category_subset
        self.monotonic_cst = monotonic_cst

    def _n_values(self):
        if self.n_outputs_ > 1:  # every output's classes, padded to the most
            return self.n_outputs_ * int(np.max(self.n_classes_))
        return self.n_classes_

    @staticmethod
    def _balanced_multipliers(classes, draws):
        """'balanced_subsample': each row's class weight from its class's count in the
        bootstrap sample (rows counted as often as drawn), scikit-learn's formula
        (compute_sample_weight('balanced', y, indices=sample)); with several outputs
        (``classes`` (n_samples, n_outputs)) the product of every output's."""
        multipliers = np.ones(classes.shape[0])
        for codes in classes.reshape(classes.shape[0], -1).T:
            n_classes = int(codes.max(initial=0)) + 1
            counts = np.bincount(codes, weights=draws, minlength=n_classes)
            present = counts > 0
            of_class = np.zeros(n_classes)
            of_class[present] = counts.sum() / (present.sum() * counts[present])
            multipliers *= of_class[codes]
        return multipliers

    def _set_oob_score(self, prepared, n_drawn):
        """oob_decision_function_, as scikit-learn's: (n_samples, n_classes), or with
        several outputs (n_samples, n_classes, n_outputs) (multilabel y: two classes
        each; an output of one class is padded with zeros); oob_score_ the accuracy (the
        subset accuracy of several outputs, as ``score``) or ``oob_score(y, y_pred)``."""
        proba, _ = self._oob_values(prepared, n_drawn)
        n_samples = proba.shape[0]
        if self.n_outputs_ > 1:  # (n, n_outputs, most classes) flattened
            width = int(np.max(self.n_classes_))
            proba = proba.reshape(n_samples, self.n_outputs_, width).transpose(0, 2, 1)
            proba = np.ascontiguousarray(proba)
        self.oob_decision_function_ = proba
        y = self._oob_y(prepared)
        score = self._oob_scoring(_subset_accuracy)
        self.oob_score_ = score(y, proba.argmax(axis=1))

    def predict_proba(self, X):
        """The trees' class probabilities, averaged: (n_samples, n_classes), or a list of
        one such array per output for multi-output y.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), or a list of n_outputs such arrays
            The trees' class probabilities, averaged.
        """
        values = self._mean_leaf_values(X)
        return values if self.n_outputs_ == 1 else per_output(values, self.n_classes_)

    def predict_log_proba(self, X):
        """The logarithm of the class probabilities.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes), or a list of n_outputs such arrays
            The logarithm of :meth:`predict_proba`.
        """
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return np.log(proba) if self.n_outputs_ == 1 else [np.log(p) for p in proba]

    def predict(self, X):
        """The class of highest mean probability (lowest class index on ties);
        (n_samples, n_outputs) for multi-output y.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        labels : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predicted classes.
        """
        proba = self.predict_proba(X)
        if self.n_outputs_ > 1:
            codes = np.column_stack([to_host(p.argmax(axis=1)) for p in proba])
            return labels_per_output(self.classes_, codes)
        return labels_of_winners(self.classes_, proba.argmax(axis=1))


@documented("forest", "regressor")
class RandomForestRegressor(RegressorMixin, _BaseForest):
    """A random forest of gpu_tree decision-tree regressors (Breiman, 2001).

    Attributes
    ----------
    As :class:`RandomForestClassifier`'s, with ``oob_prediction_`` (n_samples,) or
    (n_samples, n_outputs) for ``oob_decision_function_``, and no ``classes_`` or
    ``n_classes_``.
    """

    _tree_class = DecisionTreeRegressor
    _estimator_class = DecisionTreeRegressor
    _is_classification = False

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        splitter="hist",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=True,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=256,
        device="auto",
        categorical_features=None,
        categorical_split="binary",
        max_category_subset=2,
        monotonic_cst=None,
    ):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.splitter = splitter
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.max_bins = max_bins
        self.device = device
        self.categorical_features = categorical_features
        self.categorical_split = categorical_split
        self.max_category_subset = max_category_subset
        self.monotonic_cst = monotonic_cst

    def _n_values(self):
        return self.n_outputs_  # one mean target per output

    def _set_oob_score(self, prepared, n_drawn):
        values, _ = self._oob_values(prepared, n_drawn)
        y = prepared.targets
        self.oob_prediction_ = values[:, 0] if y.ndim == 1 else values
        if callable(self.oob_score):  # as scikit-learn calls it
            self.oob_score_ = self.oob_score(self._oob_y(prepared), self.oob_prediction_)
            return
        # R², of each output and averaged over them (scikit-learn's uniform average). An
        # output of constant y has no spread to explain: as scikit-learn's r2_score
        # (force_finite), it scores 1 where predicted exactly and 0 otherwise, not NaN.
        residual = np.sum((y - self.oob_prediction_) ** 2, axis=0)
        spread = np.sum((y - y.mean(axis=0)) ** 2, axis=0)
        scores = 1.0 - residual / np.where(spread > 0, spread, 1.0)
        constant_score = np.where(residual == 0, 1.0, 0.0)
        self.oob_score_ = float(np.mean(np.where(spread > 0, scores, constant_score)))

    def predict(self, X):
        """The trees' predictions, averaged: (n_samples,), or (n_samples, n_outputs) for
        a multi-output y.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        predictions : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The trees' predictions, averaged.
        """
        values = self._mean_leaf_values(X)
        return values[:, 0] if self.n_outputs_ == 1 else values


@documented("forest", "classifier")
class ExtraTreesClassifier(RandomForestClassifier):
    """Extremely randomised trees (Geurts, Ernst and Wehenkel, "Extremely randomized
    trees", Machine Learning 63, 2006): a forest whose nodes draw, for each of their
    ``max_features`` drawn features, one threshold uniformly between the node's lowest
    and highest value, and split on the best of those. In histogram mode the threshold
    falls between bins: the split follows the last bin whose values all lie at or below
    it. Every tree sees every row unless ``bootstrap=True`` (scikit-learn's default).
    Numeric features only; attributes as :class:`RandomForestClassifier`'s.
    """

    _random_thresholds = True
    _estimator_class = ExtraTreeClassifier

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="gini",
        splitter="hist",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features="sqrt",
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=False,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        class_weight=None,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=256,
        min_purity=1.0,
        device="auto",
        categorical_features=None,
        categorical_split="binary",
        max_category_subset=2,
        monotonic_cst=None,
    ):
        super().__init__(
            n_estimators,
            criterion=criterion,
            splitter=splitter,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            class_weight=class_weight,
            ccp_alpha=ccp_alpha,
            max_samples=max_samples,
            max_bins=max_bins,
            min_purity=min_purity,
            device=device,
            categorical_features=categorical_features,
            categorical_split=categorical_split,
            max_category_subset=max_category_subset,
            monotonic_cst=monotonic_cst,
        )


@documented("forest", "regressor")
class ExtraTreesRegressor(RandomForestRegressor):
    """Extremely randomised regression trees; see :class:`ExtraTreesClassifier`.
    Attributes as :class:`RandomForestRegressor`'s."""

    _random_thresholds = True
    _estimator_class = ExtraTreeRegressor

    def __init__(
        self,
        n_estimators=100,
        *,
        criterion="squared_error",
        splitter="hist",
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=1.0,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        bootstrap=False,
        oob_score=False,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
        ccp_alpha=0.0,
        max_samples=None,
        max_bins=256,
        device="auto",
        categorical_features=None,
        categorical_split="binary",
        max_category_subset=2,
        monotonic_cst=None,
    ):
        super().__init__(
            n_estimators,
            criterion=criterion,
            splitter=splitter,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            bootstrap=bootstrap,
            oob_score=oob_score,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
            ccp_alpha=ccp_alpha,
            max_samples=max_samples,
            max_bins=max_bins,
            device=device,
            categorical_features=categorical_features,
            categorical_split=categorical_split,
            max_category_subset=max_category_subset,
            monotonic_cst=monotonic_cst,
        )


def _same_values(a, b) -> bool:
    """Whether two fitted descriptions (arrays, lists of arrays per output, or None) hold
    the same values in the same order."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(_same_values(x, y) for x, y in zip(a, b, strict=True))
        )
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all(a == b))


def _listed(values) -> str:
    """Values for a message: a list, shortened past ten."""
    if values is None:
        return "none (numeric)"
    if isinstance(values, list):
        return "[" + ", ".join(_listed(v) for v in values) + "]"
    shown = np.asarray(values).tolist()
    return str(shown if len(shown) <= 10 else [*shown[:10], "..."])
