"""Evaluation metrics of the command line, each formula written once (numpy only).

Classification: for each class c taken as "positive" against the rest, from
the confusion matrix M (rows: true class, columns: predicted class, n rows in all),

    TP = M[c, c]            FN = sum of row c - TP
    FP = sum of column c - TP        TN = n - TP - FN - FP

    sensitivity = TP / (TP + FN)     specificity = TN / (TN + FP)
    PPV         = TP / (TP + FP)     NPV         = TN / (TN + FN)

    F1          = 2 TP / (2 TP + FP + FN)   (the harmonic mean of sensitivity and PPV)

Macro F1 is the mean of the classes' defined F1 values. From predicted probabilities P
(a row per row, a column per class of the model), with y the true classes:

    log-loss = -mean over rows of ln min(max(P[row, y], eps), 1)   (eps: float64's machine
               epsilon, as scikit-learn clips; a leaf that never saw the class would give
               infinity; 1: a mean of probabilities rounded past it would give -0.0)
    ROC AUC of class c against the rest = the probability that a row of class c scores
               higher on P[:, c] than a row of another class, ties counting half
               (Mann-Whitney U / (positives x negatives), from average ranks)

and the macro ROC AUC is the mean of the classes' defined AUCs (a class with no rows, or
only rows of its own, has none). Two classes: both AUCs equal scikit-learn's binary one.

A ratio whose denominator is 0 (0/0: the class never occurs, or is never predicted) is
undefined and given as ``None`` ("n/a" in the command line's tables), never 0 and never an
error. Regression: R^2 = 1 - SS_res / SS_tot (``None`` when the true values are all
equal), MAE = mean |y - p|, RMSE = sqrt(mean (y - p)^2).

Multi-output models are scored output by output, and as a whole as scikit-learn's
``score`` scores them: subset accuracy (the rows whose every output is right), or the
outputs' R^2 averaged (an output of equal true values counting 1 if predicted exactly,
else 0).
"""

from __future__ import annotations

import math

import numpy as np

from gpu_tree.data.categorical import label_codes


def ratio(numerator, denominator):
    """numerator / denominator as a float, or None when the denominator is 0."""
    return float(numerator) / float(denominator) if denominator else None


def confusion_matrix(y_true, y_pred, labels) -> np.ndarray:
    """Counts M[i, j] of rows whose true label is labels[i] and predicted label labels[j]
    (labels compared as ``_categorical.label_codes`` does: 1 and 1.0 are one label, True
    is not 1).

    Rows whose true or predicted label is not in ``labels`` are refused (ValueError)."""
    n = len(labels)

    def codes(values, what):
        codes = label_codes(values, labels)
        missing = np.flatnonzero(codes < 0)
        if missing.size:
            row = int(missing[0])
            value = np.asarray(values).ravel()[row : row + 1].tolist()[0]
            raise ValueError(f"{what} label {value!r} (row {row}) is not among {list(labels)}")
        return codes

    true_codes, pred_codes = codes(y_true, "true"), codes(y_pred, "predicted")
    if true_codes.size != pred_codes.size:
        raise ValueError(f"{true_codes.size} true labels but {pred_codes.size} predictions")
    return np.bincount(true_codes * n + pred_codes, minlength=n * n).reshape(n, n)


def per_class_rates(matrix) -> list[dict]:
    """Sensitivity, specificity, PPV and NPV of each class against the rest,
    with its one-vs-rest counts; undefined ratios are None."""
    matrix = np.asarray(matrix, dtype=np.int64)
    total = int(matrix.sum())
    rates = []
    for c in range(matrix.shape[0]):
        tp = int(matrix[c, c])
        fn = int(matrix[c, :].sum()) - tp
        fp = int(matrix[:, c].sum()) - tp
        tn = total - tp - fn - fp
        rates.append(
            {
                "support": tp + fn,
                "tp": tp,
                "fn": fn,
                "fp": fp,
                "tn": tn,
                "sensitivity": ratio(tp, tp + fn),
                "specificity": ratio(tn, tn + fp),
                "ppv": ratio(tp, tp + fp),
                "npv": ratio(tn, tn + fn),
                "f1": ratio(2 * tp, 2 * tp + fp + fn),
            }
        )
    return rates


def mean_of_defined(values):
    """The mean of the values that are not None (None when none is)."""
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


def classification_metrics(y_true, y_pred, labels) -> dict:
    """Accuracy, confusion matrix, per-class rates and macro F1 over ``labels`` (in that
    order)."""
    matrix = confusion_matrix(y_true, y_pred, labels)
    rates = per_class_rates(matrix)
    total = int(matrix.sum())
    correct = int(np.trace(matrix))
    return {
        "task": "classification",
        "n_rows": total,
        "accuracy": ratio(correct, total),
        "n_correct": correct,
        "labels": list(labels),
        "confusion_matrix": matrix.tolist(),
        "per_class": rates,
        "macro_f1": mean_of_defined(r["f1"] for r in rates),
    }


def average_ranks(scores) -> np.ndarray:
    """Ranks 1..n of ``scores``, tied scores sharing the mean of their ranks."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], scores.size]
    ranks = np.empty(scores.size)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def roc_auc(is_positive, scores):
    """Area under the ROC curve of ``scores`` for telling the ``is_positive`` rows from the
    others (None without both kinds of row)."""
    is_positive = np.asarray(is_positive, dtype=bool)
    n_positive = int(is_positive.sum())
    n_negative = is_positive.size - n_positive
    if n_positive == 0 or n_negative == 0:
        return None
    rank_sum = float(average_ranks(scores)[is_positive].sum())
    return (rank_sum - n_positive * (n_positive + 1) / 2.0) / (n_positive * n_negative)


def probability_metrics(true_codes, proba) -> dict:
    """Log-loss, each class's ROC AUC against the rest and their macro mean, from the
    probabilities ``proba`` (n_rows, n_classes) and each row's true class index."""
    true_codes = np.asarray(true_codes, dtype=np.int64)
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[0] != true_codes.size or true_codes.size == 0:
        raise ValueError(f"{true_codes.size} true classes but probabilities of {proba.shape}")
    if ((true_codes < 0) | (true_codes >= proba.shape[1])).any():
        raise ValueError("a true class is not among the probabilities' columns")
    of_true_class = proba[np.arange(true_codes.size), true_codes]
    eps = np.finfo(np.float64).eps
    aucs = [roc_auc(true_codes == c, proba[:, c]) for c in range(proba.shape[1])]
    return {
        # Probabilities clipped to at most 1 (a forest's mean may round past it) and the
        # mean subtracted from 0.0, not negated: a perfect model's loss is 0.0, not -0.0.
        "log_loss": float(0.0 - np.mean(np.log(np.clip(of_true_class, eps, 1.0)))),
        "roc_auc_per_class": aucs,
        "macro_roc_auc": mean_of_defined(aucs),
    }


def regression_metrics(y_true, y_pred) -> dict:
    """R^2, MAE and RMSE (R^2 is None when every true value is the same)."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    if y_true.shape != y_pred.shape or y_true.ndim != 1:
        raise ValueError(f"{y_true.shape} true values but {y_pred.shape} predictions")
    if y_true.size == 0:
        raise ValueError("no rows to evaluate")
    residual = y_true - y_pred
    ss_res = float(np.sum(residual**2))
    ss_tot = float(np.sum((y_true - y_true.mean()) ** 2))
    r2 = None if ss_tot == 0 else 1.0 - ss_res / ss_tot
    return {
        "task": "regression",
        "n_rows": int(y_true.size),
        "r2": r2,
        "mae": float(np.mean(np.abs(residual))),
        "rmse": math.sqrt(ss_res / y_true.size),
    }


def subset_accuracy(correct) -> dict:
    """Multi-output classification: the share of rows whose every output is right, from
    ``correct`` (n_rows, n_outputs) booleans: scikit-learn's accuracy_score of 2-D
    labels ("subset accuracy"), which a multi-output classifier's ``score`` is."""
    correct = np.asarray(correct, dtype=bool)
    if correct.ndim != 2 or correct.shape[0] == 0:
        raise ValueError(f"no rows to evaluate, or not one column per output: {correct.shape}")
    n_correct = int(correct.all(axis=1).sum())
    return {
        "accuracy": ratio(n_correct, correct.shape[0]),
        "n_correct": n_correct,
        "n_rows": int(correct.shape[0]),
    }


def multi_output_r2(y_true, y_pred) -> float:
    """Multi-output regression: each output's R^2 averaged, as scikit-learn's
    r2_score(multioutput="uniform_average") gives it (a regressor's ``score``). An
    output whose true values are all equal counts 1.0 when predicted exactly, else 0.0,
    as scikit-learn has it (its R^2 alone, in :func:`regression_metrics`, is None)."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    if y_true.shape != y_pred.shape or y_true.ndim != 2 or y_true.shape[0] == 0:
        raise ValueError(f"{y_true.shape} true values but {y_pred.shape} predictions")
    ss_res = np.sum((y_true - y_pred) ** 2, axis=0)
    ss_tot = np.sum((y_true - y_true.mean(axis=0)) ** 2, axis=0)
    scores = np.where(ss_res == 0, 1.0, 0.0)
    spread = ss_tot != 0
    scores[spread] = 1.0 - ss_res[spread] / ss_tot[spread]
    return float(scores.mean())
