"""The benchmark peers, defined once for ``gputree bench`` and the scripts in bench/.

Each peer grows one tree of the same depth on the same bins: scikit-learn's exact
decision tree, and one round (one iteration) of the histogram boosters, whose defaults
would otherwise stop short of that tree (minimum leaf sizes and hessian sums,
regularisation). cuML's random forest with one tree and no bootstrap is the GPU peer.

A work's ``depth`` None asks for a fully grown tree (scikit-learn's default), and its
``categorical`` names the columns of X that hold category codes (0, 1, 2... as floats,
NaN for missing): the peers with categorical splits of their own (LightGBM,
HistGradientBoosting) are told which columns those are; the others
(``categorical_input == "one-hot"``) must be given those columns one-hot encoded.
LightGBM takes its categorical columns as an argument of ``fit``: fit every peer with
``peer.fit(model, X, y, work)``, which passes them.

:data:`FOREST_PEERS` are the random forests bench/bench_forest.py sets against
``gpu_tree.RandomForestClassifier``: scikit-learn's, LightGBM's and XGBoost's random
forest modes (one round of ``n_estimators`` trees, rows subsampled, features drawn per
node) and cuML's on a GPU, each asked for the same :class:`ForestWork`.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass

# HistGradientBoosting keeps one bin of its 256 for missing values.
SKLEARN_HIST_GB_MAX_BINS = 255
# LightGBM refuses more leaves than this.
LIGHTGBM_MAX_LEAVES = 131072


@dataclass(frozen=True)
class PeerWork:
    """The tree every peer is asked to grow, and the resources it may use."""

    depth: int | None  # None: fully grown (no depth limit)
    bins: int = 256
    n_jobs: int | None = None  # None: the library's default
    seed: int = 0
    device: str = "cpu"  # "cuda": the peer's GPU mode where it has one
    categorical: tuple[int, ...] = ()  # columns of category codes (0..k-1, NaN missing)
    rows: int | None = None  # training rows, where known: bounds an unlimited tree's leaves


@dataclass(frozen=True)
class Peer:
    name: str  # short key: --skip names, JSON keys
    label: str  # what tables print
    module: str  # what must import for the peer to run
    # "cpu", "cuda", or, for a peer with both, the device it runs on for a given work
    device: str | Callable[[PeerWork], str]
    settings: Callable[[PeerWork], dict]
    estimator: Callable[[], type]  # the class, imported only when asked for
    tree_shape: Callable[[object], tuple[int, int]]  # (leaves, depth) of the fitted tree
    # How the peer takes categorical columns: "codes" (declared in its settings or fit
    # arguments) or "one-hot" (it has no categorical splits: encode those columns first).
    categorical_input: str = "one-hot"
    # Arguments of ``fit`` beyond X and y (LightGBM's categorical columns).
    fit_settings: Callable[[PeerWork], dict] = lambda work: {}

    def device_for(self, work: PeerWork) -> str:
        return self.device(work) if callable(self.device) else self.device

    def make(self, work: PeerWork):
        """An unfitted estimator for ``work``; ImportError where the module is missing."""
        return self.estimator()(**self.settings(work))

    def fit(self, model, X, y, work: PeerWork):
        """``model.fit(X, y)`` with the peer's fit arguments for ``work``."""
        return model.fit(X, y, **self.fit_settings(work))

    def available(self) -> bool:
        return importable(self.module)


def importable(module: str) -> bool:
    """Whether ``module`` imports: ImportError, or a broken native library (OSError, ...),
    or cuML's many ways of failing without a GPU all say no."""
    try:
        importlib.import_module(module)
    except Exception:
        return False
    return True


def xgboost_has_cuda() -> bool:
    try:
        import xgboost

        return bool(xgboost.build_info().get("USE_CUDA"))
    except Exception:  # not installed, or an old or odd build: treat it as CPU-only
        return False


def _xgboost_device(work: PeerWork) -> str:
    """XGBoost runs on the GPU for GPU work where its build has CUDA, else on the CPU."""
    return "cuda" if work.device == "cuda" and xgboost_has_cuda() else "cpu"


# -- tree shapes: (leaves, depth) -----------------------------------------------------------


def leaves_and_depth(root, children_of: Callable) -> tuple[int, int]:
    n_leaves, max_depth, stack = 0, 0, [(root, 0)]
    while stack:
        node, depth = stack.pop()
        children = children_of(node)
        if children:
            stack.extend((child, depth + 1) for child in children)
        else:
            n_leaves += 1
            max_depth = max(max_depth, depth)
    return n_leaves, max_depth


def shape_of_estimator_tree(model) -> tuple[int, int]:
    return model.get_n_leaves(), model.get_depth()


def shape_of_lightgbm_tree(model) -> tuple[int, int]:
    root = model.booster_.dump_model()["tree_info"][0]["tree_structure"]
    return leaves_and_depth(
        root, lambda node: [node["left_child"], node["right_child"]] if "left_child" in node else []
    )


def shape_of_xgboost_tree(model) -> tuple[int, int]:
    root = json.loads(model.get_booster().get_dump(dump_format="json")[0])
    return leaves_and_depth(root, lambda node: node.get("children", []))


def shape_of_hist_gb_tree(model) -> tuple[int, int]:
    nodes = model._predictors[0][0].nodes  # private, but the only way to see the tree
    return int(nodes["is_leaf"].sum()), int(nodes["depth"].max())


def _no_shape(model) -> tuple[int, int]:
    raise NotImplementedError("this peer does not expose its tree")


# -- the peers --------------------------------------------------------------------------------


def _sklearn_tree():
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier


def _hist_gb():
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier


def _lightgbm():
    import lightgbm

    return lightgbm.LGBMClassifier


def _xgboost():
    import xgboost

    return xgboost.XGBClassifier


def _cuml_forest():
    from cuml.ensemble import RandomForestClassifier

    return RandomForestClassifier


def _threads(work: PeerWork, key: str) -> dict:
    return {} if work.n_jobs is None else {key: work.n_jobs}


def _hist_gb_categorical(work: PeerWork) -> dict:
    return {"categorical_features": list(work.categorical)} if work.categorical else {}


def _lightgbm_depth(work: PeerWork) -> dict:
    if work.depth is None:
        # No depth limit (-1), and as many leaves as it allows or the rows can fill: it
        # sets up a histogram per possible leaf, so an unneeded 131,072 turned a 1,000-row
        # fit of the same 193-leaf tree from 0.6 s into 82 s.
        rows = LIGHTGBM_MAX_LEAVES if work.rows is None else max(2, work.rows)
        return dict(max_depth=-1, num_leaves=min(rows, LIGHTGBM_MAX_LEAVES))
    return dict(max_depth=work.depth, num_leaves=min(2**work.depth, LIGHTGBM_MAX_LEAVES))


def _lightgbm_categorical(work: PeerWork) -> dict:
    """Its categorical defaults (a minimum of 100 rows per category, smoothing and an
    extra L2 penalty on category splits) would stop it short of the others' tree too."""
    return dict(min_data_per_group=1, cat_smooth=0.0, cat_l2=0.0) if work.categorical else {}


def _xgboost_depth(work: PeerWork) -> dict:
    if work.depth is None:  # XGBoost grows unlimited depth only leaf by leaf
        return dict(grow_policy="lossguide", max_depth=0, max_leaves=0)
    return dict(grow_policy="depthwise", max_depth=work.depth)


def _cuml_depth(work: PeerWork) -> int:
    if work.depth is None:
        raise ValueError("cuML's random forest needs a depth limit; it grows no unlimited tree")
    return work.depth


PEERS: dict[str, Peer] = {
    peer.name: peer
    for peer in (
        Peer(
            name="sklearn",
            label="scikit-learn DecisionTreeClassifier (exact)",
            module="sklearn",
            device="cpu",
            settings=lambda w: dict(
                criterion="gini", splitter="best", max_depth=w.depth, random_state=w.seed
            ),
            estimator=_sklearn_tree,
            tree_shape=shape_of_estimator_tree,
        ),
        Peer(
            name="hist_gb",
            label="scikit-learn HistGradientBoosting (1 iteration)",
            module="sklearn",
            device="cpu",
            settings=lambda w: dict(
                max_iter=1,
                learning_rate=1.0,
                max_depth=w.depth,
                max_leaf_nodes=None,  # the depth is the binding limit
                max_bins=min(w.bins, SKLEARN_HIST_GB_MAX_BINS),
                min_samples_leaf=1,  # default 20
                l2_regularization=0.0,
                early_stopping=False,
                random_state=w.seed,
                **_hist_gb_categorical(w),
            ),
            estimator=_hist_gb,
            tree_shape=shape_of_hist_gb_tree,
            categorical_input="codes",
        ),
        Peer(
            name="lightgbm",
            label="LightGBM (1 round)",
            module="lightgbm",
            device="cpu",
            settings=lambda w: dict(
                n_estimators=1,
                learning_rate=1.0,
                **_lightgbm_depth(w),  # the depth binds, not the number of leaves
                max_bin=w.bins,
                min_child_samples=1,  # default 20; gpu_tree and scikit-learn allow 1-row leaves
                min_child_weight=0.0,
                min_split_gain=0.0,
                reg_alpha=0.0,
                reg_lambda=0.0,
                subsample=1.0,
                colsample_bytree=1.0,
                random_state=w.seed,
                verbose=-1,
                **_lightgbm_categorical(w),
                **_threads(w, "n_jobs"),
            ),
            estimator=_lightgbm,
            tree_shape=shape_of_lightgbm_tree,
            categorical_input="codes",
            fit_settings=lambda w: (
                {"categorical_feature": list(w.categorical)} if w.categorical else {}
            ),
        ),
        Peer(
            name="xgboost",
            label="XGBoost hist (1 round)",
            module="xgboost",
            device=_xgboost_device,
            settings=lambda w: dict(
                n_estimators=1,
                tree_method="hist",
                **_xgboost_depth(w),
                learning_rate=1.0,
                max_bin=w.bins,
                # Its defaults (a hessian sum of 1, about 4 rows, per child; an L2 penalty
                # of 1) would stop it short of the tree the others grow.
                min_child_weight=0.0,
                reg_lambda=0.0,
                device=_xgboost_device(w),
                random_state=w.seed,
                **_threads(w, "n_jobs"),
            ),
            estimator=_xgboost,
            tree_shape=shape_of_xgboost_tree,
        ),
        Peer(
            name="cuml",
            label="cuML random forest (1 tree, no bootstrap)",
            module="cuml",
            device="cuda",
            settings=lambda w: dict(
                n_estimators=1,
                bootstrap=False,
                max_samples=1.0,
                max_features=1.0,
                max_depth=_cuml_depth(w),
                n_bins=w.bins,
                n_streams=1,  # one CUDA stream: the same tree on every run
                random_state=w.seed,
            ),
            estimator=_cuml_forest,
            tree_shape=_no_shape,
        ),
    )
}


# -- the peers on Dask (bench/bench_dask.py) ---------------------------------------------------


@dataclass(frozen=True)
class DaskPeer:
    """A peer's Dask estimator, with the settings of its in-memory twin in :data:`PEERS`
    (``base``): the same one tree, grown from rows spread over Dask workers. Give the
    work ``n_jobs`` the workers' threads (each worker trains with that many)."""

    name: str
    label: str
    base: str  # the key of the in-memory peer whose settings and tree shape it takes
    module: str
    estimator: Callable[[], type]

    def settings(self, work: PeerWork) -> dict:
        return PEERS[self.base].settings(work)

    def make(self, work: PeerWork, client=None):
        """An unfitted estimator for ``work`` on ``client`` (None: the default client)."""
        model = self.estimator()(**self.settings(work))
        if client is not None:
            model.client = client  # both Dask estimators take their client as an attribute
        return model

    def tree_shape(self, model) -> tuple[int, int]:
        return PEERS[self.base].tree_shape(model)

    def available(self) -> bool:
        return importable(self.module)


def _dask_xgboost():
    import xgboost.dask

    return xgboost.dask.DaskXGBClassifier


def _dask_lightgbm():
    import lightgbm

    return lightgbm.DaskLGBMClassifier


DASK_PEERS: dict[str, DaskPeer] = {
    peer.name: peer
    for peer in (
        DaskPeer(
            name="xgboost",
            label="xgboost.dask DaskXGBClassifier (1 round)",
            base="xgboost",
            module="xgboost.dask",
            estimator=_dask_xgboost,
        ),
        DaskPeer(
            name="lightgbm",
            label="lightgbm.dask DaskLGBMClassifier (1 round)",
            base="lightgbm",
            module="lightgbm.dask",
            estimator=_dask_lightgbm,
        ),
    )
}


# -- the forest peers (bench/bench_forest.py) --------------------------------------------------


@dataclass(frozen=True)
class ForestWork:
    """The forest every forest peer is asked to grow: ``n_estimators`` trees, each as
    ``tree`` says (depth, bins, threads, seed, device), with ``max_features`` drawn per
    node as scikit-learn reads it ("sqrt", "log2", an int, a fraction, None: all) out of
    ``n_features``, each on a bootstrap sample or its stand-in (a 63.2 % subsample, the
    share of distinct rows in a bootstrap sample, for the boosters' random forests)."""

    tree: PeerWork
    n_estimators: int
    n_features: int
    max_features: str | int | float | None = "sqrt"

    def features_per_node(self) -> int:
        """How many features a node's search draws, by scikit-learn's rule."""
        n, chosen = self.n_features, self.max_features
        if chosen is None:
            return n
        if chosen == "sqrt":
            return max(1, int(math.sqrt(n)))
        if chosen == "log2":
            return max(1, int(math.log2(n)))
        if isinstance(chosen, int):
            return min(max(1, chosen), n)
        return max(1, int(chosen * n))

    def feature_fraction(self, rounding: str = "round") -> float:
        """:meth:`features_per_node` as a fraction of the features, for a library that
        draws ``round(fraction x features)`` per node (LightGBM) or, ``rounding="down"``,
        ``int(fraction x features)`` in float32 (XGBoost): the same count either way."""
        count = self.features_per_node()
        if count == self.n_features:
            return 1.0
        return (count if rounding == "round" else count + 0.5) / self.n_features


# The share of distinct rows in a bootstrap sample (1 - 1/e): the boosters' random forests
# subsample rows without replacement instead.
BOOTSTRAP_SHARE = 0.632


@dataclass(frozen=True)
class ForestPeer:
    name: str  # short key: --tools names, JSON keys
    label: str  # what tables print
    module: str  # what must import for the peer to run
    device: str | Callable[[PeerWork], str]  # as Peer's, of the work's ``tree``
    settings: Callable[[ForestWork], dict]
    estimator: Callable[[], type]  # the class, imported only when asked for

    def device_for(self, work: ForestWork) -> str:
        return self.device(work.tree) if callable(self.device) else self.device

    def make(self, work: ForestWork):
        """An unfitted forest for ``work``; ImportError where the module is missing."""
        return self.estimator()(**self.settings(work))

    def available(self) -> bool:
        return importable(self.module)


def _sklearn_forest():
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier


def _xgboost_forest():
    import xgboost

    return xgboost.XGBRFClassifier


def _cuml_max_features(work: ForestWork):
    return 1.0 if work.max_features is None else work.max_features


FOREST_PEERS: dict[str, ForestPeer] = {
    peer.name: peer
    for peer in (
        ForestPeer(
            name="sklearn",
            label="scikit-learn RandomForestClassifier",
            module="sklearn",
            device="cpu",
            settings=lambda w: dict(
                n_estimators=w.n_estimators,
                criterion="gini",
                max_depth=w.tree.depth,
                max_features=w.max_features,
                bootstrap=True,
                random_state=w.tree.seed,
                **_threads(w.tree, "n_jobs"),  # its default, None, is one core
            ),
            estimator=_sklearn_forest,
        ),
        ForestPeer(
            name="lightgbm",
            label="LightGBM random forest (boosting_type='rf', 1 round)",
            module="lightgbm",
            device="cpu",
            settings=lambda w: dict(
                boosting_type="rf",
                n_estimators=w.n_estimators,  # rf: every round's trees are averaged
                learning_rate=1.0,
                **_lightgbm_depth(w.tree),
                max_bin=w.tree.bins,
                # rf needs bagging: a 63.2 % subsample for every tree
                subsample=BOOTSTRAP_SHARE,
                subsample_freq=1,
                # features drawn per node, as the other forests do (its per-tree
                # feature_fraction, colsample_bytree, left at 1: one draw for a whole tree
                # made a far weaker forest: 63.5 % against 71.9 % held-out accuracy on
                # 20,000 Higgs-shaped rows, 20 trees of depth 10)
                colsample_bytree=1.0,
                feature_fraction_bynode=w.feature_fraction(),
                min_child_samples=1,  # as the one-tree peer: no minimum leaf stops it short
                min_child_weight=0.0,
                min_split_gain=0.0,
                reg_alpha=0.0,
                reg_lambda=0.0,
                random_state=w.tree.seed,
                verbose=-1,
                **_threads(w.tree, "n_jobs"),
            ),
            estimator=_lightgbm,
        ),
        ForestPeer(
            name="xgboost",
            label="XGBoost XGBRFClassifier (hist, 1 round)",
            module="xgboost",
            device=_xgboost_device,
            settings=lambda w: dict(
                n_estimators=w.n_estimators,  # num_parallel_tree trees in one round
                tree_method="hist",
                **_xgboost_depth(w.tree),
                max_bin=w.tree.bins,
                subsample=BOOTSTRAP_SHARE,
                colsample_bynode=w.feature_fraction("down"),
                min_child_weight=0.0,  # as the one-tree peer: no minimum hessian per child
                reg_lambda=0.0,
                device=_xgboost_device(w.tree),
                random_state=w.tree.seed,
                **_threads(w.tree, "n_jobs"),
            ),
            estimator=_xgboost_forest,
        ),
        ForestPeer(
            name="cuml",
            label="cuML RandomForestClassifier",
            module="cuml",
            device="cuda",
            settings=lambda w: dict(
                n_estimators=w.n_estimators,
                bootstrap=True,
                max_samples=1.0,
                max_features=_cuml_max_features(w),
                max_depth=_cuml_depth(w.tree),
                n_bins=w.tree.bins,
                random_state=w.tree.seed,
            ),
            estimator=_cuml_forest,
        ),
    )
}
