"""Multiclass classification through binary classifiers arranged as a tree: the decision
DAG (Platt, Cristianini and Shawe-Taylor, "Large margin DAGs for multiclass
classification", NIPS 2000) and the adaptive DAG (Kijsirikul and Ussivakul, "Multiclass
support vector machines using adaptive directed acyclic graph", IJCNN 2002).

Both combine binary classifiers into a multiclass one without the "no-decision" regions
of simple voting, in two ways:

- the **DAG** (directed acyclic graph): K - 1 classifiers in a tree. The top one
  separates a group of classes from another ({w1, w2} against {w3, w4}), each lower one
  splits the group it receives again, until one class is left; prediction goes from the
  root *down* and evaluates log2(K) classifiers. "Performance will depend on ordering of
  classes"; it is "possible to use purity measures" to choose it: :func:`group_classes`
  does.
- the **adaptive DAG** (ADAG): K(K - 1)/2 pairwise classifiers and a "knockout"
  competition from the leaves *up*: w1 against w2 (w1 wins), w3 against w4 (w4 wins),
  then w1 against w4 for the final result. "Classifier 1 changes depending on the class
  outputs": which pair meets later depends on who won earlier. K - 1 evaluations.

Classifiers and evaluations per prediction:

======  =============  ============
System  # classifiers  # operations
======  =============  ============
DAG     K - 1          log2(K)
ADAG    K(K - 1)/2     K - 1
======  =============  ============
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.stats import StatsLayout
from gpu_tree.data.validation import check_sample_weight
from gpu_tree.estimators import DecisionTreeClassifier
from gpu_tree.growing.criteria import check_criterion, score_tolerance, weighted_split_score
from gpu_tree.utils.compat import BaseEstimator, ClassifierMixin

KINDS = ("dag", "adag")


# -- the DAG's class grouping -------------------------------------------------------------------


class ClassGrouping(NamedTuple):
    """How :func:`group_classes` divides a node's classes.

    ``first`` and ``second``: the two groups, as sorted tuples of the node's class
    indices (``first`` the larger, or of equal sizes the one holding class 0).
    ``feature`` and ``threshold``: the axis-parallel split they were read from (rows with
    ``X[:, feature] <= threshold`` on its left side, NaN on its right); -1 and NaN where
    the rows offer no split and the classes were grouped in their order.
    """

    first: tuple
    second: tuple
    feature: int
    threshold: float


def group_classes(X, labels, sample_weight, n_classes, criterion="gini") -> ClassGrouping:
    """Divide classes 0 .. ``n_classes`` - 1 into two groups of ceil(k/2) and floor(k/2)
    classes, by a purity measure (the DAG's grouping).

    1. The best axis-parallel split of the rows for their multiclass ``labels``: the
       largest impurity decrease by ``criterion`` (any classification criterion of
       :mod:`gpu_tree.growing.criteria`, whose formulas score it), thresholds between
       consecutive distinct values of each feature, NaN sorted last (on the right).
       Scores within rounding of the best (:func:`score_tolerance`) tie: the first
       feature, then the lowest threshold, wins.
    2. Of the divisions into groups of ceil(k/2) and floor(k/2) classes, the one that
       disagrees least with that split: the least weight of rows whose class's group is
       on the other side of the split from them. That is: each class goes to the side
       holding most of its weight (the left one on a tie), then the side holding more
       classes than its share gives the other those of smallest difference
       |left weight - right weight| (ties: class order).

    Rows of zero weight take no part. Where no feature has two distinct values, the
    first ceil(k/2) classes form the first group. Deterministic.

    ``labels``: the rows' classes, integers in [0, n_classes); ``sample_weight``: their
    weights (None: 1 each).
    """
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.intp)
    weight = np.ones(len(labels)) if sample_weight is None else np.asarray(sample_weight, float)
    criterion = check_criterion(criterion, is_classification=True)
    larger_size = math.ceil(n_classes / 2)
    positive = weight > 0
    X, labels, weight = X[positive], labels[positive], weight[positive]

    split = _best_axis_parallel_split(X, labels, weight, n_classes, criterion)
    if split is None:
        order = tuple(range(n_classes))
        return ClassGrouping(order[:larger_size], order[larger_size:], -1, math.nan)
    feature, threshold, left_weight, right_weight = split

    on_left = left_weight >= right_weight
    moving_cost = np.abs(left_weight - right_weight)  # weight that changes sides by a move
    surplus = max(on_left.sum(), (~on_left).sum()) - larger_size
    if surplus > 0:
        crowded_side = on_left if on_left.sum() > larger_size else ~on_left
        candidates = np.flatnonzero(crowded_side)
        # lexsort: the last key is the primary one; class order breaks ties.
        cheapest = candidates[np.lexsort((candidates, moving_cost[candidates]))][:surplus]
        on_left[cheapest] = ~on_left[cheapest]
    left = tuple(int(c) for c in np.flatnonzero(on_left))
    right = tuple(int(c) for c in np.flatnonzero(~on_left))
    if len(right) > len(left) or (len(right) == len(left) and 0 in right):
        left, right = right, left
    return ClassGrouping(left, right, feature, threshold)


def _best_axis_parallel_split(X, labels, weight, n_classes, criterion):
    """(feature, threshold, left class weights, right class weights) of the best split,
    or None where there is none (see :func:`group_classes`)."""
    layout = StatsLayout(True, n_classes, has_count_channel=False)
    class_weights = np.zeros((len(labels), n_classes))
    class_weights[np.arange(len(labels)), labels] = weight
    parent = class_weights.sum(axis=0)

    def candidates(feature):
        """Sorted values, cumulative class weights and split positions of a feature."""
        order = np.argsort(X[:, feature], kind="stable")
        values = X[order, feature]
        missing = np.isnan(values)
        # A split goes between distinct values; NaN != NaN, yet two NaN are one value.
        distinct = (values[1:] != values[:-1]) & ~(missing[1:] & missing[:-1])
        return values, np.cumsum(class_weights[order], axis=0), np.flatnonzero(distinct)

    scores_by_feature = []
    for feature in range(X.shape[1]):
        _, cumulative, positions = candidates(feature)
        left = cumulative[positions]
        scores_by_feature.append(
            weighted_split_score(criterion, layout, left, parent - left, parent)
        )
    best = max((s.max() for s in scores_by_feature if s.size), default=None)
    if best is None:
        return None
    lowest_tie = best - score_tolerance(criterion, layout, parent, best)
    feature = next(f for f, s in enumerate(scores_by_feature) if s.size and s.max() >= lowest_tie)
    values, cumulative, positions = candidates(feature)
    position = positions[np.argmax(scores_by_feature[feature] >= lowest_tie)]
    left_weight = cumulative[position]
    return feature, float(values[position]), left_weight, parent - left_weight


# -- the estimator --------------------------------------------------------------------------------


class DAGClassifier(ClassifierMixin, BaseEstimator):
    """A multiclass classifier made of binary classifiers arranged as a tree: the decision
    DAG (Platt, Cristianini and Shawe-Taylor, NIPS 2000) or the adaptive DAG (Kijsirikul
    and Ussivakul, IJCNN 2002).

    Parameters
    ----------
    estimator : scikit-learn binary classifier, default None
        The binary classifier, cloned (``sklearn.base.clone``) for every node or pair and
        fitted on labels 0 and 1. None: ``gpu_tree.DecisionTreeClassifier()``. It needs
        ``fit`` and ``predict``; ``predict_proba`` too for this estimator's; a
        ``sample_weight`` argument of ``fit`` for weighted fits.
    kind : {"dag", "adag"}, default "dag"
        ``"dag"``: K - 1 classifiers in a tree, each separating two groups of classes;
        prediction from the root down. ``"adag"``: one classifier per pair of classes,
        K(K - 1)/2, and a knockout competition from the leaves up.
    criterion : str, default "gini"
        The purity measure that groups the classes of the DAG (``group_classes`` in
        ``gpu_tree.ensemble.dag``):
        any classification criterion of the trees ("gini", "entropy", ...). The ADAG
        groups nothing and ignores it.

    Notes
    -----
    **How it works.** DAG: the root's classes, all K, are divided by ``group_classes`` into a first
    group of ceil(K/2) classes and a second of floor(K/2), by the best axis-parallel
    split of the rows for the multiclass labels (a purity measure); the root's
    classifier learns, on every row, 0 for the first group and 1 for the second. Each
    group of more than one class is a node in turn, whose classifier sees the rows of its
    classes only. With K = 2 that is one classifier on every row; with K = 1, none (every
    prediction is the one class). A row goes down from the root: each node's classifier
    sends it to one group, and a group of one class is the prediction.

    ADAG: one classifier per pair a < b of classes, fitted on the rows of the two (0 for
    a, 1 for b). A prediction is a knockout (w1 against w2, w3
    against w4, then the winners): the classes, in order, are paired first with second,
    third with fourth ..., one left over goes on unopposed, each pair's classifier picks
    the winner, and the winners, in order, meet in the next round until one is left.

    Prediction evaluates only the classifiers on each row's path, each classifier once per
    node (DAG) or match (ADAG) on all the rows that reach it together.

    **Evaluations per prediction.** DAG: a prediction of class c evaluates ``evaluations_by_class_[c]`` classifiers, the
    depth of c's group of one. The groups halve, so every depth is floor(log2 K) or
    ceil(log2 K): exactly log2 K for every class when K is a power of 2; otherwise at
    most ceil(log2 K) (``n_evaluations_per_prediction_``) and on average over the
    classes sum(depths)/K, for example 3, 3, 2, 2, 2 (mean 2.4) with K = 5. ADAG: K - 1
    for every row, one per match. Both: ``predict``'s cost; ``predict_proba``'s is below.

    **Probabilities.** ``predict_proba`` (where the binary classifier has one) takes each binary classifier's
    probabilities as those of a random choice, and gives the probability of each class
    being the outcome:

    - DAG: the product of the probabilities along the class's path from the root. They
      sum to 1 over the classes.
    - ADAG: the probability of each class winning the knockout when every match is
      decided at random with its classifier's probabilities: computed up the bracket (the
      winner of a match is a from one side with probability P(a from its side) x the sum
      over the other side's b of P(b from its side) x P(a beats b)). They sum to 1.

    Each classifier is evaluated only on the rows that reach it with positive
    probability: with classifiers whose probabilities are 0 or 1 (fully grown trees)
    that is ``predict``'s path; classifiers unsure of their choice send rows down both
    ways, up to all K - 1 (DAG) or K(K - 1)/2 (ADAG) evaluations. The class of highest
    probability is ``predict``'s wherever the classifiers are sure; elsewhere they may
    differ: ``predict`` follows the DAG, taking each classifier's choice as final
    ("mistakes at the top-level cannot be corrected by lower levels").

    Input: numeric features (NaN where the binary classifier accepts it, as gpu_tree's
    trees do); the binary classifiers are fitted on the checked array, so a DataFrame's
    column names stay with this estimator (``feature_names_in_``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str, where X had string column names
    estimators_ : list of fitted binary classifiers
        DAG: its nodes in depth-first order (the root first, a node's first group before
        its second). ADAG: one per pair (a, b), a < b, in the order (0, 1), (0, 2), ...,
        (1, 2), ...
    structure_ : list of (tuple, tuple)
        For each classifier of ``estimators_``, the class labels it learns as 0 and as 1:
        the DAG node's first and second group, or the ADAG pair ((a,), (b,)).
    n_evaluations_per_prediction_ : int
        The most classifiers one prediction evaluates: ceil(log2 K) for the DAG, K - 1
        for the ADAG (0 for one class).
    evaluations_by_class_ : ndarray of shape (n_classes,)
        How many classifiers a prediction of each class evaluates (see above).
    """

    def __init__(self, estimator=None, kind="dag", criterion="gini"):
        self.estimator = estimator
        self.kind = kind
        self.criterion = criterion

    # -- fitting --------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the binary classifiers on X (n_samples, n_features) and the class labels y;
        ``sample_weight`` goes to every one of them, for its rows, and to the grouping.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows, numeric (NaN where the binary classifier takes it).
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        self
            The fitted estimator.
        """
        from sklearn.utils.multiclass import check_classification_targets

        base = self._checked_estimator()
        criterion = check_criterion(self.criterion, is_classification=True)
        if sample_weight is not None and not _accepts_sample_weight(base):
            raise ValueError(
                f"sample_weight was given, but the binary classifier {type(base).__name__} "
                "takes no sample_weight in its fit"
            )
        X, y = self._check_input(X, y, fitting=True)
        check_classification_targets(y)
        weight = None if sample_weight is None else check_sample_weight(sample_weight, len(X))
        self.classes_, encoded = np.unique(y, return_inverse=True)
        self.n_classes_ = len(self.classes_)
        self.estimators_, self.structure_ = [], []
        if self.kind == "dag":
            depths = np.zeros(self.n_classes_, dtype=np.int64)
            self._children = np.empty((0, 2), dtype=np.int64)
            if self.n_classes_ > 1:
                children = []
                self._fit_node(base, criterion, X, encoded, weight, children, depths)
                self._children = np.array(children, dtype=np.int64)
            self.evaluations_by_class_ = depths
        else:
            self._pair_index = {}
            for a in range(self.n_classes_):
                for b in range(a + 1, self.n_classes_):
                    self._pair_index[a, b] = len(self.estimators_)
                    self._fit_classifier(base, X, encoded, weight, [a], [b])
            self.evaluations_by_class_ = np.full(self.n_classes_, self.n_classes_ - 1)
        self.n_evaluations_per_prediction_ = int(self.evaluations_by_class_.max())
        return self

    def _fit_node(self, base, criterion, X, encoded, weight, children, depths, classes=None):
        """Fit the DAG node of ``classes`` (all of them at the root) and, depth first, the
        nodes of its groups; return the node's index. ``children[node]``: for each group,
        its node, or -1 - c for a group of the one class c."""
        classes = np.arange(self.n_classes_) if classes is None else classes
        if len(classes) == 2:
            # Two classes divide one way only: nothing to search.
            first, second = classes[:1], classes[1:]
        else:
            rows = np.isin(encoded, classes)
            grouping = group_classes(
                X[rows],
                np.searchsorted(classes, encoded[rows]),
                None if weight is None else weight[rows],
                len(classes),
                criterion,
            )
            first, second = classes[list(grouping.first)], classes[list(grouping.second)]
        node = self._fit_classifier(base, X, encoded, weight, first, second)
        children.append([0, 0])
        depths[classes] += 1
        for side, group in enumerate((first, second)):
            if len(group) == 1:
                children[node][side] = -1 - int(group[0])
            else:
                children[node][side] = self._fit_node(
                    base, criterion, X, encoded, weight, children, depths, group
                )
        return node

    def _fit_classifier(self, base, X, encoded, weight, first, second) -> int:
        """Fit a clone of the binary classifier on the rows of the classes in ``first``
        (label 0) and ``second`` (label 1); return its index in ``estimators_``."""
        from sklearn.base import clone

        first, second = np.asarray(first), np.asarray(second)
        rows = np.isin(encoded, np.concatenate([first, second]))
        binary_labels = np.isin(encoded[rows], second).astype(np.int64)
        extra = {} if weight is None else {"sample_weight": weight[rows]}
        self.estimators_.append(clone(base).fit(X[rows], binary_labels, **extra))
        self.structure_.append(
            (tuple(self.classes_[first].tolist()), tuple(self.classes_[second].tolist()))
        )
        return len(self.estimators_) - 1

    def _checked_estimator(self):
        """The binary classifier to clone (the default tree for None), checked."""
        try:
            import sklearn  # noqa: F401
        except ImportError as error:  # pragma: no cover - the tests install scikit-learn
            raise ImportError(
                "DAGClassifier clones its binary classifiers with scikit-learn: "
                "pip install scikit-learn"
            ) from error
        if self.kind not in KINDS:
            raise ValueError(f"Unknown kind={self.kind!r}; choose one of {list(KINDS)}")
        base = self._base_estimator()
        missing = [m for m in ("fit", "predict") if not callable(getattr(base, m, None))]
        if missing:
            raise TypeError(
                f"estimator must be a binary classifier with fit and predict; {base!r} has "
                f"no {' or '.join(missing)}"
            )
        tags = _tags_of(base)
        if tags is not None and tags.estimator_type == "regressor":
            raise TypeError(f"estimator must be a classifier, not the regressor {base!r}")
        return base

    def _base_estimator(self):
        return DecisionTreeClassifier() if self.estimator is None else self.estimator

    def _allows_nan(self) -> bool:
        """Whether the binary classifier takes NaN (its scikit-learn tags say so; without
        tags, assume not)."""
        tags = _tags_of(self._base_estimator())
        return tags is not None and bool(tags.input_tags.allow_nan)

    def _check_input(self, X, y, fitting):
        """X as a float array (and y, fitting) checked by scikit-learn, recording (fitting)
        or checking the number and names of the features."""
        from sklearn.utils.validation import validate_data

        X = as_pandas_frame(X)  # polars, pyarrow: through pandas, as the trees read them
        settings = dict(
            dtype=(np.float64, np.float32),
            ensure_all_finite="allow-nan" if self._allows_nan() else True,
        )
        if fitting:
            return validate_data(self, X, y, **settings)
        return validate_data(self, X, reset=False, **settings)

    # -- prediction -----------------------------------------------------------------------------
    def predict(self, X):
        """The class of each row: down the DAG, or the ADAG's knockout winner.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            The predicted classes.
        """
        X = self._checked_X(X)
        if self.n_classes_ == 1:
            return np.repeat(self.classes_, len(X))
        if self.kind == "dag":
            return self.classes_[self._dag_outcomes(X)]
        return self.classes_[self._knockout_winners(X)]

    @property
    def predict_proba(self):
        """predict_proba(X): the probability of each class, (n_samples, n_classes) (see the
        class's "Probabilities"). Exists where the binary classifier has predict_proba."""
        self._require_binary_method("predict_proba")
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """predict_log_proba(X): the logarithm of :meth:`predict_proba`."""
        self._require_binary_method("predict_proba")
        return self._predict_log_proba

    def _predict_proba(self, X):
        X = self._checked_X(X)
        if self.n_classes_ == 1:
            return np.ones((len(X), 1))
        if self.kind == "dag":
            return self._dag_probabilities(X)
        return self._knockout_probabilities(X)

    def _predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self._predict_proba(X))

    def _require_binary_method(self, method):
        base = self._base_estimator()
        if not hasattr(base, method):
            raise AttributeError(
                f"{type(self).__name__} has no {method}: its binary classifier "
                f"{type(base).__name__} has none"
            )

    def _checked_X(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "estimators_")
        return self._check_input(X, None, fitting=False)

    def _dag_outcomes(self, X):
        """The class index each row reaches down the DAG."""
        outcome = np.empty(len(X), dtype=np.intp)
        waiting = [(0, np.arange(len(X)))]  # (node, the rows at it)
        while waiting:
            node, rows = waiting.pop()
            to_second = np.asarray(self.estimators_[node].predict(X[rows])) == 1
            for side, reached in enumerate((rows[~to_second], rows[to_second])):
                child = self._children[node, side]
                if reached.size == 0:
                    continue
                if child < 0:
                    outcome[reached] = -1 - child
                else:
                    waiting.append((child, reached))
        return outcome

    def _dag_probabilities(self, X):
        """The product of the binary probabilities along each class's path."""
        probabilities = np.zeros((len(X), self.n_classes_))
        waiting = [(0, np.arange(len(X)), np.ones(len(X)))]  # (node, rows, reach probability)
        while waiting:
            node, rows, reach = waiting.pop()
            sides = _binary_probabilities(self.estimators_[node], X[rows])
            for side in (0, 1):
                reach_child = reach * sides[:, side]
                onward = reach_child > 0  # rows that cannot get there skip the subtree
                child = self._children[node, side]
                if not onward.any():
                    continue
                if child < 0:
                    probabilities[rows[onward], -1 - child] += reach_child[onward]
                else:
                    waiting.append((child, rows[onward], reach_child[onward]))
        return probabilities

    def _knockout_rounds(self):
        """The knockout's matches, round by round: a round is a list of pairs of
        positions in the previous round's list of slots (each position is a class in the
        first round, a match's winner later), and a slot given a bye: (pairs, bye or
        None). The bracket is the same for every row; only the winners differ."""
        rounds, slots = [], self.n_classes_
        while slots > 1:
            pairs = [(p, p + 1) for p in range(0, slots - 1, 2)]
            rounds.append((pairs, slots - 1 if slots % 2 else None))
            slots = len(pairs) + (slots % 2)
        return rounds

    def _knockout_winners(self, X):
        """The ADAG's knockout, for all rows at once: in each match, the rows are grouped
        by the pair of classes they field and each pair's classifier is called once."""
        slots = [np.full(len(X), c, dtype=np.intp) for c in range(self.n_classes_)]
        for pairs, bye in self._knockout_rounds():
            winners = [self._play(slots[p], slots[q], X) for p, q in pairs]
            slots = winners + ([slots[bye]] if bye is not None else [])
        return slots[0]

    def _play(self, first, second, X):
        """The winner of each row's match between classes first[i] < second[i]."""
        winner = first.copy()
        for (a, b), rows in _rows_by_pair(first, second):
            to_second = np.asarray(self.estimators_[self._pair_index[a, b]].predict(X[rows])) == 1
            winner[rows[to_second]] = b
        return winner

    def _knockout_probabilities(self, X):
        """The probability of each class winning the knockout, matches decided at random
        with the pair classifiers' probabilities; up the same bracket as predict."""
        # A slot: (its classes, in order; (n_rows, len(classes)) chance each wins it).
        slots = [(np.array([c]), np.ones((len(X), 1))) for c in range(self.n_classes_)]
        for pairs, bye in self._knockout_rounds():
            winners = [self._match_probabilities(slots[p], slots[q], X) for p, q in pairs]
            slots = winners + ([slots[bye]] if bye is not None else [])
        return slots[0][1]

    def _match_probabilities(self, first_slot, second_slot, X):
        first_classes, first_chances = first_slot
        second_classes, second_chances = second_slot
        chances = np.zeros((len(X), len(first_classes) + len(second_classes)))
        for i, a in enumerate(first_classes):
            for j, b in enumerate(second_classes):
                meeting = first_chances[:, i] * second_chances[:, j]
                rows = np.flatnonzero(meeting > 0)  # rows where a and b can meet
                if rows.size == 0:
                    continue
                estimator = self.estimators_[self._pair_index[int(a), int(b)]]
                sides = _binary_probabilities(estimator, X[rows])
                chances[rows, i] += meeting[rows] * sides[:, 0]
                chances[rows, len(first_classes) + j] += meeting[rows] * sides[:, 1]
        return np.concatenate([first_classes, second_classes]), chances

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self._allows_nan()
        return tags


def _tags_of(estimator):
    """The estimator's scikit-learn tags, or None for an object that has none."""
    from sklearn.utils import get_tags

    try:
        return get_tags(estimator)
    except AttributeError:
        return None


def _accepts_sample_weight(estimator) -> bool:
    from sklearn.utils.validation import has_fit_parameter

    return has_fit_parameter(estimator, "sample_weight")


def _binary_probabilities(estimator, X):
    """(n_rows, 2): the binary classifier's probabilities of labels 0 and 1 (a label it
    never saw in fit has probability 0)."""
    probabilities = np.zeros((len(X), 2))
    given = np.asarray(estimator.predict_proba(X))
    for column, label in enumerate(np.asarray(estimator.classes_).tolist()):
        probabilities[:, int(label)] = given[:, column]
    return probabilities


def _rows_by_pair(first, second):
    """((a, b), rows) for each distinct pair (first[i], second[i]), in the order of the
    pairs; the rows as an index array."""
    codes = first.astype(np.int64) * (int(second.max()) + 1) + second
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, codes[order][1:] != codes[order][:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], len(order)], strict=True):
        rows = order[start:stop]
        yield (int(first[rows[0]]), int(second[rows[0]])), rows
