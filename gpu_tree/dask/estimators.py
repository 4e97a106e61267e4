"""gpu_tree.dask.DecisionTreeClassifier / DecisionTreeRegressor: the in-memory
estimators' parameters and tree, fitted on Dask collections spread over workers."""

from __future__ import annotations

import math
import numbers
import uuid

import numpy as np

from gpu_tree.backends.rows import RowScales
from gpu_tree.dask import shards
from gpu_tree.dask.backend import DistributedBackend, ShardGroup
from gpu_tree.data.binning import BinMapper
from gpu_tree.data.categorical import (
    column_kinds,
    declared_features,
    is_stray_text,
    refuse_text_of_numbers,
    rows_holding_in_column,
    stray_words,
    warn_id_like,
)
from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.stats import (
    StatsLayout,
    add_parts,
    fixed_point_exponent_of,
    sum_of_parts,
    target_exponent_of,
    weight_scale_exponent_of,
)
from gpu_tree.data.validation import check_classification_labels, is_dataframe
from gpu_tree.estimators import tree as local
from gpu_tree.growing.grower import Grower
from gpu_tree.training.fit import growth_params, monotonic_constraints, pruned
from gpu_tree.training.inputs import described_input, learn_categories, set_attributes
from gpu_tree.training.parameters import check_settings, documented, resolve_sizes
from gpu_tree.training.targets import CodedTargets, class_weight_multipliers
from gpu_tree.utils.fit_stats import FitCounters, counting
from gpu_tree.utils.phase_timer import PhaseTimer

# Seconds one call may wait on the workers before the fit fails (a lost worker).
DEFAULT_TIMEOUT = 300.0


def _is_dask(obj) -> bool:
    return hasattr(obj, "__dask_graph__")


def _partitions(collection):
    """The row partitions of a Dask array (one column chunk) or DataFrame/Series, as
    delayed objects, and the feature names (DataFrame) or None."""
    names = None
    if hasattr(collection, "divisions"):  # a DataFrame or Series
        if hasattr(collection, "columns"):
            names = np.asarray(collection.columns, dtype=object)
        return list(collection.to_delayed()), names
    if collection.ndim == 2 and len(collection.chunks[1]) > 1:
        collection = collection.rechunk({1: -1})
    return list(np.ravel(collection.to_delayed())), names


class _DaskMixin:
    """fit on Dask collections; predict, predict_proba and apply map over partitions."""

    def fit(self, X, y, sample_weight=None, *, client=None, timeout=DEFAULT_TIMEOUT):
        """Fit on Dask collections (arrays, DataFrames of pandas partitions) held by the
        workers of ``client`` (default: the current ``distributed.Client``); in-memory
        input fits as the local estimator does.

        A worker that leaves mid-fit fails it within about a second with
        :class:`gpu_tree.dask.WorkerLostError` (its rows went with it); a call that the
        workers do not answer within ``timeout`` seconds fails it with TimeoutError.
        Either way the workers' shards of this fit are released.

        Parameters
        ----------
        X : dask array, dask DataFrame or in-memory X
            The rows, where their partitions are.
        y : dask array or Series, or in-memory y
            The targets, partitioned as X.
        sample_weight : dask array or Series, default=None
            Weights of the rows, partitioned as X.
        client : distributed.Client, default=None
            The cluster; None: the current client.
        timeout : float, default=300
            Seconds to wait for the workers' answer to any one call.

        Returns
        -------
        self
            The fitted estimator.
        """
        if not _is_dask(X):
            return super().fit(X, y, sample_weight)
        from distributed import default_client

        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, numbers.Real)
            or not (0 < timeout < math.inf)
        ):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        client = client or default_client()
        # The device is each worker's to decide: no machine stage here.
        settings = check_settings(self.get_params(deep=False), self._is_classification)
        if self.splitter != "hist":
            raise NotImplementedError("distributed fits search histograms: splitter='hist'")
        if getattr(y, "ndim", 1) > 1:
            raise NotImplementedError(
                "distributed fits take one output: a multi-output y fits on one machine"
            )
        if settings.criterion == "absolute_error":  # its splits need each node's rows
            raise NotImplementedError(
                "distributed fits search histogram sums: criterion='absolute_error' (medians "
                "of each node's rows) fits on one machine only"
            )
        if settings.criterion == "poisson":  # its impurities are measured on the rows
            raise NotImplementedError(
                "criterion='poisson' fits on one machine only for now: its node impurities "
                "(half Poisson deviances) are measured on each node's rows, which a "
                "distributed fit keeps on the workers"
            )
        group = ShardGroup(client, [], timeout)
        try:
            return self._fit_distributed(settings, X, y, sample_weight, group)
        finally:
            group.release()

    def _fit_distributed(self, settings, X, y, sample_weight, group):
        client = group.client
        for what, given in (("y", y), ("sample_weight", sample_weight)):
            if given is not None and not _is_dask(given):
                raise TypeError(
                    f"X is a Dask collection but {what} is a {type(given).__name__}: give "
                    f"{what} as a Dask collection with the same partitions as X"
                )
        # Persisted together, in one graph: a column of the same DataFrame optimised on
        # its own may come out in other partitions (dask-expr fuses a projection's small
        # Parquet partitions), and one read serves all three.
        collections = [c for c in (X, y, sample_weight) if c is not None]
        X, y, *rest = client.persist(collections)
        sample_weight = rest[0] if rest else None
        X_parts, names = _partitions(X)
        y_parts, _ = _partitions(y)
        w_parts = [None] * len(X_parts)
        if sample_weight is not None:
            w_parts, _ = _partitions(sample_weight)
        if not (len(X_parts) == len(y_parts) == len(w_parts)):
            raise ValueError(
                f"X has {len(X_parts)} partitions but y has {len(y_parts)}"
                + ("" if sample_weight is None else f" and sample_weight {len(w_parts)}")
                + ": give them the same partitions (same chunks of rows)"
            )
        n_features = X.shape[1]
        meta = as_pandas_frame(X._meta) if names is not None else np.zeros((0, n_features), X.dtype)
        given_w = [w for w in w_parts if w is not None]
        parts = client.compute([*X_parts, *y_parts, *given_w])
        m = len(X_parts)
        X_f, y_f, w_f = parts[:m], parts[m : 2 * m], parts[2 * m :]
        if sample_weight is None:
            w_f = [None] * len(X_f)
        name = type(self).__name__
        summaries = client.gather(
            [
                client.submit(shards.partition_summary, a, b, c, self._is_classification, name, i)
                for i, (a, b, c) in enumerate(zip(X_f, y_f, w_f, strict=True))
            ]
        )
        for i, (n_X, n_y, n_w, _) in enumerate(summaries):
            if n_X != n_y or (n_w >= 0 and n_w != n_X):
                raise ValueError(
                    f"partition {i}: X has {n_X} rows, y {n_y}"
                    + ("" if n_w < 0 else f", sample_weight {n_w}")
                    + ": X, y and sample_weight need the same partitions"
                )
        n_raw = sum(s[0] for s in summaries)
        if n_raw == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        categories = learn_categories(
            self._distinct_values(client, X_f, meta, names, n_features), names, settings
        )
        if categories.search is not None:
            self._check_category_rows(
                client, X_f, meta, names, [s[0] for s in summaries], categories.maps
            )
        spec = {
            "n_features": n_features,
            "is_classification": self._is_classification,
            "estimator": name,
            "feature_names": names,
            "category_maps": None if categories.search is None else categories.maps,
        }
        coded = CodedTargets(None, None, None, None)
        if self._is_classification:
            labels = [s[3] for s in summaries if s[3] is not None and s[3].size]
            classes, _ = check_classification_labels(np.concatenate(labels))
            coded = coded._replace(classes=classes, n_classes=len(classes))
            spec["classes"] = classes
            spec["class_weights"] = _distributed_class_weights(
                client, y_f, settings.given.get("class_weight"), classes
            )
        sizes = resolve_sizes(settings, n_raw, n_features)
        set_attributes(self, described_input(n_features, names, 1, sizes, categories, coded))
        # Shards: each worker's partitions, in partition order.
        who_has = client.who_has(X_f)
        by_worker: dict = {}
        for i, f in enumerate(X_f):
            holders = who_has.get(f.key) or [next(iter(client.scheduler_info()["workers"]))]
            by_worker.setdefault(sorted(holders)[0], []).append(i)
        fit_id = uuid.uuid4().hex
        group.keys.extend((fit_id, address) for address in by_worker)
        loaded = group.run(
            shards.load,
            spec,
            each=[
                (indices, *[a for i in indices for a in (X_f[i], y_f[i], w_f[i])])
                for indices in by_worker.values()
            ],
        )
        del X_f, y_f, w_f, parts
        rows = np.zeros(m, dtype=np.int64)  # kept rows of each partition
        for info, indices in zip(loaded, by_worker.values(), strict=True):
            rows[indices] = info["rows"]
        n = int(rows.sum())
        if n == 0:
            raise ValueError("no row has a positive weight: nothing to fit")
        self._bin_mapper = self._global_bins(group, loaded, by_worker, rows, settings)
        self.missing_in_training_ = self._bin_mapper.missing_by_feature_
        layout, scales = self._global_scales(group, loaded, n)
        # Each worker's backend: "cuda" needs every worker to run CUDA (else the worker's
        # reason is raised); "auto" takes each worker's GPU where it has one. Shards of
        # either kind give the same integers, so one fit may mix them.
        devices = group.run(shards.device, self.device)
        self.device_ = "+".join(sorted(set(devices)))  # "cpu", "cuda", or "cpu+cuda"
        built = group.run(
            shards.build, layout, scales, self._bin_mapper, each=[(d,) for d in devices]
        )
        lower = np.min([b[0] for b in built], axis=0)
        upper = np.max([b[1] for b in built], axis=0)
        root = np.sum([b[2] for b in built], axis=0).astype(built[0][3].dtype)
        layout = built[0][3]
        counters = FitCounters("cpu")  # the client's side: the workers' copies are theirs
        timer = PhaseTimer(np)
        backend = DistributedBackend(
            group,
            lower,
            upper,
            root,
            n,
            self._bin_mapper.missing_bin_,
            layout,
            finishes_subtrees=all(d == "cpu" for d in devices),
        )
        backend.timer = timer
        monotonic_cst = monotonic_constraints(settings, n_features, coded, categories)
        with counting(counters):
            params = growth_params(
                settings,
                sizes,
                lambda: _total_weight(group, scales),
                categories,
                monotonic_cst,
                random_thresholds=False,
            )
            tree = Grower(backend, layout, params, n_features, timer=timer).grow()
            group.settle()  # the last level's routing, and its check
        self.fit_stats_ = timer.fit_stats(counters)
        self.distributed_stats_ = {
            "n_workers": len(group.keys),
            "devices": {key[1]: d for key, d in zip(group.keys, devices, strict=True)},
            "wire": backend.wire_log,
            "bytes_per_level": backend.bytes_per_level(),
        }
        self.tree_ = pruned(tree, settings.ccp_alpha)
        return self

    def _distinct_values(self, client, X_f, meta, names, n_features):
        """What the in-memory fit learns its categories from, in small: every partition's
        distinct values of the columns that may hold categories, unioned in partition
        order (categories seen on one worker only are coded for all). Without such
        columns, the empty ``meta`` (the columns' types) says all there is."""
        candidates = _category_candidates(self.categorical_features, meta, names, n_features)
        if not candidates.any():
            return meta
        pieces = client.gather(
            [client.submit(shards.distinct_values, f, candidates, pure=False) for f in X_f]
        )
        return _union_of_distinct_values(pieces, meta)

    def _check_category_rows(self, client, X_f, meta, names, partition_rows, maps):
        """The in-memory fit's checks of the categorical columns that read rows
        (training.inputs.check_category_columns), on the partitions: a column of text that reads as
        numbers but for a few values is refused, naming its rows (numbered across the
        partitions in order, as in the frame they make), and a column of nearly as many
        categories as rows is warned of."""
        n_features = maps.mask.size
        n_rows = int(sum(partition_rows))
        declared, exact = declared_features(self.categorical_features, n_features, names)
        kinds = column_kinds(meta, n_features)
        offsets = np.cumsum([0, *partition_rows[:-1]])
        for j in [] if exact else maps.features:
            categories = maps.categories.get(int(j))
            if declared[j] or kinds[j] not in ("O", "U", "S") or categories is None:
                continue
            words = stray_words(categories.tolist(), n_rows)
            if words is None:  # its categories clear it: no row is read
                continue
            found = client.gather(
                [
                    client.submit(rows_holding_in_column, part, int(j), words, pure=False)
                    for part in X_f
                ]
            )
            rows = np.concatenate(
                [offset + r for offset, (r, _, _) in zip(offsets, found, strict=True)]
            )
            n_present = sum(n for _, _, n in found)
            if is_stray_text(rows.size, n_present):
                held = dict.fromkeys(v for _, values, _ in found for v in values.tolist())
                refuse_text_of_numbers(j, names, rows, list(held), n_present, categories.size)
        warn_id_like(maps, n_rows, names, stacklevel=4)

    def _global_bins(self, group, loaded, by_worker, rows, settings):
        """The BinMapper the in-memory fit would learn: its row sample, gathered."""
        mapper = BinMapper(max_bins=settings.max_bins, random_state=0)
        n = int(rows.sum())
        sample_at = mapper.sample_rows(n)
        start = np.concatenate([[0], np.cumsum(rows)])  # partitions' first global row
        # Per partition, the sample's rows in its global range (sample_at is sorted), as
        # positions in its shard: the client's memory goes with the sample, not the rows.
        at, taken_by_shard = [], []
        for indices in by_worker.values():
            taken, offset = [], 0
            for i in indices:
                first, end = start[i], start[i + 1]
                if sample_at is None:
                    in_range = np.arange(first, end)
                else:
                    bounds = np.searchsorted(sample_at, [first, end])
                    in_range = sample_at[bounds[0] : bounds[1]]
                at.append(in_range)
                taken.append(in_range - first + offset)
                offset += end - first
            taken_by_shard.append((np.concatenate(taken),))
        sample = np.concatenate(group.run(shards.sample_rows, each=taken_by_shard))
        sample = sample[np.argsort(np.concatenate(at))]
        missing = np.any([info["missing"] for info in loaded], axis=0)
        return mapper.fit_sample(
            sample,
            missing,
            self._category_maps.n_categories(),
            getattr(self, "feature_names_in_", None),
        )

    def _global_scales(self, group, loaded, n):
        """The fit's RowScales (and layout), as the in-memory RowData would find them on
        every row, from exact sums and a radix select over the shards."""
        run = group.run
        weights = [info["weight_parts"] for info in loaded]
        unit = all(info["unit"] for info in loaded)
        if self._is_classification:
            layout = StatsLayout(True, self.n_classes_, has_count_channel=not unit)
        else:
            layout = StatsLayout(False, 0, has_count_channel=not unit)
        scale = weight_scale_exponent_of(sum_of_parts(add_parts(*weights)), n)
        weight_exponent = 0
        if layout.has_count_channel:
            total = sum_of_parts(add_parts(*run(shards.weight_abs_parts, scale)))
            weight_exponent = fixed_point_exponent_of(total)
        scales = RowScales(scale, weight_exponent, n)
        if self._is_classification:
            return layout, scales
        centre = _lower_median(run, n)
        highest = max(info["y_max"] for info in loaded if info["y_max"] is not None)
        lowest = min(info["y_min"] for info in loaded if info["y_min"] is not None)
        total_weight = _total_weight(group, scales)
        t = target_exponent_of(highest, lowest, centre, total_weight)
        scales = scales._replace(centre=centre, target_exponent=t)
        total = sum_of_parts(add_parts(*run(shards.weighted_sum_parts, layout, scales)))
        return layout, scales._replace(sum_exponent=fixed_point_exponent_of(total))

    # -- prediction ------------------------------------------------------------------------
    def _map(self, method, X, n_outputs=None, dtype=float):
        if not _is_dask(X):
            return getattr(super(), method)(X)
        estimator = self.to_local()

        def call(block):
            # An empty partition or chunk (a filter's, say) has an empty answer: the
            # in-memory estimator refuses 0 rows, as scikit-learn's does.
            if len(block) == 0:
                return np.empty((0,) if n_outputs is None else (0, n_outputs), dtype=dtype)
            return getattr(estimator, method)(block)

        if hasattr(X, "divisions"):
            import pandas as pd

            def run(frame):
                out = call(frame)
                if out.ndim == 1:
                    return pd.Series(out, index=frame.index)
                return pd.DataFrame(out, index=frame.index)

            return X.map_partitions(run)
        if X.ndim == 2 and len(X.chunks[1]) > 1:
            X = X.rechunk({1: -1})
        if n_outputs is None:
            return X.map_blocks(call, drop_axis=1, dtype=dtype)
        return X.map_blocks(call, chunks=(X.chunks[0], (n_outputs,)), dtype=dtype)

    def apply(self, X):
        """The leaf each sample reaches.

        Parameters
        ----------
        X : dask array, dask DataFrame or in-memory X
            The rows; Dask collections are predicted partition by partition on the
            workers, into a Dask collection.

        Returns
        -------
        leaves : dask array of shape (n_samples,)
            The node index of each row's leaf (an ndarray for in-memory X).
        """
        return self._map("apply", X, dtype=np.int64)

    def predict(self, X):
        """The prediction of each sample.

        Parameters
        ----------
        X : dask array, dask DataFrame or in-memory X
            The rows; Dask collections are predicted partition by partition on the
            workers, into a Dask collection.

        Returns
        -------
        predictions : dask array of shape (n_samples,)
            The predicted classes or values (an ndarray for in-memory X).
        """
        dtype = self.classes_.dtype if self._is_classification else float
        return self._map("predict", X, dtype=dtype)

    def to_local(self):
        """The in-memory estimator with this fitted tree (and every fitted attribute).

        Returns
        -------
        estimator : gpu_tree.DecisionTreeClassifier or DecisionTreeRegressor
            The in-memory estimator, the same tree.
        """
        self._check_fitted()
        base = self._local_class(**self.get_params())
        for name, value in vars(self).items():
            if name.endswith("_") or name.startswith("_") and not name.startswith("__"):
                setattr(base, name, value)
        return base


def _distributed_class_weights(client, y_f, class_weight, classes):
    """The in-memory estimator's class multipliers, its class counts summed over every
    partition (asked of the workers only for 'balanced')."""

    def count_classes():
        counts = client.gather([client.submit(_label_counts, f, classes, pure=False) for f in y_f])
        return np.sum(counts, axis=0)

    return class_weight_multipliers(class_weight, classes, count_classes)


def _category_candidates(spec, meta, names, n_features) -> np.ndarray:
    """The columns whose distinct values the categories are learned from: those
    ``categorical_features`` names, and unless it names them all (a boolean mask, an
    empty list) those whose type may hold categories (a Dask DataFrame's meta is empty:
    an object column's values cannot tell yet)."""
    declared, exact = declared_features(spec, n_features, names)
    if exact:
        return declared
    kinds = column_kinds(meta, n_features)
    return declared | np.array([kind == "category" or kind in "OUS" for kind in kinds], dtype=bool)


def _union_of_distinct_values(pieces, meta):
    """The partitions' distinct values, one table: category columns by union of their
    categories in partition order (as Dask concatenates partitions), others end to end."""
    if not is_dataframe(meta):
        return np.concatenate(pieces, axis=0)
    import pandas as pd
    from pandas.api.types import union_categoricals

    columns = []
    for j in range(meta.shape[1]):
        parts = [piece.iloc[:, j] for piece in pieces]
        if str(meta.dtypes.iloc[j]) == "category":
            columns.append(pd.Series(union_categoricals(parts)))
        else:
            columns.append(pd.concat(parts, ignore_index=True))
    table = pd.concat(columns, axis=1, ignore_index=True)
    table.columns = meta.columns
    return table


def _total_weight(group, scales):
    """RowData.total_weight of every row: the exact sum of the fixed-point weights."""
    parts = group.run(shards.fixed_weights_parts, scales.weight_scale, scales.weight_exponent)
    return sum_of_parts(add_parts(*parts))


def _label_counts(y, classes):
    return np.bincount(np.searchsorted(classes, np.asarray(y).ravel()), minlength=classes.size)


def _lower_median(run, n):
    """The ((n - 1) // 2)-th smallest target over every shard: a radix select on the
    targets' order keys, 16 bits a round (only counts travel)."""
    k = (n - 1) // 2
    prefix = 0
    for round_, shift in enumerate((48, 32, 16, 0)):
        counts = np.sum(run(shards.key_counts, shift, prefix, 16 * round_), axis=0)
        cumulative = np.cumsum(counts)
        digit = int(np.searchsorted(cumulative, k, side="right"))
        k -= int(cumulative[digit - 1]) if digit else 0
        prefix = (prefix << 16) | digit
    return float(shards.from_order_keys(np.array([prefix], dtype=np.uint64))[0])


@documented("classifier")
class DecisionTreeClassifier(_DaskMixin, local.DecisionTreeClassifier):
    """:class:`gpu_tree.DecisionTreeClassifier` trained on Dask collections."""

    _local_class = local.DecisionTreeClassifier

    def predict_proba(self, X):
        """The class probabilities of each sample.

        Parameters
        ----------
        X : dask array, dask DataFrame or in-memory X
            The rows; Dask collections are predicted partition by partition on the
            workers, into a Dask collection.

        Returns
        -------
        proba : dask array of shape (n_samples, n_classes)
            The class fractions of each row's leaf (an ndarray for in-memory X).
        """
        return self._map("predict_proba", X, n_outputs=self.n_classes_)


@documented("regressor")
class DecisionTreeRegressor(_DaskMixin, local.DecisionTreeRegressor):
    """:class:`gpu_tree.DecisionTreeRegressor` trained on Dask collections."""

    _local_class = local.DecisionTreeRegressor
