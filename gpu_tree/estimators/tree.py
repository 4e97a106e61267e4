"""scikit-learn compatible decision-tree estimators."""

from __future__ import annotations

import inspect

import numpy as np

from gpu_tree.backends.cuda import (
    apply_on_device,
    cuda_array_module,
    labels_of_winners,
    predict_on_device,
)
from gpu_tree.data.categorical import label_codes
from gpu_tree.data.validation import DEVICE, check_sample_weight, check_y
from gpu_tree.model.pruning import (
    cost_complexity_path,
    reduced_error_prune,
    validation_errors,
)
from gpu_tree.model.tree import labels_per_output, per_output
from gpu_tree.training.binning import searched_attributes
from gpu_tree.training.checks import check_feature_costs
from gpu_tree.training.fit import fit_tree, monotonic_constraints, small_fit_in_python
from gpu_tree.training.inputs import (
    PredictInput,
    Task,
    check_fit_support,
    input_attributes,
    prepare,
    prepared_for_predict,
    refuse_random_categorical,
    set_attributes,
)
from gpu_tree.training.parameters import check_settings, documented, resolve_training_device
from gpu_tree.utils.compat import (
    BaseEstimator,
    Bunch,
    ClassifierMixin,
    ParameterNamesOnce,
    RegressorMixin,
    check_fitted,
)
from gpu_tree.utils.device_copies import to_host
from gpu_tree.utils.progress import check_verbose, estimator_display


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


class _BaseDecisionTree(ParameterNamesOnce, BaseEstimator):
    """Shared fitting and prediction; subclasses say how targets become statistics."""

    _is_classification = False
    # Whether fit takes a 2-D y of several outputs (multi-output regression).
    _fits_multi_output = False

    # -- fitting: the training pipeline (gpu_tree.training) ------------------------------
    def _fit(self, X, y, sample_weight=None):
        settings = check_settings(self.get_params(deep=False), self._is_classification)
        device = resolve_training_device(settings)
        task = Task(self._is_classification, self._fits_multi_output, type(self).__name__)
        with estimator_display(check_verbose(self.verbose)), small_fit_in_python(X):
            prepared = prepare(X, y, sample_weight, settings, task, *device)
            if settings.splitter == "random":
                refuse_random_categorical(
                    prepared, "splitter='random'", "splitter='hist' or 'exact'"
                )
            check_fit_support(prepared, settings)
            monotonic_cst = monotonic_constraints(
                settings, prepared.n_features, prepared.coded, prepared.categories
            )
            fitted = fit_tree(prepared, settings, device.name, monotonic_cst)
        set_attributes(
            self,
            {
                **input_attributes(prepared),
                **searched_attributes(fitted.searched),
                "device_": device.name,
                "tree_": fitted.tree,
                "fit_stats_": fitted.fit_stats,
                "fit_setup_stats_": fitted.setup_stats,
            },
        )
        return self

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

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The targets, as for ``fit``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows (None: 1 each).

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

        Parameters
        ----------
        X_val : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The validation rows.
        y_val : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the validation rows.

        Returns
        -------
        self
            The fitted estimator.
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

    # -- prediction helpers -------------------------------------------------------------
    def _check_fitted(self):
        check_fitted(self, hasattr(self, "tree_"))

    def _prepared_X(self, X) -> PredictInput:
        self._check_fitted()
        return prepared_for_predict(self, X)

    def _validate_X_predict(self, X):
        return self._prepared_X(X).X

    def _leaf_values(self, X):
        """``tree_.value`` of each row's leaf, (n_samples, n_outputs): on the GPU for a
        GPU array (one thread per row walks the tree there), else on the CPU."""
        kind, X = self._prepared_X(X)
        if kind == DEVICE:
            return predict_on_device(self.tree_, X, cuda_array_module())
        return self.tree_.predict(X)

    def apply(self, X):
        """Index of the leaf each sample ends up in: ndarray of shape (n_samples,).

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        leaves : ndarray of shape (n_samples,)
            The node index of each row's leaf (a CuPy array for a CuPy X).
        """
        kind, X = self._prepared_X(X)
        if kind == DEVICE:
            return apply_on_device(self.tree_, X, cuda_array_module())
        return self.tree_.apply(X)

    def decision_path(self, X):
        """Sparse indicator (n_samples, node_count) of the nodes each sample passes through.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        indicator : scipy.sparse.csr_matrix of shape (n_samples, node_count)
            1 where a row passes through a node.
        """
        return self.tree_.decision_path(self._validate_X_predict(X))

    def prediction_cost(self, X, feature_costs=None):
        """The cost of predicting each row of X: the sum of the costs of the distinct
        features tested on its path from the root to its leaf (a feature tested twice on
        a path is measured, and paid, once). ``prediction_cost(X).mean()`` is the mean
        cost paid per row.

        Any tree can be costed so, one grown without costs too.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).
        feature_costs : array-like of shape (n_features,), default=None
            The costs to use, finite and >= 0; None: the estimator's
            ``feature_costs``, which must then be set.

        Returns
        -------
        costs : ndarray of shape (n_samples,)
            Each row's cost, float64.
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
        (a temporary file, then a rename). Read it back with :func:`gpu_tree.load`.

        Parameters
        ----------
        path : str or path-like
            Where to write the model file.
        """
        from gpu_tree.model.file_format.writing import save_model

        save_model(self, path)

    def get_depth(self) -> int:
        """The depth of the tree.

        Returns
        -------
        depth : int
            The depth of the deepest leaf (the root alone: 0).
        """
        self._check_fitted()
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """The number of leaves of the tree.

        Returns
        -------
        n_leaves : int
            The number of leaves.
        """
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


@documented("classifier")
class DecisionTreeClassifier(ClassifierMixin, _BaseDecisionTree):
    """Decision-tree classifier with histogram (default) or exact split search."""

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
        """Build the tree from X (n_samples, n_features) and class labels y (n_samples,).

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Class labels (numbers or strings).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows (None: 1 each).

        Returns
        -------
        self
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    def predict_proba(self, X):
        """Class probabilities of the leaf each sample reaches: (n_samples, n_classes), or
        for multi-output y a list of one such array per output.

        A GPU array in gives a GPU array out.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), or a list of n_outputs such arrays
            The class fractions of each row's leaf.
        """
        values = self._leaf_values(X)
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
            The logarithm of :meth:`predict_proba` (-inf for a probability of 0).
        """
        proba = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            if self.n_outputs_ == 1:
                return np.log(proba)
            return [np.log(p) for p in proba]

    def predict(self, X):
        """Majority class of the leaf each sample reaches (lowest class index on ties);
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
        kind, X = self._prepared_X(X)
        if self.n_outputs_ > 1:
            codes = self.tree_.classes_of(self.tree_.apply(to_host(X)))
            return labels_per_output(self.classes_, codes)
        if kind != DEVICE:
            return self.classes_.take(self.tree_.classes_of(self.tree_.apply(X)))
        proba = predict_on_device(self.tree_, X, cuda_array_module())
        return labels_of_winners(self.classes_, proba.argmax(axis=1))


@documented("regressor")
class DecisionTreeRegressor(RegressorMixin, _BaseDecisionTree):
    """Decision-tree regressor (variance reduction, as in Breiman et al.'s CART, 1984,
    the half Poisson deviance or the absolute error), with histogram (default) or exact
    split search.
    """

    _is_classification = False
    _fits_multi_output = True

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
        """Build the tree from X (n_samples, n_features) and real targets y (n_samples,).

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows (None: 1 each).

        Returns
        -------
        self
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    def predict(self, X):
        """Mean target of the leaf each sample reaches: ndarray of shape (n_samples,), or
        (n_samples, n_outputs) for a multi-output y.

        Parameters
        ----------
        X : array-like, DataFrame or sparse matrix of shape (n_samples, n_features)
            The rows: numpy, pandas, polars or Arrow tables, SciPy sparse, or a CuPy
            array (read on the GPU).

        Returns
        -------
        predictions : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The leaves' values.
        """
        return self._leaf_values(X)[..., 0]


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


@documented("classifier")
class ExtraTreeClassifier(DecisionTreeClassifier):
    """An extremely randomised tree (Geurts, Ernst and Wehenkel, "Extremely randomized
    trees", Machine Learning 63, 2006), as scikit-learn's ``ExtraTreeClassifier``: a
    :class:`DecisionTreeClassifier` whose defaults are ``splitter="random"`` (each drawn
    feature gets one threshold drawn uniformly between the node's lowest and highest
    value; the best of those splits wins) and ``max_features="sqrt"``. Meant as the tree
    of an ensemble (:class:`gpu_tree.ExtraTreesClassifier` grows many together)."""

    __init__ = _init_with_defaults(DecisionTreeClassifier, splitter="random", max_features="sqrt")


@documented("regressor")
class ExtraTreeRegressor(DecisionTreeRegressor):
    """An extremely randomised regression tree, as scikit-learn's ``ExtraTreeRegressor``:
    a :class:`DecisionTreeRegressor` whose default is ``splitter="random"`` (see
    :class:`ExtraTreeClassifier`); ``max_features`` stays 1.0 (every feature), as in
    scikit-learn."""

    __init__ = _init_with_defaults(DecisionTreeRegressor, splitter="random", max_features=1.0)
