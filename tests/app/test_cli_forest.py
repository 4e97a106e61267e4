"""gputree train --forest N: random forests from the command line, and every command that
reads a model file (predict, evaluate, export, info) on a forest's."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pytest
from _cli import run_cli

import gpu_tree

COLOURS = ["red", "green", "blue"]


def _rows(n=90, seed=0):
    """(colour, size, weight, label, amount) rows: colour is text (so categorical), size
    has missing values, label depends on colour and size, amount on size and weight."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        colour = COLOURS[int(rng.integers(0, 3))]
        size = float(np.round(rng.normal(), 2))
        weight = float(np.round(rng.uniform(0, 10), 1))
        label = "big" if (size > 0.2) != (colour == "blue") else "small"
        amount = round(3 * size + 0.5 * weight + float(rng.normal(scale=0.1)), 3)
        rows.append([colour, "" if i % 11 == 3 else size, weight, label, amount])
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("forest") / "shapes.csv"
    with open(path, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["colour", "size", "weight", "label", "amount"])
        writer.writerows(_rows())
    return path


def _features():
    """The rows' features as the command line reads them (text: object; missing: NaN)."""
    X = np.empty((90, 3), dtype=object)
    for i, (colour, size, weight, _, _) in enumerate(_rows()):
        X[i] = [colour, np.nan if size == "" else size, weight]
    return X


def run(*args):
    return run_cli(*args)


def ok(result):
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def assert_one_line_error(result, *phrases):
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("gputree: error: "), lines[0]
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    assert "Traceback" not in result.stderr + result.stdout


def read_csv(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def read_csv_text(text):
    return list(csv.reader(text.splitlines()))


@pytest.fixture(scope="module")
def classifier(data, tmp_path_factory):
    """A forest of 5 trees trained by the command line, with its out-of-bag score."""
    model = tmp_path_factory.mktemp("classifier") / "forest.json"
    result = ok(
        run(
            "train", data, "-t", "label", "--ignore", "amount", "--forest", 5, "--oob-score",
            "--device", "cpu", "-o", model,
        )
    )  # fmt: skip
    return model, result.stdout


@pytest.fixture(autouse=True)
def _quiet_oob():
    # Forests of a few trees leave some rows in every tree's bootstrap sample.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Some inputs do not have OOB scores")
        yield


def _python_forest(kind, **params):
    """The forest the command line's options make, fitted in Python on the same rows."""
    rows = _rows()
    X = _features()
    settings = dict(categorical_features=[0], random_state=0, device="cpu", **params)
    if kind == "classifier":
        y = np.array([r[3] for r in rows])
        return gpu_tree.RandomForestClassifier(5, **settings).fit(X, y), X
    y = np.array([r[4] for r in rows], dtype=float)
    return gpu_tree.RandomForestRegressor(5, **settings).fit(X, y), X


def test_train_a_forest_and_report_it(classifier, data):
    model, shown = classifier
    lines = shown.splitlines()
    assert lines[0] == (
        f"trained RandomForestClassifier on {data}: 90 rows, 3 features (1 categorical), "
        "target 'label': classification, 2 classes (big, small)"
    )
    forest = gpu_tree.load(model)
    assert type(forest) is gpu_tree.RandomForestClassifier
    trees = [e.tree_ for e in forest.estimators_]
    low, high = min(t.max_depth for t in trees), max(t.max_depth for t in trees)
    depth = f"depth {low}" if low == high else f"depths {low} to {high}"
    assert lines[1].startswith(
        f"forest: 5 trees, {depth}, {sum(t.n_leaves for t in trees):,} leaves and "
        f"{sum(t.node_count for t in trees):,} nodes in all; trees on bootstrap samples, "
        "max_features 'sqrt'; fit "
    )
    assert lines[1].endswith(" s on cpu")
    assert lines[2] == f"out-of-bag score: {forest.oob_score_:.4f} (accuracy)"
    assert lines[3] == f"model saved to {model}"
    params = forest.get_params()
    assert params["n_estimators"] == 5 and params["oob_score"] is True
    assert params["bootstrap"] is True and params["max_features"] == "sqrt"
    assert params["random_state"] == 0
    assert list(forest.feature_names_in_) == ["colour", "size", "weight"]
    assert all(
        list(e.feature_names_in_) == ["colour", "size", "weight"] for e in forest.estimators_
    )


def test_the_forest_is_the_one_python_fits_and_predict_uses_it(classifier, data, tmp_path):
    model, _ = classifier
    predictions = tmp_path / "p.csv"
    ok(run("predict", model, data, "-o", predictions, "--proba"))
    rows = read_csv(predictions)
    assert rows[0] == ["prediction", "proba_big", "proba_small"]
    expected, X = _python_forest("classifier", oob_score=True)
    assert [r[0] for r in rows[1:]] == expected.predict(X).tolist()
    assert [[float(p) for p in r[1:]] for r in rows[1:]] == expected.predict_proba(X).tolist()
    loaded = gpu_tree.load(model)
    assert loaded.oob_score_ == expected.oob_score_
    np.testing.assert_array_equal(loaded.oob_decision_function_, expected.oob_decision_function_)
    # An unseen colour follows each node's missing rule, as a tree's does.
    unseen = tmp_path / "unseen.csv"
    unseen.write_text("weight,size,colour\n3.5,0.4,purple\n3.5,0.4,red\n")
    out = ok(run("predict", model, unseen)).stdout.splitlines()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "X does not have valid feature names")
        probe = np.array([["purple", 0.4, 3.5], ["red", 0.4, 3.5]], dtype=object)
        assert out == ["prediction", *expected.predict(probe)]


def test_evaluate_a_forest(classifier, data, tmp_path):
    model, _ = classifier
    metrics_path = tmp_path / "m.json"
    shown = ok(run("evaluate", model, data, "-t", "label", "--json", metrics_path)).stdout
    expected, X = _python_forest("classifier", oob_score=True)
    truth = [r[3] for r in _rows()]
    accuracy = np.mean(expected.predict(X) == np.array(truth))
    metrics = json.loads(metrics_path.read_text())
    assert metrics["accuracy"] == pytest.approx(accuracy)
    assert metrics["labels"] == ["big", "small"] and metrics["log_loss"] is not None
    assert "confusion matrix" in shown and "2 classes" in shown


def test_export_shows_the_tree_chosen_with_tree(classifier, tmp_path):
    model, _ = classifier
    forest = gpu_tree.load(model)
    for k in (0, 4):
        text = ok(run("export", model, "--tree", k)).stdout
        assert text == gpu_tree.export_text(forest, tree_index=k, max_depth=10**6)
    dot = tmp_path / "t.dot"
    ok(run("export", model, "--tree", 2, "-f", "dot", "-o", dot, "--decimals", 3))
    assert dot.read_text() == gpu_tree.export_graphviz(
        forest, tree_index=2, filled=True, precision=3
    )
    assert ok(run("export", model, "--tree", 1, "--max-depth", 1)).stdout == (
        gpu_tree.export_text(forest, tree_index=1, max_depth=1)
    )


def test_export_png_of_a_forest_s_tree(classifier, tmp_path):
    pytest.importorskip("matplotlib")
    model, _ = classifier
    picture = tmp_path / "t.png"
    result = ok(run("export", model, "--tree", 3, "-f", "png", "-o", picture))
    assert result.stdout.startswith(f"tree drawn to {picture}")
    assert picture.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "args, phrases",
    [
        ((), ("holds a forest of 5 trees (RandomForestClassifier)", "--tree 0 to 4")),
        (("--tree", 5), ("--tree 5 is out of range", "has 5 trees (--tree 0 to 4)")),
        (("--tree", -1), ("--tree",)),
        (("--tree", 5, "-f", "dot", "-o", "OUT"), ("--tree 5 is out of range",)),
    ],
)
def test_export_of_a_forest_needs_a_tree_in_range(classifier, tmp_path, args, phrases):
    model, _ = classifier
    args = [tmp_path / "t.dot" if a == "OUT" else a for a in args]
    assert_one_line_error(run("export", model, *args), *phrases)
    assert not (tmp_path / "t.dot").exists()


def test_info_describes_the_forest_and_one_tree(classifier):
    model, _ = classifier
    forest = gpu_tree.load(model)
    shown = ok(run("info", model)).stdout
    lines = [" ".join(line.split()) for line in shown.splitlines()]
    assert "estimator: RandomForestClassifier" in lines
    assert any(line.startswith("forest: 5 trees, ") for line in lines)
    assert f"out-of-bag score: {forest.oob_score_:.4f} (accuracy)" in lines
    assert not any(line.startswith("tree") for line in lines)
    assert "n_estimators = 5" in lines and "oob_score = True" in lines
    assert "features: 3 (1 categorical)" in lines
    assert "colour categorical, 3 categories (blue, green, red)" in lines
    tree = forest.estimators_[3]
    shown = ok(run("info", model, "--tree", 3)).stdout
    assert (
        f"tree 3: depth {tree.get_depth()}, {tree.get_n_leaves()} leaves, "
        f"{tree.tree_.node_count} nodes" in [" ".join(line.split()) for line in shown.splitlines()]
    )
    assert_one_line_error(run("info", model, "--tree", 7), "--tree 7 is out of range")


def test_a_single_tree_takes_no_tree(data, tmp_path):
    model = tmp_path / "tree.json"
    ok(run("train", data, "-t", "label", "--device", "cpu", "-o", model))
    assert ok(run("export", model)).stdout.startswith("|--- ")
    assert "tree: depth" in " ".join(ok(run("info", model)).stdout.split())
    for command in ("export", "info"):
        assert_one_line_error(
            run(command, model, "--tree", 0),
            "--tree picks one of a forest's trees",
            "holds a single tree (DecisionTreeClassifier)",
        )


def test_train_a_regression_forest(data, tmp_path):
    model = tmp_path / "forest.json"
    shown = ok(
        run(
            "train", data, "-t", "amount", "--ignore", "label", "--forest", 5,
            "--max-features", "0.5", "--no-bootstrap", "--device", "cpu", "-o", model,
        )
    ).stdout  # fmt: skip
    assert shown.startswith("trained RandomForestRegressor on ")
    assert "trees on every row, max_features 0.5; fit " in shown
    assert "out-of-bag" not in shown
    forest = gpu_tree.load(model)
    assert type(forest) is gpu_tree.RandomForestRegressor
    assert forest.get_params()["bootstrap"] is False
    assert forest.get_params()["max_features"] == 0.5
    expected, X = _python_forest("regressor", max_features=0.5, bootstrap=False)
    out = read_csv_text(ok(run("predict", model, data)).stdout)
    assert [float(r[0]) for r in out[1:]] == expected.predict(X).tolist()
    scored = ok(run("evaluate", model, data, "-t", "amount")).stdout
    assert "R^2:" in scored and "RMSE:" in scored
    assert_one_line_error(
        run("predict", model, data, "--proba"), "--proba needs a classification model"
    )


def test_regression_oob_score_is_r2(data, tmp_path):
    model = tmp_path / "forest.json"
    shown = ok(
        run(
            "train", data, "-t", "amount", "--ignore", "label", "--forest", 4, "--oob-score",
            "--device", "cpu", "-o", model,
        )
    ).stdout  # fmt: skip
    forest = gpu_tree.load(model)
    assert f"out-of-bag score: {forest.oob_score_:.4f} (R^2)" in shown.splitlines()
    assert forest.oob_prediction_.shape == (90,)


@pytest.mark.parametrize(
    "given, saved",
    [("sqrt", "sqrt"), ("LOG2", "log2"), ("2", 2), ("0.5", 0.5), ("1.0", 1.0), ("1", 1)],
)
def test_max_features_values(data, tmp_path, given, saved):
    model = tmp_path / "forest.json"
    ok(
        run(
            "train", data, "-t", "label", "--ignore", "amount", "--forest", 2,
            "--max-features", given, "--device", "cpu", "-o", model,
        )
    )  # fmt: skip
    value = json.loads(model.read_text())["params"]["max_features"]
    assert value == saved and type(value) is type(saved)


@pytest.mark.parametrize(
    "args, phrases",
    [
        (("--max-features", "2"), ("--max-features is an option of random forests", "--forest N")),
        (("--no-bootstrap",), ("--no-bootstrap is an option of random forests",)),
        (("--bootstrap",), ("--bootstrap is an option of random forests",)),
        (("--oob-score",), ("--oob-score is an option of random forests",)),
        (
            ("--forest", 3, "--oob-score", "--no-bootstrap"),
            ("--oob-score needs bootstrap samples", "leave out --no-bootstrap"),
        ),
        (
            ("--forest", 3, "--workers", 2),
            ("--forest cannot be combined with --workers", "single trees only"),
        ),
        (
            ("--forest", 3, "--scheduler", "tcp://127.0.0.1:1"),
            ("--forest cannot be combined with --scheduler",),
        ),
        (("--forest", 0), ("'--forest'", "0")),
        (("--forest", 3, "--max-features", "0"), ("'--max-features'", "'0' is not a count >= 1")),
        (("--forest", 3, "--max-features", "1.5"), ("'1.5' is neither sqrt, log2",)),
        (("--forest", 3, "--max-features", "many"), ("'many' is neither sqrt, log2",)),
        (("--forest", 3, "--max-features", "9"), ("max_features",)),  # 3 features
    ],
)
def test_options_that_do_not_go_together_are_refused(data, tmp_path, args, phrases):
    model = tmp_path / "forest.json"
    result = run("train", data, "-t", "label", "--ignore", "amount", "--device", "cpu", *args,
                 "-o", model)  # fmt: skip
    assert_one_line_error(result, *phrases)
    assert not model.exists()


def test_verbose_train_of_a_forest(data, tmp_path):
    model = tmp_path / "forest.json"
    result = ok(
        run(
            "train", data, "-t", "label", "--ignore", "amount", "--forest", 2, "--device",
            "cpu", "-o", model, "-v",
        )
    )  # fmt: skip
    assert "forest: 2 trees" in result.stdout
    assert "fit statistics" not in result.stderr  # a forest's trees keep none


def test_bench_times_forests_against_the_forest_peers(tmp_path):
    """gputree bench --forest N: gpu_tree's forest of N trees, and scikit-learn's, on the
    same data; the JSON says it was a forest and the table prints both rows."""
    pytest.importorskip("sklearn")
    out = tmp_path / "bench.json"
    result = ok(
        run(
            "bench",
            "--rows",
            "2000",
            "--depth",
            "4",
            "--forest",
            "5",
            "--repeats",
            "1",
            "--json",
            out,
        )
    )
    assert "forests of 5 trees" in result.stdout
    assert "gpu_tree forest of 5 trees (1 batches): depth 4" in result.stdout
    report = json.loads(out.read_text())
    assert report["settings"]["forest"] == 5
    names = [r["name"] for r in report["results"] if r["status"] == "ok"]
    assert names[0] == "gpu_tree"
    assert any("scikit-learn" in name and "RandomForest" in name for name in names), names
    ours = report["results"][0]
    assert 0.55 < ours["accuracy"] <= 1.0 and report["tree"]["depth"] <= 4
