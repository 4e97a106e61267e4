"""Evaluation metrics of the command line, each formula written once (numpy only).

Classification: for each class c taken as "positive" against the rest, from
the confusion matrix M (rows: true class, columns: predicted class, n rows in all),

    TP = M[c, c]            FN = sum of row c - TP
    FP = sum of column c - TP        TN = n - TP - FN - FP

    sensitivity = TP / (TP + FN)     specificity = TN / (TN + FP)
    PPV         = TP / (TP + FP)     NPV         = TN / (TN + FN)

A ratio whose denominator is 0 (0/0: the class never occurs, or is never predicted) is
undefined and given as ``None`` ("n/a" in the command line's tables), never 0 and never an
error. Regression: R^2 = 1 - SS_res / SS_tot (``None`` when the true values are all
equal), MAE = mean |y - p|, RMSE = sqrt(mean (y - p)^2).
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
            }
        )
    return rates


def classification_metrics(y_true, y_pred, labels) -> dict:
    """Accuracy, confusion matrix and per-class rates over ``labels`` (in that order)."""
    matrix = confusion_matrix(y_true, y_pred, labels)
    total = int(matrix.sum())
    correct = int(np.trace(matrix))
    return {
        "task": "classification",
        "n_rows": total,
        "accuracy": ratio(correct, total),
        "n_correct": correct,
        "labels": list(labels),
        "confusion_matrix": matrix.tolist(),
        "per_class": per_class_rates(matrix),
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
