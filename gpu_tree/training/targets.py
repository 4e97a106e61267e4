"""The targets of a fit: class labels coded and weighted (class_weight), regression
targets checked, and the rows' statistics (RowData) they become."""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from gpu_tree.backends.rows import RowData
from gpu_tree.data.stats import StatsLayout
from gpu_tree.data.validation import check_classification_labels
from gpu_tree.growing.criteria import check_poisson_targets


class CodedTargets(NamedTuple):
    """y as the tree reads it: class codes (classification; n_classes per output) or the
    targets themselves (regression; ``classes`` and ``n_classes`` None), and the sample
    weights times the class weights."""

    targets: np.ndarray
    weight: np.ndarray
    classes: object  # ndarray of labels; a list of them for several outputs
    n_classes: object  # int; an intp array for several outputs


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


def coded_classes(y, weight, class_weight) -> CodedTargets:
    """A classifier's y coded (classes_ sorted, as scikit-learn's), its weights times
    ``class_weight``'s multipliers."""
    if y.ndim == 2:  # multi-output: each column its own classes, as scikit-learn's
        return _coded_outputs(y, weight, class_weight)
    classes, codes = check_classification_labels(y)
    n_classes = len(classes)
    multipliers = class_weight_multipliers(
        class_weight, classes, lambda: np.bincount(codes, minlength=n_classes)
    )
    return CodedTargets(codes, weight * multipliers[codes], classes, n_classes)


def _coded_outputs(y, weight, class_weight) -> CodedTargets:
    """classes (a list of one array per output) and n_classes (an intp array), as
    scikit-learn's, and the class codes, (n_samples, n_outputs)."""
    columns = [check_classification_labels(y[:, k]) for k in range(y.shape[1])]
    classes = [labels for labels, _ in columns]
    n_classes = np.array([len(labels) for labels in classes], dtype=np.intp)
    encoded = np.column_stack([codes for _, codes in columns]).astype(np.int64)
    if class_weight is None:
        return CodedTargets(encoded, weight, classes, n_classes)
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
            "For multi-output, class_weight should be a list of dicts, or the string 'balanced'."
        )
    for k, (labels, codes) in enumerate(columns):
        count = len(labels)
        multipliers = class_weight_multipliers(
            per_output[k], labels, lambda c=codes, n=count: np.bincount(c, minlength=n)
        )
        weight = weight * multipliers[codes]
    return CodedTargets(encoded, weight, classes, n_classes)


def checked_regression_targets(y, weight, criterion, estimator_kind) -> CodedTargets:
    """A regressor's y, refused where ``criterion`` cannot fit it (Poisson: negative
    targets or a zero sum, in the words scikit-learn's ``estimator_kind`` uses)."""
    if criterion == "poisson":
        check_poisson_targets(y, estimator_kind)
    return CodedTargets(y, weight, None, None)


def row_data(coded: CodedTargets, targets, weight, **options) -> RowData:
    """The rows' statistics of ``targets`` (rows of ``coded.targets``) and their
    ``weight``; ``options`` go to RowData (``scales``, ``root_sizes``)."""
    weighted = not np.all(weight == 1.0)
    if coded.classes is None:
        layout = StatsLayout(False, 0, has_count_channel=weighted)
        return RowData(layout=layout, weight=weight, y=targets, **options)
    if targets.ndim == 2:
        counts = tuple(int(n) for n in coded.n_classes)
        layout = StatsLayout(
            True, sum(counts), weighted, n_outputs=len(counts), class_counts=counts
        )
    else:
        layout = StatsLayout(True, coded.n_classes, has_count_channel=weighted)
    return RowData(layout=layout, weight=weight, y_class=targets, **options)
