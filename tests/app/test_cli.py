"""The gputree command line: train, predict, evaluate, export, info, bench; its errors,
atomic outputs and progress messages."""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _cli import TENNIS_ARFF, run_cli, use_csv_reader
from _shared_data import SHARED_DATASETS, dataset_path

import gpu_tree
from gpu_tree import __version__
from gpu_tree.app.cli import auto_task
from gpu_tree.app.metrics import classification_metrics, regression_metrics
from gpu_tree.datasets import make_higgs_like
from gpu_tree.utils.atomic_files import atomic_text

SHARED_TENNIS = SHARED_DATASETS / "play_tennis_weather_nominal.arff"

# outlook is a string category; humidity has missing values written three ways; the
# target is text.
DAYS_CSV = """outlook,humidity,wind,temp,play
sunny,85,weak,30,no
sunny,90,strong,,no
overcast,?,weak,28,yes
rain,96,weak,NA,yes
rain,80,weak,20,yes
rain,70,strong,18,no
overcast,65,strong,17,yes
sunny,95,weak,25,no
sunny,70,weak,21,yes
rain,80,weak,24,yes

sunny,70,strong,24,yes
overcast,90,strong,nan,yes
overcast,75,,29,yes
rain,91,strong,22,no
"""


def run(*args):
    return run_cli(*args)


def ok(result):
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def assert_one_line_error(result, *phrases, code=2):
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gputree: error: "), lines[0]
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    assert "Traceback" not in result.stderr + result.stdout


def flat(text):
    return " ".join(text.split())


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def _days_in_python():
    """DAYS_CSV's features (outlook, humidity, wind, temp: strings with None, floats with
    NaN for a missing value) and targets, read with the csv module, not gputree's reader."""
    rows = [r for r in csv.reader(DAYS_CSV.splitlines()[1:]) if r]
    missing = {"", "?", "NA", "nan"}
    X = np.empty((len(rows), 4), dtype=object)
    for i, (outlook, humidity, wind, temp, _) in enumerate(rows):
        X[i] = [
            outlook,
            np.nan if humidity in missing else float(humidity),
            None if wind in missing else wind,
            np.nan if temp in missing else float(temp),
        ]
    return X, [r[-1] for r in rows]


@pytest.fixture(scope="module")
def days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("days")
    data = folder / "days.csv"
    data.write_text(DAYS_CSV)
    model = folder / "model.json"
    ok(run("train", data, "--target", "play", "--categorical", "outlook,wind", "-o", model))
    return data, model


# -- round trips -------------------------------------------------------------------------------
def test_csv_round_trip_train_info_predict_evaluate_export(days, tmp_path):
    from sklearn.metrics import accuracy_score, confusion_matrix

    data, model = days
    info = flat(ok(run("info", model)).stdout)
    assert "gpu_tree.model version 2" in info and f"gpu_tree {__version__}" in info
    assert "DecisionTreeClassifier" in info and "trained on: cpu" in info
    assert "features: 4 (2 categorical)" in info
    assert "outlook categorical, 3 categories (overcast, rain, sunny)" in info
    assert "wind categorical, 2 categories (strong, weak)" in info
    assert "humidity numeric" in info and "temp numeric" in info
    assert "classes: 2: no, yes" in info

    predictions = tmp_path / "p.csv"
    ok(run("predict", model, data, "-o", predictions, "--proba"))
    rows = read_csv(predictions)
    assert rows[0] == ["prediction", "proba_no", "proba_yes"]
    assert len(rows) == 15
    for label, p_no, p_yes in rows[1:]:
        assert label in ("no", "yes") and abs(float(p_no) + float(p_yes) - 1) < 1e-12
    predicted = [r[0] for r in rows[1:]]
    # The same model in Python gives the same predictions and probabilities, row by row,
    # on the rows read here with the csv module; and so does a tree fitted in Python on
    # them with the command line's settings.
    X, truth = _days_in_python()
    loaded = gpu_tree.load(model)
    probabilities = [[float(p) for p in r[1:]] for r in rows[1:]]
    with warnings.catch_warnings():  # X has no column names; the model file has them
        warnings.filterwarnings("ignore", "X does not have valid feature names")
        assert loaded.predict(X).tolist() == predicted
        assert loaded.predict_proba(X).tolist() == probabilities
    fitted = gpu_tree.DecisionTreeClassifier(
        categorical_features=[0, 2], random_state=0, device="cpu"
    ).fit(X, truth)
    assert fitted.predict(X).tolist() == predicted
    assert fitted.predict_proba(X).tolist() == probabilities
    assert accuracy_score(truth, predicted) > 0.9

    metrics_path = tmp_path / "metrics.json"
    shown = ok(run("evaluate", model, data, "--target", "play", "--json", metrics_path)).stdout
    metrics = json.loads(metrics_path.read_text())
    assert metrics["labels"] == ["no", "yes"]
    assert metrics["confusion_matrix"] == confusion_matrix(truth, predicted).tolist()
    assert metrics["accuracy"] == pytest.approx(accuracy_score(truth, predicted))
    assert "confusion matrix (rows: true class, columns: predicted class)" in shown
    assert "sensitivity" in shown and "specificity" in shown and "PPV" in shown
    # F1, ROC AUC and log-loss from the model's own probabilities, as scikit-learn has them.
    from sklearn.metrics import f1_score, log_loss, roc_auc_score

    yes = np.array(probabilities)[:, 1]
    f1 = f1_score(truth, predicted, labels=["no", "yes"], average=None)
    assert [rates["f1"] for rates in metrics["per_class"]] == pytest.approx(f1.tolist())
    assert metrics["macro_f1"] == pytest.approx(f1.mean())
    auc = roc_auc_score(np.asarray(truth) == "yes", yes)
    assert [rates["roc_auc"] for rates in metrics["per_class"]] == pytest.approx([auc, auc])
    assert metrics["macro_roc_auc"] == pytest.approx(auc)
    assert metrics["log_loss"] == pytest.approx(
        log_loss(truth, probabilities, labels=["no", "yes"])
    )
    assert f"macro F1: {f1.mean():.4f}" in shown
    assert f"log-loss: {metrics['log_loss']:.4f}" in shown and "ROC AUC" in shown

    text = ok(run("export", model)).stdout
    assert text.startswith("|--- ") and "class: " in text
    assert text == gpu_tree.export_text(gpu_tree.load(model), max_depth=10**6)


def test_predict_to_stdout_ignores_extra_columns_in_any_order(days, tmp_path):
    data, model = days
    lines = DAYS_CSV.strip().splitlines()
    header = lines[0].split(",")
    shuffled = tmp_path / "shuffled.csv"
    order = [4, 3, 0, 2, 1]  # the target first, columns in another order, plus an extra
    with open(shuffled, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow([header[k] for k in order] + ["comment"])
        for line in lines[1:]:
            if line:
                fields = line.split(",")
                writer.writerow([fields[k] for k in order] + ["free text"])
    result = ok(run("predict", model, shuffled, "-o", "-"))
    baseline = tmp_path / "baseline.csv"
    ok(run("predict", model, data, "-o", baseline))
    assert result.stdout.splitlines() == baseline.read_text().splitlines()


def test_arff_round_trip_builds_the_id3_tennis_tree(tmp_path):
    data = SHARED_TENNIS if SHARED_TENNIS.is_file() else tmp_path / "tennis.arff"
    if not SHARED_TENNIS.is_file():
        data.write_text(TENNIS_ARFF)
    model = tmp_path / "tennis.json"
    trained = ok(
        run(
            "train",
            data,
            "-t",
            "play",
            "--criterion",
            "entropy",
            "--categorical-split",
            "multiway",
            "-o",
            model,
        )
    ).stdout
    assert "14 rows, 4 features (4 categorical)" in trained and "2 classes (no, yes)" in trained
    text = ok(run("export", model)).stdout
    assert text.splitlines()[0].startswith("|--- outlook")  # ID3's root (seed 001)
    result = ok(run("evaluate", model, data, "-t", "play")).stdout
    assert "accuracy: 1.0000 (14 of 14 rows)" in result
    assert "outlook categorical, 3 categories" in flat(ok(run("info", model)).stdout)


def test_npz_regression_round_trip_matches_sklearn_metrics(tmp_path):
    from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X[:, 0] * 2.0 + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=300)
    data = tmp_path / "data.npz"
    np.savez(data, X=X, y=y, feature_names=np.array(["a", "b", "c"]))
    model = tmp_path / "reg.json"
    trained = ok(run("train", data, "--max-depth", "4", "-o", model)).stdout  # target: y
    assert "DecisionTreeRegressor" in trained and "regression" in trained
    predictions = tmp_path / "p.csv"
    ok(run("predict", model, data, "-o", predictions))
    predicted = np.array([float(r[0]) for r in read_csv(predictions)[1:]])
    metrics_path = tmp_path / "m.json"
    shown = ok(run("evaluate", model, data, "--json", metrics_path)).stdout
    metrics = json.loads(metrics_path.read_text())
    assert metrics["r2"] == pytest.approx(r2_score(y, predicted), rel=1e-12)
    assert metrics["mae"] == pytest.approx(mean_absolute_error(y, predicted), rel=1e-12)
    assert metrics["rmse"] == pytest.approx(np.sqrt(mean_squared_error(y, predicted)), rel=1e-12)
    assert "R^2:" in shown and "MAE:" in shown and "RMSE:" in shown
    assert "a numeric" in flat(ok(run("info", model)).stdout)


def test_npy_with_target_index(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4))
    table = np.column_stack([X[:, :2], (X[:, 0] > 0).astype(float), X[:, 2:]])
    data = tmp_path / "data.npy"
    np.save(data, table)
    model = tmp_path / "m.json"
    trained = ok(run("train", data, "--target", "2", "-o", model)).stdout
    assert "DecisionTreeClassifier" in trained and "target 'x2'" in trained
    assert "2 classes (0, 1)" in trained
    result = ok(run("evaluate", model, data, "--target", "2")).stdout
    assert "accuracy: 1.0000" in result
    # The features alone (no target column), by position:
    features_only = tmp_path / "features.npy"
    np.save(features_only, np.delete(table, 2, axis=1))
    predictions = tmp_path / "p.csv"
    ok(run("predict", model, features_only, "-o", predictions))
    assert [int(r[0]) for r in read_csv(predictions)[1:]] == (X[:, 0] > 0).astype(int).tolist()


def test_parquet_round_trip(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    colour = ["red", "blue", None, "green"] * 25
    size = [1.0, None, 3.0, 4.0] * 25
    label = ["a" if c == "red" else "b" for c in colour]
    table = pa.table({"colour": pa.array(colour).dictionary_encode(), "size": size, "label": label})
    data = tmp_path / "data.parquet"
    pq.write_table(table, data)
    model = tmp_path / "m.json"
    trained = ok(run("train", data, "-t", "label", "-o", model)).stdout
    assert "2 features (1 categorical)" in trained  # string columns: categorical by themselves
    assert "accuracy: 1.0000" in ok(run("evaluate", model, data, "-t", "label")).stdout
    info = flat(ok(run("info", model)).stdout)
    assert "colour categorical, 3 categories (blue, green, red)" in info


def test_parquet_without_pyarrow_says_how_to_install(tmp_path, monkeypatch):
    data = tmp_path / "data.parquet"
    data.write_bytes(b"PAR1 not really")
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.compute"):
        monkeypatch.setitem(sys.modules, name, None)
    result = run("train", data, "-t", "y", "-o", tmp_path / "m.json")
    assert_one_line_error(
        result, 'pip install pyarrow (or, in a gpu_tree checkout, pip install ".[parquet]")'
    )
    assert not (tmp_path / "m.json").exists()


def test_ccp_alpha_is_passed_through_when_the_estimator_has_it(days, tmp_path):
    data, _ = days
    model = tmp_path / "pruned.json"
    result = run(
        "train", data, "-t", "play", "-c", "outlook,wind", "--ccp-alpha", "0.05", "-o", model
    )
    if "ccp_alpha" in gpu_tree.DecisionTreeClassifier().get_params():
        ok(result)
        assert "ccp_alpha = 0.05" in ok(run("info", model)).stdout
    else:
        assert_one_line_error(result, "--ccp-alpha")
        assert not model.exists()


# -- metrics -----------------------------------------------------------------------------------
def test_metrics_equal_sklearn_and_undefined_ratios_are_none():
    from sklearn import metrics as skm

    rng = np.random.default_rng(3)
    labels = ["a", "b", "c", "d"]
    y_true = rng.choice(["a", "b", "c"], size=200)  # "d" never occurs
    y_pred = rng.choice(["a", "b", "d"], size=200)  # "c" never predicted
    ours = classification_metrics(y_true, y_pred, labels)
    assert ours["confusion_matrix"] == skm.confusion_matrix(y_true, y_pred, labels=labels).tolist()
    assert ours["accuracy"] == pytest.approx(skm.accuracy_score(y_true, y_pred))
    recall = skm.recall_score(y_true, y_pred, labels=labels, average=None, zero_division=np.nan)
    precision = skm.precision_score(
        y_true, y_pred, labels=labels, average=None, zero_division=np.nan
    )
    one_vs_rest = skm.multilabel_confusion_matrix(y_true, y_pred, labels=labels)
    for k, rates in enumerate(ours["per_class"]):
        (tn, fp), (fn, tp) = one_vs_rest[k]
        expected = {
            "sensitivity": recall[k],
            "ppv": precision[k],
            "specificity": tn / (tn + fp) if tn + fp else np.nan,
            "npv": tn / (tn + fn) if tn + fn else np.nan,
        }
        for name, value in expected.items():
            if np.isnan(value):
                assert rates[name] is None, (labels[k], name)
            else:
                assert rates[name] == pytest.approx(value), (labels[k], name)
    assert ours["per_class"][3]["sensitivity"] is None  # "d": 0/0
    assert ours["per_class"][2]["ppv"] is None  # "c": never predicted
    # F1: "d" never occurs and is predicted (0), "c" occurs and is never predicted (0);
    # scikit-learn's zero_division=nan leaves out only 0/0, as None is left out here.
    f1 = skm.f1_score(y_true, y_pred, labels=labels, average=None, zero_division=np.nan)
    assert [r["f1"] for r in ours["per_class"]] == pytest.approx(f1.tolist())
    macro = skm.f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=np.nan)
    assert ours["macro_f1"] == pytest.approx(macro)
    nothing = classification_metrics(["a"], ["a"], ["a", "b"])["per_class"][1]
    assert nothing["f1"] is None  # never occurs, never predicted: 0/0

    y = rng.normal(size=50)
    p = y + rng.normal(scale=0.3, size=50)
    reg = regression_metrics(y, p)
    assert reg["r2"] == pytest.approx(skm.r2_score(y, p))
    assert reg["mae"] == pytest.approx(skm.mean_absolute_error(y, p))
    assert reg["rmse"] == pytest.approx(np.sqrt(skm.mean_squared_error(y, p)))
    assert regression_metrics(np.ones(3), np.ones(3))["r2"] is None


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_probability_metrics_equal_sklearn_with_ties(n_classes):
    from sklearn import metrics as skm

    from gpu_tree.app.metrics import probability_metrics

    rng = np.random.default_rng(n_classes)
    y = rng.integers(0, n_classes, size=400)
    # Few distinct probabilities, as a tree's leaves give: many ties; and exact zeros.
    proba = rng.integers(0, 4, size=(400, n_classes)).astype(np.float64)
    proba[proba.sum(axis=1) == 0, 0] = 1.0
    proba /= proba.sum(axis=1, keepdims=True)
    ours = probability_metrics(y, proba)
    assert ours["log_loss"] == pytest.approx(skm.log_loss(y, proba, labels=list(range(n_classes))))
    if n_classes == 2:
        expected = [skm.roc_auc_score(y, proba[:, 1])] * 2
    else:
        expected = skm.roc_auc_score(y, proba, multi_class="ovr", average=None).tolist()
    assert ours["roc_auc_per_class"] == pytest.approx(expected)
    assert ours["macro_roc_auc"] == pytest.approx(np.mean(expected))


def test_a_class_without_rows_has_no_roc_auc():
    from gpu_tree.app.metrics import probability_metrics

    proba = np.array([[0.7, 0.2, 0.1], [0.4, 0.5, 0.1], [0.1, 0.8, 0.1]])
    ours = probability_metrics(np.array([0, 1, 1]), proba)
    assert ours["roc_auc_per_class"] == [1.0, 1.0, None]  # class 2: no positive row
    assert ours["macro_roc_auc"] == 1.0
    with pytest.raises(ValueError, match="not among the probabilities' columns"):
        probability_metrics(np.array([0, 3, 1]), proba)


def test_evaluate_fails_when_no_label_was_seen_in_training(days, tmp_path):
    # adult's test file writes "<=50K." where its training file has "<=50K": with every
    # row unseen, an accuracy of 0 would only hide the mistake.
    _, model = days
    data = tmp_path / "dotted.csv"
    data.write_text("outlook,humidity,wind,temp,play\nsunny,90,weak,30,no.\nrain,80,weak,20,yes.\n")
    metrics_path = tmp_path / "m.json"
    result = run("evaluate", model, data, "-t", "play", "--json", metrics_path)
    assert_one_line_error(
        result,
        "none of the 2 rows has a target label the model saw in training: column 'play' "
        "holds no., yes., the model's classes are no, yes",
    )
    assert not metrics_path.exists()


def test_evaluate_shows_na_for_a_class_never_predicted(days, tmp_path):
    _, model = days
    data = tmp_path / "all_sunny.csv"
    data.write_text("outlook,humidity,wind,temp,play\nsunny,90,weak,30,no\nsunny,85,weak,28,no\n")
    metrics_path = tmp_path / "m.json"
    shown = ok(run("evaluate", model, data, "-t", "play", "--json", metrics_path)).stdout
    assert "n/a" in shown
    metrics = json.loads(metrics_path.read_text())
    yes = metrics["per_class"][metrics["labels"].index("yes")]
    assert yes["label"] == "yes" and yes["sensitivity"] is None and yes["ppv"] is None


def test_evaluate_warns_of_labels_the_model_never_saw(days, tmp_path):
    # adult's test file writes "<=50K." where its training file has "<=50K": every row
    # is then an error, and the warning says why rather than leaving a bare 0% accuracy.
    _, model = days
    data = tmp_path / "dotted.csv"
    data.write_text(
        "outlook,humidity,wind,temp,play\nsunny,90,weak,30,no.\nrain,80,weak,20,yes\n"
        "overcast,70,weak,20,yes\n"
    )
    result = ok(run("evaluate", model, data, "-t", "play"))
    warning = flat(result.stderr)
    assert warning.startswith("gputree: warning: 1 of 3 rows have a target label the model never")
    assert "(no.;" in warning and "classes: no, yes" in warning
    assert "accuracy" in result.stdout
    assert "log-loss: n/a (some labels were never seen in training)" in result.stdout


def _boolean_model(tmp_path, n_outputs=1):
    """A classifier fitted in Python on a bool y (classes False, True), saved; its
    features, true labels (n_rows, n_outputs) and predictions."""
    from gpu_tree import DecisionTreeClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 2)).round(3)
    noisy = X + 0.8 * rng.normal(size=X.shape)
    Y = np.c_[noisy[:, 0] > 0, noisy[:, 1] > 0.3][:, :n_outputs]
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(
        X, Y[:, 0] if n_outputs == 1 else Y
    )
    assert model.classes_.dtype == bool if n_outputs == 1 else model.classes_[0].dtype == bool
    path = tmp_path / "boolean.json"
    model.save(path)
    predicted = model.predict(X).reshape(len(X), n_outputs)
    return path, X, Y, predicted, model


def _boolean_text(Y, written):
    return {
        "True/False": Y.astype(str),
        "true/false": np.char.lower(Y.astype(str)),
        "TRUE/FALSE": np.char.upper(Y.astype(str)),
        "1/0": Y.astype(int).astype(str),
    }[written]


@pytest.mark.parametrize("written", ["True/False", "true/false", "TRUE/FALSE", "1/0", ".npz"])
def test_evaluate_scores_a_model_of_boolean_labels_as_scikit_learn_does(written, tmp_path):
    """Issue 43: a model fitted in Python on a bool y has classes False and True, which
    no file holds as such: the CSV text "True" never matched the label True (evaluate
    failed, "true label 'True' (row 0) is not among [False, True]"), nor did an .npz's
    or a Parquet file's booleans, read as 1.0 and 0.0 (no label seen)."""
    from sklearn.metrics import accuracy_score, confusion_matrix, log_loss

    model_path, X, Y, predicted, model = _boolean_model(tmp_path)
    y = Y[:, 0]
    if written == ".npz":
        data = tmp_path / "data.npz"
        np.savez(data, X=X, y=y)
        target = []
    else:
        data = tmp_path / "data.csv"
        truth = _boolean_text(Y, written)[:, 0]
        data.write_text(
            "a,b,y\n" + "".join(f"{a},{b},{t}\n" for (a, b), t in zip(X, truth, strict=True))
        )
        target = ["-t", "y"]
    metrics_path = tmp_path / "metrics.json"
    shown = ok(run("evaluate", model_path, data, *target, "--json", metrics_path)).stdout
    metrics = json.loads(metrics_path.read_text())
    assert metrics["labels"] == [False, True]
    accuracy = accuracy_score(y, predicted[:, 0])
    assert 0.5 < accuracy < 1.0  # a score that a mismatch of labels would change
    assert metrics["accuracy"] == pytest.approx(accuracy)
    assert f"accuracy: {accuracy:.4f}" in shown
    assert metrics["confusion_matrix"] == confusion_matrix(y, predicted[:, 0]).tolist()
    assert metrics["log_loss"] == pytest.approx(log_loss(y, model.predict_proba(X)))


def test_evaluate_counts_a_boolean_model_s_other_labels_as_unseen(tmp_path):
    model_path, X, Y, predicted, _ = _boolean_model(tmp_path)
    truth = Y[:, 0].astype(str).astype(object)
    truth[:3] = ["maybe", "2", "yes"]
    data = tmp_path / "data.csv"
    data.write_text(
        "a,b,y\n" + "".join(f"{a},{b},{t}\n" for (a, b), t in zip(X, truth, strict=True))
    )
    result = ok(run("evaluate", model_path, data, "-t", "y"))
    assert "3 of 80 rows have a target label the model never saw" in flat(result.stderr)
    right = (Y[3:, 0] == predicted[3:, 0]).sum()
    assert f"({right} of 80 rows)" in result.stdout


def test_evaluate_scores_a_multi_output_model_of_boolean_labels(tmp_path):
    from sklearn.metrics import accuracy_score

    model_path, X, Y, predicted, _ = _boolean_model(tmp_path, n_outputs=2)
    truth = _boolean_text(Y, "true/false")
    data = tmp_path / "data.csv"
    data.write_text(
        "a,b,y,z\n" + "".join(f"{a},{b},{t},{u}\n" for (a, b), (t, u) in zip(X, truth, strict=True))
    )
    metrics_path = tmp_path / "metrics.json"
    ok(run("evaluate", model_path, data, "-t", "y,z", "--json", metrics_path))
    metrics = json.loads(metrics_path.read_text())
    for k, output in enumerate(metrics["outputs"]):
        assert output["accuracy"] == pytest.approx(accuracy_score(Y[:, k], predicted[:, k]))
    assert metrics["score"] == pytest.approx(np.all(Y == predicted, axis=1).mean())


def test_text_columns_are_categorical_by_themselves_and_numbers_by_code_on_request(tmp_path):
    """A CSV column holding text is categorical with no option (as Parquet's strings are);
    --categorical is for columns of numbers that are codes. A model trained with a column
    numeric names every column of text at once when predicting a file that has them."""
    data = tmp_path / "d.csv"
    data.write_text(
        "a,colour,b,size,y\n1,red,2,big,0\n3,blue,4,small,1\n2,red,1,,0\n4,blue,3,big,1\n"
    )
    result = ok(run("train", data, "-t", "y", "-o", tmp_path / "m.json"))
    assert "4 features (2 categorical)" in result.stdout
    model = gpu_tree.load(tmp_path / "m.json")
    assert list(model._category_maps.features) == [1, 3]
    assert [list(c) if c is not None else None for c in model.categories_] == [
        None,
        ["blue", "red"],
        None,
        ["big", "small"],
    ]
    result = ok(run("train", data, "-t", "y", "-c", "a", "-o", tmp_path / "m2.json"))
    assert "4 features (3 categorical)" in result.stdout
    numeric = tmp_path / "numeric.csv"
    numeric.write_text("a,colour,b,size,y\n1,1,2,1,0\n3,2,4,2,1\n2,1,1,3,0\n")
    ok(run("train", numeric, "-t", "y", "-o", tmp_path / "m3.json"))
    result = run("predict", tmp_path / "m3.json", data)
    assert_one_line_error(
        result,
        "column 'colour' holds the non-numeric value 'red'",
        "(so do 'size')",
        "the model was trained with this column numeric",
    )


def test_auto_task_rule():
    assert auto_task(None, False) == "classification"  # text
    assert auto_task(np.array([1.0, 2.0, 3.0]), True) == "classification"  # declared
    assert auto_task(np.array([0.0, 1.0, 1.0]), False) == "classification"
    assert auto_task(np.arange(100.0) % 10, False) == "classification"
    assert auto_task(np.arange(15.0), False) == "regression"  # 15 values, 1 row each
    assert auto_task(np.arange(1000.0) % 30, False) == "regression"  # > 20 values
    assert auto_task(np.array([0.5, 1.0, 1.0, 0.5]), False) == "regression"


def test_task_can_be_forced(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(20)))
    result = ok(run("train", data, "-t", "y", "--task", "regression", "-o", tmp_path / "m.json"))
    assert "DecisionTreeRegressor" in result.stdout


# -- what a newcomer trips over (issue 45) -------------------------------------------------
def _sales_csv(path, age_typos=None, n=300, blank_line=True):
    """Carseats-like rows: Age (whole numbers, ``age_typos`` {row: text} written instead),
    Income, ShelveLoc (text) and Sales (0/1); a blank line after the third row, so that
    rows and lines differ."""
    rng = np.random.default_rng(0)
    age, income = rng.integers(25, 81, n), rng.normal(50, 10, n).round(2)
    lines = ["Age,Income,ShelveLoc,Sales"]
    for i in range(n):
        written = (age_typos or {}).get(i, str(age[i]))
        lines.append(f"{written},{income[i]},{('Bad', 'Good', 'Medium')[i % 3]},{int(age[i] > 50)}")
        if blank_line and i == 2:
            lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("reader", [True, False, "arrow"])
def test_a_typo_in_a_numeric_column_is_refused_not_made_categorical(reader, tmp_path, monkeypatch):
    """One "4G" among a column's numbers once made the column categorical, each number a
    category of its own, without a word: the column, its line and value are named, with
    the ways out."""
    use_csv_reader(monkeypatch, reader)
    data = _sales_csv(tmp_path / "sales.csv", {16: "4G"})  # line 19: header, blank line
    model = tmp_path / "m.json"
    result = run("train", data, "-t", "Sales", "-o", model)
    assert_one_line_error(
        result,
        "column 'Age' holds numbers but for 1 of its 300 values: '4G' (line 19)",
        "Typos?",
        "--na-values 4G",
        "--categorical Age",
    )
    assert not model.exists()
    marked = ok(run("train", data, "-t", "Sales", "--na-values", "4G", "-o", model))
    assert "3 features (1 categorical)" in marked.stdout
    assert gpu_tree.load(model).categories_[0] is None  # Age numeric, one value missing
    declared = ok(run("train", data, "-t", "Sales", "--categorical", "Age", "-o", model))
    assert "3 features (2 categorical)" in declared.stdout
    assert "4G" in gpu_tree.load(model).categories_[0].tolist()


def test_more_text_than_typos_keeps_a_column_categorical(tmp_path):
    # 4 values of text in 300 rows: more than max(3, 1%), so a column of text as before.
    typos = {i: f"code{i}" for i in (5, 50, 150, 250)}
    data = _sales_csv(tmp_path / "sales.csv", typos)
    result = ok(run("train", data, "-t", "Sales", "-o", tmp_path / "m.json"))
    assert "3 features (2 categorical)" in result.stdout


def test_a_typo_in_a_wide_numeric_column_is_the_typo_error_not_raise_max_bins(tmp_path):
    # Thousands of distinct numbers and one "12x4": the advice was to raise max_bins.
    rng = np.random.default_rng(1)
    values = rng.normal(0, 1000, 3000).round(3).astype(str)
    values[33] = "12x4"
    data = tmp_path / "wide.csv"
    data.write_text("a,b,y\n" + "".join(f"{i % 7},{v},{i % 2}\n" for i, v in enumerate(values)))
    result = run("train", data, "-t", "y", "-o", tmp_path / "m.json")
    assert_one_line_error(result, "column 'b' holds numbers but for 1", "'12x4' (line 35)")
    assert "max_bins" not in result.stderr


def test_a_parquet_string_column_of_numbers_and_a_typo_is_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    age = [str(25 + i % 50) for i in range(200)]
    age[7] = "n.a."
    table = pa.table({"Age": age, "y": [i % 2 for i in range(200)]})
    pq.write_table(table, tmp_path / "d.parquet")
    result = run("train", tmp_path / "d.parquet", "-t", "y", "-o", tmp_path / "m.json")
    assert_one_line_error(result, "column 'Age' holds numbers but for 1", "'n.a.' (row 8)")


def test_categorical_and_text_columns_add_up_as_in_python(tmp_path):
    """--categorical adds columns of numbers to the columns of text, which stay
    categorical: the estimators' categorical_features=[...] reads the same."""
    rng = np.random.default_rng(2)
    n = 80
    student = rng.choice(["No", "Yes"], n)
    balance = rng.integers(0, 4, n)
    y = (student == "Yes") ^ (balance > 1)
    data = tmp_path / "credit.csv"
    data.write_text(
        "student,balance,y\n"
        + "".join(f"{s},{b},{int(v)}\n" for s, b, v in zip(student, balance, y, strict=True))
    )
    result = ok(
        run("train", data, "-t", "y", "--categorical", "balance", "-o", tmp_path / "m.json")
    )
    assert "2 features (2 categorical)" in result.stdout
    model = gpu_tree.load(tmp_path / "m.json")
    assert [c.tolist() for c in model.categories_] == [["No", "Yes"], ["0", "1", "2", "3"]]


def test_classification_of_a_continuous_target_names_the_option_not_a_class(tmp_path):
    data = _sales_csv(tmp_path / "sales.csv")
    result = run("train", data, "-t", "Income", "--task", "classification", "-o", tmp_path / "m")
    assert_one_line_error(
        result, "sales.csv, line 2: the target column 'Income' holds", "--task regression"
    )
    assert "DecisionTreeRegressor" not in result.stderr


def _ids_csv(path, n):
    path.write_text("id,x,y\n" + "".join(f"u{i:05d},{i % 7},{i % 2}\n" for i in range(n)))
    return path


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_an_identifier_like_column_is_warned_of_with_the_option_that_leaves_it_out(quiet, tmp_path):
    data = _ids_csv(tmp_path / "ids.csv", 200)
    result = ok(run("train", data, "-t", "y", *quiet, "-o", tmp_path / "m.json"))
    assert flat(result.stderr) == (
        "gputree: warning: the categorical column 'id' has 200 categories in 200 rows: is "
        "it an identifier (an id, a name, free text)? Its splits would learn the training "
        "rows by heart and send new values down the missing-value path; leave it out with "
        "--ignore id"
    )
    result = ok(run("train", data, "-t", "y", "--ignore", "id", "-o", tmp_path / "m.json"))
    assert result.stderr == ""


def test_errors_of_a_fit_name_the_column_not_its_position(tmp_path):
    # 2,000 ids: more categories than max_bins; the warning comes first, then the error,
    # which names the column (it said "categorical feature 0 has 2000 categories").
    data = _ids_csv(tmp_path / "ids.csv", 2000)
    result = run("train", data, "-t", "y", "-o", tmp_path / "m.json")
    assert result.exit_code == 2
    warning, error = result.stderr.strip().splitlines()
    assert warning.startswith("gputree: warning: the categorical column 'id' has 2,000 categories")
    assert error.startswith("gputree: error: categorical column 'id' has 2,000 categories, more")


def test_an_infinite_value_of_an_npz_file_names_its_column(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    X[2, 1] = np.inf
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=np.arange(4) % 2, feature_names=np.array(["a", "income", "c"]))
    result = run("train", path, "-o", tmp_path / "m.json")
    assert_one_line_error(result, "array 'X' is infinite at row 3, column 1 ('income')")


def test_a_perfect_model_s_log_loss_is_zero_and_counts_have_separators(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n" + "".join(f"{i},{int(i >= 750)}\n" for i in range(1500)))
    model, metrics = tmp_path / "m.json", tmp_path / "metrics.json"
    trained = ok(run("train", data, "-t", "y", "-v", "-o", model))
    shown = ok(run("evaluate", model, data, "-t", "y", "-v", "--json", metrics))
    assert "log-loss: 0.0000" in shown.stdout
    loss = json.loads(metrics.read_text())["log_loss"]
    assert loss == 0.0 and not math.copysign(1.0, loss) < 0
    said = trained.stdout + trained.stderr + shown.stdout + shown.stderr
    assert "1,500 rows" in said
    assert not re.search(r"\b\d{4,} rows", said), said


# -- errors ------------------------------------------------------------------------------------
def _write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


ERROR_CASES = {
    "missing file": (["train", "{d}/nope.csv", "-t", "y"], ["nope.csv", "does not exist"]),
    "unknown target": (["train", "{ok}", "-t", "nope"], ["unknown target column 'nope'"]),
    "unknown categorical": (
        ["train", "{ok}", "-t", "y", "-c", "zz"],
        ["column in --categorical 'zz'"],
    ),
    "malformed row": (
        ["train", "{short}", "-t", "y"],
        ["short.csv, line 3", "2 fields", "3 columns"],
    ),
    "non-numeric weight": (
        ["train", "{text}", "-t", "y", "--weight", "b"],
        ["line 3", "'b'", "'red'", "a weight column holds numbers only"],
    ),
    "empty file": (["train", "{empty}", "-t", "y"], ["empty.csv", "empty"]),
    "header only": (["train", "{header}", "-t", "y"], ["no data rows"]),
    "unknown extension": (["train", "{xlsx}", "-t", "y"], ["unknown file extension '.xlsx'"]),
    "target missing values": (["train", "{ymiss}", "-t", "y"], ["'y'", "missing", "line 3"]),
    "no target option": (["train", "{ok}"], ["--target"]),
    "missing output folder": (
        ["train", "{ok}", "-t", "y", "-o", "{d}/no/where.json"],
        ["does not exist"],
    ),
    "bad option": (["train", "{ok}", "-t", "y", "--max-depth", "0"], ["--max-depth"]),
    "bad criterion": (["train", "{ok}", "-t", "y", "--criterion", "nope"], ["criterion='nope'"]),
    "model fails validation": (["predict", "{badmodel}", "{ok}"], ["format_version 9"]),
    "model not JSON": (["evaluate", "{ok}", "{ok}", "-t", "y"], ["not a gpu_tree model file"]),
    "predict: missing column": (["predict", "{model}", "{other}"], ["no column 'a'"]),
    "evaluate: target missing": (["evaluate", "{model}", "{ymiss}", "-t", "y"], ["missing value"]),
}


@pytest.fixture(scope="module")
def error_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("errors")
    files = {
        "d": d,
        "ok": _write(d, "ok.csv", "a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n"),
        "short": _write(d, "short.csv", "a,b,y\n1,2,0\n3,4\n"),
        "text": _write(d, "text.csv", "a,b,y\n1,2,0\n3,red,1\n"),
        "empty": _write(d, "empty.csv", ""),
        "header": _write(d, "header.csv", "a,b,y\n\n"),
        "xlsx": _write(d, "data.xlsx", "a,b,y\n"),
        "ymiss": _write(d, "ymiss.csv", "a,b,y\n1,2,0\n3,4,\n"),
        "other": _write(d, "other.csv", "c,b,y\n1,2,0\n"),
        "badmodel": _write(d, "bad.json", '{"format": "gpu_tree.model", "format_version": 9}'),
    }
    files["model"] = d / "model.json"
    ok(run("train", files["ok"], "-t", "y", "-o", files["model"]))
    return files


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_are_one_line_exit_2_and_leave_outputs_alone(case, error_files, tmp_path):
    args, phrases = ERROR_CASES[case]
    args = [a.format(**error_files) for a in args]
    output = tmp_path / "out.file"
    option = "--json" if args[0] == "evaluate" else "-o"
    if option not in args:
        args += [option, output]
    result = run(*args)
    assert_one_line_error(result, *phrases)
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file
    # A file already there stays as it was.
    output.write_text("OLD")
    assert_one_line_error(run(*args), *phrases)
    assert output.read_text() == "OLD" and sorted(tmp_path.iterdir()) == [output]


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("OLD")
    with pytest.raises(RuntimeError), atomic_text(target) as out:
        out.write("half a file")
        raise RuntimeError("disk full")
    assert target.read_text() == "OLD" and sorted(tmp_path.iterdir()) == [target]
    with atomic_text(target) as out:
        out.write("NEW")
    assert target.read_text() == "NEW" and sorted(tmp_path.iterdir()) == [target]


def test_unexpected_errors_one_line_then_traceback_with_verbose(error_files, monkeypatch):
    import gpu_tree.app.cli.train_command as train_command

    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(train_command, "feature_matrix", broken)
    args = ["train", error_files["ok"], "-t", "y", "-o", error_files["d"] / "never.json"]
    result = run(*args)
    assert_one_line_error(result, "internal error: KeyError", "--verbose", code=1)
    verbose = run("--verbose", *args)
    assert verbose.exit_code == 1 and "Traceback" in verbose.stderr
    assert not (error_files["d"] / "never.json").exists()


def test_export_png_without_matplotlib_is_a_clear_error(days, tmp_path, monkeypatch):
    _, model = days
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-folder"))  # no Graphviz dot either
    result = run("export", model, "--format", "png", "-o", tmp_path / "t.png")
    assert_one_line_error(result, "Graphviz's dot program or matplotlib", "pip install")
    assert list(tmp_path.iterdir()) == []
    result = run("bench", "--rows", "1000", "--no-peers", "--plot", tmp_path / "b.png")
    assert_one_line_error(result, "matplotlib")


# -- progress ----------------------------------------------------------------------------------
def test_progress_silent_when_piped_verbose_shows_levels_quiet_nothing(days, tmp_path):
    data, _ = days
    args = ["train", data, "-t", "play", "-c", "outlook,wind", "-o", tmp_path / "m.json"]
    assert ok(run(*args)).stderr == ""
    verbose = ok(run("--verbose", *args)).stderr
    assert "levels 0-" in verbose and "binned 14 rows" in verbose and "tree grown" in verbose
    assert ok(run("--quiet", *args)).stderr == ""
    assert logging.getLogger("gpu_tree").handlers == [
        h for h in logging.getLogger("gpu_tree").handlers if isinstance(h, logging.NullHandler)
    ]  # the command removed what it installed


@pytest.mark.parametrize("command", ["train", "predict", "evaluate", "export"])
def test_verbose_and_quiet_are_taken_after_the_subcommand_too(days, tmp_path, command):
    data, model = days
    args = {
        "train": ["train", data, "-t", "play", "-c", "outlook,wind", "-o", tmp_path / "m.json"],
        "predict": ["predict", model, data, "-o", tmp_path / "p.csv"],
        "evaluate": ["evaluate", model, data, "-t", "play"],
        "export": ["export", model],
        "info": ["info", model],
    }[command]
    quiet = ok(run(*args, "-q"))
    assert quiet.stderr == "" and ok(run("--quiet", *args)).stderr == ""
    if command != "train":  # (train's says how long the fit took)
        assert ok(run("--quiet", *args)).stdout == quiet.stdout
    for verbose in (ok(run(*args, "--verbose")).stderr, ok(run("-v", *args)).stderr):
        if command == "train":
            assert "levels 0-" in verbose and "tree grown" in verbose
        else:
            assert f"loaded {model}" in flat(verbose)
    assert_one_line_error(run("-v", *args, "-q"), "--verbose and --quiet exclude each other")
    assert_one_line_error(run(*args, "-q", "-v"), "--verbose and --quiet exclude each other")
    assert logging.getLogger("gpu_tree").handlers == [
        h for h in logging.getLogger("gpu_tree").handlers if isinstance(h, logging.NullHandler)
    ]  # every command removed what it installed


def test_info_and_bench_take_verbose_and_quiet_after_the_subcommand(days):
    _, model = days
    assert ok(run("info", model, "-q")).stdout == ok(run("info", model, "-v")).stdout
    assert "--quiet" in ok(run("bench", "--help")).stdout


def test_progress_on_a_terminal_draws_bars_unless_quiet():
    import io

    from gpu_tree import DecisionTreeClassifier
    from gpu_tree.utils.progress import install_handler

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    X, y = make_higgs_like(500, 6)
    shown, silent = Terminal(), Terminal()
    for stream, quiet in ((shown, False), (silent, True)):
        remove = install_handler(stream, verbose=False, quiet=quiet)
        try:
            DecisionTreeClassifier(max_depth=2).fit(X, y)
        finally:
            remove()
    drawn = shown.getvalue()
    # Bars (tqdm's, redrawn in place with carriage returns): the levels to max_depth.
    assert "gputree: growing: 100%" in drawn and "2/2" in drawn and "\r" in drawn
    assert "gputree: binning: 100%" in drawn and "6/6" in drawn
    assert "tree grown: depth 2" in drawn  # a stage's last record stays as a line
    assert "level 0:" not in drawn and "bin edges" not in drawn  # lines only with --verbose
    assert silent.getvalue() == ""


def test_library_prints_nothing(capsys):
    from gpu_tree import DecisionTreeClassifier

    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("gpu_tree").handlers)
    X, y = make_higgs_like(500, 6)
    DecisionTreeClassifier(max_depth=3).fit(X, y).predict(X)
    assert capsys.readouterr() == ("", "")


def _gputree_command() -> list[str]:
    """The installed console script, or the module where there is none."""
    scripts = Path(sys.executable).parent
    if (scripts / "gputree").exists():
        return [str(scripts / "gputree")]
    return [sys.executable, "-m", "gpu_tree.app.cli"]


def test_real_process_entry_point(days, tmp_path):
    data, model = days
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    command = _gputree_command()
    done = subprocess.run(
        [*command, "predict", str(model), str(data), "-o", str(tmp_path / "p.csv")],
        capture_output=True,
        text=True,
        env=env,
        # Not the checkout's root, whose gpu_tree/ folder (without kernels/ inside) would
        # shadow the installed package under "python -m".
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # stderr is a pipe: no progress
    written = read_csv(tmp_path / "p.csv")
    assert len(written) == 15
    in_process = list(csv.reader(ok(run("predict", model, data, "-o", "-")).stdout.splitlines()))
    assert written == in_process  # the same predictions, row by row
    failed = subprocess.run(
        [*command, "info", str(data)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert failed.returncode == 2
    assert failed.stderr.startswith("gputree: error: ") and failed.stderr.count("\n") == 1
    assert "not a gpu_tree model file" in failed.stderr


def test_predict_with_standard_output_closed_names_the_way_out(days, tmp_path):
    """``gputree predict model data >&-``: Python has no sys.stdout; the predictions
    have nowhere to go, said as a usage error (not an internal TypeError)."""
    data, model = days
    command = _gputree_command()
    closed = subprocess.run(
        [*command, "predict", str(model), str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        cwd=tmp_path,
        timeout=120,
        preexec_fn=lambda: os.close(1),  # the child starts with its stdout closed
    )
    assert closed.returncode == 2, closed.stderr
    assert "standard output is closed: write the predictions to a file with -o PATH" in (
        closed.stderr
    )


# -- bench -------------------------------------------------------------------------------------
def test_bench_no_peers_json(tmp_path):
    out = tmp_path / "bench.json"
    result = ok(run("bench", "--rows", "2000", "--no-peers", "--depth", "4", "--json", out))
    assert "1,600 train / 400 test rows x 28 features, 2 classes, depth 4" in result.stdout
    report = json.loads(out.read_text())
    (ours,) = report["results"]
    assert ours["name"] == "gpu_tree" and ours["status"] == "ok" and ours["fit_ratio"] == 1.0
    assert len(ours["fit_s_all"]) == 3 and ours["fit_s"] == sorted(ours["fit_s_all"])[1]
    assert ours["fits"] == 3 and "median of up to 3 timed fit(s)" in result.stdout
    # The untimed fit and predict compiled every path the timed ones take.
    assert ours["compile_s"] == 0.0 and "compiled for" not in result.stdout
    assert 0.55 < ours["accuracy"] <= 1.0 and report["tree"]["depth"] <= 4
    assert report["settings"]["rows"] == 2000 and report["machine"]["cpus"] >= 1


def test_bench_records_compilation_inside_timed_fits():
    """A model that compiles anew in every fit: the warm-up cannot absorb it, and the
    result says how long numba compiled inside the timed fits."""
    import numba
    import numpy as np

    from gpu_tree.app.bench import time_model

    class CompilesEveryFit:
        def fit(self, X, y):
            self.mean = numba.njit(lambda v: v.mean())(np.asarray(y, dtype=float))
            return self

        def predict(self, X):
            return np.full(len(X), self.mean > 0.5)

    X = np.zeros((20, 2))
    y = np.arange(20) % 2
    result = time_model("fresh", "cpu", CompilesEveryFit, (X, y, X, y), repeats=2)
    assert result.status == "ok" and len(result.fit_times) == 2
    assert 0 < result.compile_s <= sum(result.fit_times)


def test_bench_multiclass(tmp_path):
    result = ok(
        run(
            "bench",
            "--rows",
            "1500",
            "--classes",
            "3",
            "--depth",
            "3",
            "--no-peers",
            "--repeats",
            "1",
        )
    )
    assert "3 classes" in result.stdout


def test_bench_with_peers_reports_ratios_and_failures(tmp_path, monkeypatch):
    pytest.importorskip("sklearn")
    import gpu_tree.app.bench as bench

    real_peers = bench.peers

    class Broken:
        def fit(self, X, y):
            raise RuntimeError("no luck")

    monkeypatch.setattr(
        bench, "peers", lambda *a: [*real_peers(*a), ("broken peer", "cpu", Broken, None)]
    )
    out = tmp_path / "b.json"
    args = ["bench", "--rows", "2000", "--depth", "3", "--repeats", "1", "--json", out]
    has_plot = True
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        has_plot = False
    if has_plot:
        args += ["--plot", tmp_path / "b.png"]
    result = ok(run(*args))
    assert "scikit-learn DecisionTreeClassifier" in result.stdout
    assert "broken peer: failed: RuntimeError: no luck" in result.stdout
    report = json.loads(out.read_text())
    sklearn_row = next(r for r in report["results"] if r["name"].startswith("scikit-learn Dec"))
    assert sklearn_row["fit_ratio"] == pytest.approx(
        sklearn_row["fit_s"] / report["results"][0]["fit_s"]
    )
    if has_plot:
        assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_rejects_bad_options_in_one_line(monkeypatch):
    import gpu_tree.backends.devices as devices

    monkeypatch.setattr(devices, "cuda_status", lambda: (False, "no usable NVIDIA GPU", None))
    cuda = run("bench", "--rows", "1000", "--device", "cuda")
    assert_one_line_error(cuda, "device='cuda' is not usable here")
    criterion = run("bench", "--rows", "1000", "--criterion", "nope", "--no-peers")
    assert_one_line_error(criterion, "Unknown criterion='nope'")
    assert_one_line_error(run("bench", "--bins", "1"), "--bins")


def test_version_and_help():
    assert __version__ in ok(run("--version")).stdout
    usage = ok(run()).stdout
    for command in ("train", "predict", "evaluate", "export", "info", "bench", "warm-up"):
        assert command in usage


def test_warm_up_runs_the_warm_up_in_a_folder_it_removes(monkeypatch):
    """``gputree warm-up`` is the Dockerfile's build step (gpu_tree.app.warm_up, which
    the image build runs for real); here its work is stood in for, as it compiles for
    minutes on a fresh install."""
    from gpu_tree.app import warm_up

    folders = []

    def record(command, folder):
        assert command is gpu_tree.app.cli.main
        assert folder.is_dir() and not any(folder.iterdir())
        folders.append(folder)

    monkeypatch.setattr(warm_up, "warm_up", record)
    result = ok(run("warm-up"))
    assert "kernels compiled and cached" in result.stdout
    assert len(folders) == 1 and not folders[0].exists()


# -- export dot and png (gpu_tree.export_graphviz, gpu_tree.plot_tree) ------------------------
def test_export_dot(days, tmp_path):
    _, model = days
    dot = ok(run("export", model, "--format", "dot")).stdout
    assert dot.lstrip().startswith("digraph") and "outlook" in dot
    out = tmp_path / "tree.dot"
    ok(run("export", model, "--format", "dot", "-o", out))
    assert out.read_text() == dot or out.read_text() + "\n" == dot


def test_export_png(days, tmp_path):
    pytest.importorskip("matplotlib")
    _, model = days
    out = tmp_path / "tree.png"
    ok(run("export", model, "--format", "png", "-o", out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(tmp_path.iterdir()) == [out]


# -- --no-header, numbers as column names ------------------------------------------------------
def _headerless(folder, rows=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 4)).round(3)
    colour = rng.choice(["red", "blue"], size=rows)
    y = ((X[:, 0] > 0) ^ (colour == "red")).astype(int)
    path = folder / "plain.csv"
    with open(path, "w") as out:
        for i in range(rows):
            out.write(f"{y[i]},{X[i, 0]},{X[i, 1]},{colour[i]},{X[i, 2]},{X[i, 3]}\n")
    return path, y


def test_no_header_train_predict_evaluate_by_index(tmp_path):
    data, y = _headerless(tmp_path)
    model = tmp_path / "m.json"
    refused = run("train", data, "-t", "0", "-c", "3", "-o", model)
    assert_one_line_error(refused, "line 1", "as a column name", "--no-header")
    trained = ok(run("train", data, "--no-header", "-t", "0", "-c", "3", "-o", model)).stdout
    assert "120 rows, 5 features (1 categorical), target 'x0'" in trained
    assert "x3 categorical, 2 categories (blue, red)" in flat(ok(run("info", model)).stdout)
    shown = ok(run("evaluate", model, data, "--no-header", "-t", "x0")).stdout
    assert "accuracy: 1.0000 (120 of 120 rows)" in shown
    # Without the target column: matched by position.
    features = tmp_path / "features.csv"
    features.write_text("".join(line.split(",", 1)[1] for line in data.open()))
    predictions = tmp_path / "p.csv"
    ok(run("predict", model, features, "--no-header", "-o", predictions))
    assert [int(r[0]) for r in read_csv(predictions)[1:]] == y.tolist()
    refused = run("predict", model, features, "-o", predictions)
    assert_one_line_error(refused, "--no-header")
    npz = tmp_path / "d.npz"
    np.savez(npz, X=np.ones((3, 2)), y=np.zeros(3))
    assert_one_line_error(
        run("train", npz, "--no-header", "-o", model), "--no-header is for .csv and .tsv"
    )


def test_header_of_numbers_names_the_first_one(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a,2019,2020,y\n1,2,3,0\n")
    result = run("train", data, "-t", "y", "-o", tmp_path / "m.json")
    assert_one_line_error(result, "line 1", "'2019'", "--no-header")
    assert not (tmp_path / "m.json").exists()


def test_shared_higgs_file_reads_with_no_header(tmp_path):
    train = dataset_path("higgs_subset_lightgbm_train.tsv")  # skips (or fails) when absent
    test = dataset_path("higgs_subset_lightgbm_test.tsv")
    model = tmp_path / "higgs.json"
    assert_one_line_error(run("train", train, "-t", "0", "-o", model), "--no-header")
    trained = ok(run("train", train, "--no-header", "-t", "0", "--max-depth", "4", "-o", model))
    assert "7,000 rows, 28 features" in trained.stdout and "2 classes (0, 1)" in trained.stdout
    shown = ok(run("evaluate", model, test, "--no-header", "-t", "0")).stdout
    assert "500 rows, target 'x0'" in shown
    accuracy = float(shown.split("accuracy: ")[1].split()[0])
    assert 0.6 < accuracy <= 1.0


# -- categories whose type changed since training ----------------------------------------------
@pytest.fixture(scope="module")
def coloured(tmp_path_factory):
    folder = tmp_path_factory.mktemp("coloured")
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 3, size=90)
    size = rng.normal(size=90).round(2)
    y = (codes == 1).astype(int)
    letters = folder / "letters.csv"
    letters.write_text(
        "colour,size,y\n"
        + "".join(f"{'rgb'[c]},{s},{t}\n" for c, s, t in zip(codes, size, y, strict=True))
    )
    digits = folder / "digits.csv"
    digits.write_text(
        "colour,size,y\n"
        + "".join(f"{c},{s},{t}\n" for c, s, t in zip(codes, size, y, strict=True))
    )
    npz = folder / "numbers.npz"
    np.savez(
        npz,
        X=np.column_stack([codes.astype(float), size]),
        y=y,
        feature_names=np.array(["colour", "size"]),
    )
    models = {}
    for name, data in (("letters", letters), ("digits", digits), ("numbers", npz)):
        models[name] = folder / f"{name}.json"
        target = [] if name == "numbers" else ["-t", "y"]
        ok(run("train", data, *target, "-c", "colour", "-o", models[name]))
    return folder, models, y


def test_category_type_mismatch_is_an_error(coloured, tmp_path):
    folder, models, _ = coloured
    for command in (
        ["predict", models["letters"], folder / "numbers.npz", "-o", "-"],
        ["evaluate", models["letters"], folder / "numbers.npz"],
    ):
        result = run(*command)
        assert_one_line_error(
            result,
            "categorical column 'colour' shares no value",
            "the model knows 'b', 'g', 'r'",
            "type mismatch: numbers here, text in training",
        )
    # Text that is not a number, into a model with number categories (ARFF: nominal).
    arff = tmp_path / "letters.arff"
    arff.write_text(
        "@relation c\n@attribute colour {r,g,b}\n@attribute size numeric\n"
        "@attribute y {0,1}\n@data\nr,0.5,0\ng,1.5,1\n"
    )
    result = run("predict", models["numbers"], arff, "-o", "-")
    assert_one_line_error(
        result, "'colour'", "holds 'r'", "0.0, 1.0, 2.0", "text here, numbers in training"
    )


def test_numerically_equal_labels_are_the_same_category(coloured, tmp_path):
    folder, models, y = coloured
    # Text categories "0", "1", "2" at training; the numbers 0.0, 1.0, 2.0 now.
    shown = ok(run("evaluate", models["digits"], folder / "numbers.npz")).stdout
    assert "accuracy: 1.0000 (90 of 90 rows)" in shown
    # Number categories at training; the text "1", "2" now (ARFF nominal values).
    arff = tmp_path / "digits.arff"
    arff.write_text(
        "@relation c\n@attribute colour {0,1,2,7}\n@attribute size numeric\n@data\n"
        "1,0.5\n2,0.5\n7,0.5\n"
    )
    predictions = ok(run("predict", models["numbers"], arff, "-o", "-")).stdout.split()
    assert predictions[:3] == ["prediction", "1", "0"]  # 7: unseen, no error


# -- sample weights (--weight) -----------------------------------------------------------------
def test_weight_column_weighs_rows_and_is_not_a_feature(tmp_path):
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=120).round(3), rng.normal(size=120).round(3)
    w = rng.integers(0, 4, size=120) * 0.5
    y = (a + rng.normal(scale=0.8, size=120) > 0).astype(int)
    data = tmp_path / "weighted.csv"
    data.write_text(
        "a,w,b,y\n" + "".join(f"{p},{q},{r},{t}\n" for p, q, r, t in zip(a, w, b, y, strict=True))
    )
    model = tmp_path / "m.json"
    shown = ok(run("train", data, "-t", "y", "--weight", "w", "-o", model)).stdout
    assert "2 features (0 categorical), target 'y', weights from 'w'" in shown
    loaded = gpu_tree.load(model)
    assert loaded.feature_names_in_.tolist() == ["a", "b"]
    X = np.column_stack([a, b])
    expected = gpu_tree.DecisionTreeClassifier(random_state=0, device="cpu")
    expected.fit(X, y, sample_weight=w)
    unweighted = gpu_tree.DecisionTreeClassifier(random_state=0, device="cpu").fit(X, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "X does not have valid feature names")
        assert loaded.predict_proba(X).tolist() == expected.predict_proba(X).tolist()
        assert loaded.tree_.node_count != unweighted.tree_.node_count  # weights mattered


@pytest.mark.parametrize(
    "rows, options, message",
    [
        ("1,1,0\n3,2,1\n", ["--weight", "y"], "the weight column 'y' is also the target"),
        ("1,1,0\n3,2,1\n", ["--weight", "w", "--ignore", "w"], "'w' is also in --ignore"),
        ("1,1,0\n3,2,1\n", ["--weight", "w", "-c", "w"], "'w' is also in --categorical"),
        ("1,1,0\n3,2,1\n", ["--weight", "v"], "unknown weight column 'v'"),
        ("1,1,0\n3,-2,1\n", ["--weight", "w"], "line 3: the weight column 'w' holds -2.0"),
        ("1,1,0\n3,,1\n", ["--weight", "w"], "line 3: the weight column 'w' holds a missing"),
        ("1,inf,0\n3,1,1\n", ["--weight", "w"], "line 2: column 'w' holds 'inf'"),
        ("1,0,0\n3,0,1\n", ["--weight", "w"], "every weight in the column 'w' is 0"),
    ],
)
def test_a_bad_weight_column_is_refused_by_name(tmp_path, rows, options, message):
    data = tmp_path / "d.csv"
    data.write_text("a,w,y\n" + rows)
    model = tmp_path / "m.json"
    assert_one_line_error(run("train", data, "-t", "y", *options, "-o", model), message)
    assert not model.exists()


# -- predict: ids and standard output ------------------------------------------------------------
def test_predict_copies_an_id_column_and_writes_to_stdout_without_o(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("id,a,b,y\n007,1,2,0\nr2,3,4,1\n,5,6,0\n1e3,7,8,1\n")
    model = tmp_path / "m.json"
    ok(run("train", data, "-t", "y", "--ignore", "id", "-o", model))
    plain = ok(run("predict", model, data)).stdout  # no -o: standard output
    assert plain.splitlines()[0] == "prediction" and len(plain.splitlines()) == 5
    shown = ok(run("predict", model, data, "--id", "id", "--proba")).stdout.splitlines()
    assert shown[0] == "id,prediction,proba_0,proba_1"
    # Ids are copied as written (leading zeros, exponents), a missing one as an empty field.
    assert [line.split(",")[0] for line in shown[1:]] == ["007", "r2", "", "1e3"]
    assert [line.split(",")[1] for line in shown[1:]] == plain.splitlines()[1:]
    written = tmp_path / "p.csv"
    ok(run("predict", model, data, "--id", "id", "-o", written))
    assert read_csv(written)[0] == ["id", "prediction"]
    assert [row[1] for row in read_csv(written)[1:]] == plain.splitlines()[1:]
    assert_one_line_error(
        run("predict", model, data, "--id", "a"), "the id column 'a' is a feature"
    )
    assert_one_line_error(run("predict", model, data, "--id", "zz"), "unknown id column 'zz'")
    headless = tmp_path / "h.csv"
    headless.write_text("007,1,2\n008,3,4\n")
    shown = ok(run("predict", model, headless, "--no-header", "--id", "0")).stdout
    assert shown.splitlines() == ["x0,prediction", "007,0", "008,1"]


# -- multi-output models (issue 43, items 13 and 16) -------------------------------------------
# The command line trains one target; a model fitted in Python on a 2-D y (several
# outputs) is read by predict, evaluate, info and export all the same.
@pytest.fixture(scope="module")
def multi_output(tmp_path_factory):
    pd = pytest.importorskip("pandas")
    folder = tmp_path_factory.mktemp("multi_output")
    rng = np.random.default_rng(4)
    n = 60
    frame = pd.DataFrame({name: rng.normal(size=n).round(3) for name in ("a", "b", "c")})
    frame["y"] = (frame["a"] > 0).astype(int)
    frame["z"] = np.where(frame["b"] + 0.3 * rng.normal(size=n) > 0, "hi", "lo")
    frame["r1"] = (2 * frame["a"] + rng.normal(size=n)).round(3)
    frame["r2"] = (frame["b"] - frame["c"]).round(3)
    frame["k"] = np.where(frame["c"] > 0.5, 2, 0)
    data = folder / "data.csv"
    frame.to_csv(data, index=False)
    X = frame[["a", "b", "c"]]
    models = {}
    for name, estimator, targets in (
        ("tree", gpu_tree.DecisionTreeClassifier(max_depth=3, device="cpu"), ["y", "z"]),
        ("numbers", gpu_tree.DecisionTreeClassifier(max_depth=3, device="cpu"), ["y", "k"]),
        ("forest", gpu_tree.RandomForestClassifier(5, max_depth=3, device="cpu"), ["y", "z"]),
        ("regressor", gpu_tree.DecisionTreeRegressor(max_depth=3, device="cpu"), ["r1", "r2"]),
    ):
        Y = frame[targets].to_numpy() if name == "numbers" else frame[targets]
        estimator.fit(X, Y)
        models[name] = folder / f"{name}.json"
        estimator.save(models[name])
    return frame, data, models


def _loaded_with_predictions(path, frame):
    model = gpu_tree.load(path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "X does not have valid feature names")
        X = frame[["a", "b", "c"]].to_numpy()
        proba = model.predict_proba(X) if hasattr(model, "classes_") else None
        return model, model.predict(X), proba


@pytest.mark.parametrize("name", ["tree", "forest", "regressor"])
def test_predict_writes_a_column_per_output_of_a_multi_output_model(multi_output, name):
    frame, data, models = multi_output
    model, predicted, _ = _loaded_with_predictions(models[name], frame)
    rows = list(csv.reader(ok(run("predict", models[name], data)).stdout.splitlines()))
    assert rows[0] == ["prediction_0", "prediction_1"]
    assert len(rows) == len(frame) + 1
    for k in range(2):
        written = [row[k] for row in rows[1:]]
        if name == "regressor":
            assert [float(v) for v in written] == predicted[:, k].tolist()
        else:
            assert written == [str(v) for v in predicted[:, k].tolist()]


@pytest.mark.parametrize("name", ["tree", "forest"])
def test_predict_proba_writes_a_column_per_output_and_class(multi_output, name):
    frame, data, models = multi_output
    model, predicted, proba = _loaded_with_predictions(models[name], frame)
    shown = ok(run("predict", models[name], data, "--proba", "--id", "r1")).stdout
    rows = list(csv.reader(shown.splitlines()))
    assert rows[0] == [
        "r1",
        "prediction_0",
        "prediction_1",
        "proba_0_0",
        "proba_0_1",
        "proba_1_hi",
        "proba_1_lo",
    ]
    values = np.array([[float(v) for v in row[3:]] for row in rows[1:]])
    np.testing.assert_array_equal(values, np.hstack(proba))
    assert [row[2] for row in rows[1:]] == predicted[:, 1].tolist()


def test_predict_proba_of_a_multi_output_regressor_is_a_usage_error(multi_output):
    _, data, models = multi_output
    assert_one_line_error(
        run("predict", models["regressor"], data, "--proba"), "--proba needs a classification"
    )


def test_info_describes_each_output_of_a_multi_output_model(multi_output):
    _, _, models = multi_output
    shown = flat(ok(run("info", models["tree"])).stdout)
    assert "outputs: 2" in shown
    assert "classes of output 0: 2: 0, 1" in shown
    assert "classes of output 1: 2: hi, lo" in shown
    shown = flat(ok(run("info", models["forest"], "--tree", "1")).stdout)
    assert "outputs: 2" in shown and "classes of output 1: 2: hi, lo" in shown
    shown = flat(ok(run("info", models["regressor"])).stdout)
    assert "outputs: 2" in shown and "classes" not in shown


def test_export_draws_a_multi_output_classifier_with_each_outputs_classes(multi_output):
    _, _, models = multi_output
    assert ok(run("export", models["tree"])).stdout.startswith("|--- ")
    assert "digraph" in ok(run("export", models["tree"], "--format", "dot")).stdout


@pytest.mark.parametrize("name", ["tree", "numbers", "forest"])
@pytest.mark.parametrize("given", ["repeated", "comma list"])
def test_evaluate_scores_each_output_and_the_subset_accuracy(multi_output, name, given, tmp_path):
    frame, data, models = multi_output
    targets = ["y", "k"] if name == "numbers" else ["y", "z"]
    model, predicted, _ = _loaded_with_predictions(models[name], frame)
    given_targets = ["y", "7"] if name == "numbers" else targets  # k by its index too
    options = ["-t", given_targets[0], "-t", given_targets[1]]
    if given == "comma list":
        options = ["-t", ",".join(given_targets)]
    metrics_path = tmp_path / "metrics.json"
    shown = flat(ok(run("evaluate", models[name], data, *options, "--json", metrics_path)).stdout)
    truth = frame[targets].to_numpy()
    right = predicted.astype(str) == truth.astype(str)
    metrics = json.loads(metrics_path.read_text())
    assert metrics["targets"] == targets and metrics["n_outputs"] == 2
    assert metrics["task"] == "classification"
    for k, output in enumerate(metrics["outputs"]):
        assert output["target"] == targets[k]
        assert output["accuracy"] == pytest.approx(right[:, k].mean())
        assert f"output {k}, target {targets[k]!r}: accuracy {right[:, k].mean():.4f}" in shown
    subset = right.all(axis=1).mean()
    assert metrics["score"] == pytest.approx(subset)
    assert f"score (subset accuracy: every output right): {subset:.4f}" in shown


def test_evaluate_scores_a_multi_output_regressor_as_scikit_learn_does(multi_output, tmp_path):
    from sklearn.metrics import r2_score

    frame, data, models = multi_output
    model, predicted, _ = _loaded_with_predictions(models["regressor"], frame)
    metrics_path = tmp_path / "metrics.json"
    args = ("evaluate", models["regressor"], data, "-t", "r1", "-t", "r2")
    shown = flat(ok(run(*args, "--json", metrics_path)).stdout)
    truth = frame[["r1", "r2"]].to_numpy()
    metrics = json.loads(metrics_path.read_text())
    for k, output in enumerate(metrics["outputs"]):
        r2 = r2_score(truth[:, k], predicted[:, k])
        assert output["r2"] == pytest.approx(r2)
        assert f"output {k}, target 'r{k + 1}': R^2 {r2:.4f}" in shown
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "X does not have valid feature names")
        score = model.score(frame[["a", "b", "c"]].to_numpy(), truth)
    assert metrics["score"] == pytest.approx(score)
    assert f"score (R^2 averaged over the outputs): {score:.4f}" in shown


@pytest.mark.parametrize(
    ("name", "options", "phrases"),
    [
        (
            "regressor",
            ["-t", "r1"],
            ["predicts 2 outputs", "-t COL -t COL", "got 1 ('r1')"],
        ),
        ("tree", ["-t", "y,z,r1"], ["predicts 2 outputs", "got 3 ('y', 'z', 'r1')"]),
        ("tree", [], ["Missing option '--target'", "2 outputs"]),
        ("tree", ["-t", "y", "-t", "3"], ["the target column 'y' is given twice"]),
        ("tree", ["-t", "y", "-t", "a"], ["the target column 'a' is a feature"]),
        ("tree", ["-t", "y", "-t", "zz"], ["unknown target column 'zz'"]),
    ],
)
def test_evaluate_refuses_a_wrong_number_of_targets_for_a_multi_output_model(
    multi_output, name, options, phrases
):
    _, data, models = multi_output
    assert_one_line_error(run("evaluate", models[name], data, *options), *phrases)


def test_evaluate_of_a_one_output_model_takes_one_target(days):
    data, model = days
    assert_one_line_error(
        run("evaluate", model, data, "-t", "play", "-t", "wind"),
        "predicts one output",
        "give one -t",
    )
    # A name holding a comma is still one column for a one-output model.
    assert_one_line_error(run("evaluate", model, data, "-t", "play,wind"), "'play,wind'")
