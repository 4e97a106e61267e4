"""bench/bench_export.py (the exported models' prediction throughput) and bench/gpu_check.py's
nvForest step: the agreement check on real Treelite GTIL output, the skip where nvforest is
not installed, and the step's comparison with a GTIL-backed stand-in for nvForest's API."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _shared_data import bench_module

import gpu_tree

BENCH = Path(__file__).resolve().parents[2] / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="not a source checkout")
treelite = pytest.importorskip("treelite")


@pytest.fixture(scope="module")
def bench_export():
    return bench_module("bench_export")  # puts bench/ on sys.path, as the scripts import


@pytest.fixture(scope="module")
def gpu_check(bench_export):
    return bench_module("gpu_check")


def _rows(n=400, seed=0):
    """Numeric columns with missing values and a categorical column 3 (codes 0..5)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 3] = rng.integers(0, 6, n)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + (np.nan_to_num(X[:, 3]) % 2) > 0.3).astype(int)
    return X, y, 1.5 * y + np.nan_to_num(X[:, 1])


@pytest.fixture(scope="module")
def fitted():
    X, y, target = _rows()
    cats = {"categorical_features": [3]}
    return X, {
        "tree": gpu_tree.DecisionTreeClassifier(max_depth=6, **cats).fit(X, y),
        "forest_regressor": gpu_tree.RandomForestRegressor(
            n_estimators=5, max_depth=6, random_state=0, **cats
        ).fit(X, target),
    }


def _gtil(model, X):
    return treelite.gtil.predict(gpu_tree.export_treelite(model), gpu_tree.export_inputs(model, X))


def test_agreement_accepts_gtil_and_refuses_what_differs(bench_export, fitted):
    X, models = fitted
    tree, forest = models["tree"], models["forest_regressor"]
    expected = bench_export.gpu_tree_predictions(tree, X)
    got = _gtil(tree, X)  # (rows, 1, classes): reshaped row by row
    report = bench_export.agreement(tree, got, expected)
    assert report["agree"] and report["bound"] == 0.0 and report["max_abs_difference"] == 0.0
    nudged = got.copy()
    nudged[7, 0, 1] += 2.0**-40  # a tree must be exact: one ulp-sized change fails it
    report = bench_export.agreement(tree, nudged, expected)
    assert not report["agree"] and report["worst_row"] == 7
    lost = got.copy()
    lost[3, 0, 0] = np.nan
    assert not bench_export.agreement(tree, lost, expected)["agree"]
    narrow = got.reshape(len(X), -1)[:, :1]
    report = bench_export.agreement(tree, narrow, expected)
    assert not report["agree"] and report["shapes"] == [[len(X), 1], [len(X), 2]]

    expected = bench_export.gpu_tree_predictions(forest, X)
    got = _gtil(forest, X)
    report = bench_export.agreement(forest, got, expected)
    largest = max(float(np.abs(e.tree_.value).max()) for e in forest.estimators_)
    assert report["bound"] == 5 * 2.0**-52 * largest and report["agree"]
    within = got.reshape(len(X), -1) + 0.5 * report["bound"]
    assert bench_export.agreement(forest, within, expected)["agree"]
    beyond = got.reshape(len(X), -1) + 2 * report["bound"]
    assert not bench_export.agreement(forest, beyond, expected)["agree"]


def test_bench_export_runs_and_checks_every_runtime(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sklearn")
    out = tmp_path / "export.json"
    result = subprocess.run(
        [
            sys.executable,
            str(BENCH / "bench_export.py"),
            *("--rows", "3000", "--trees", "2", "--depth", "4", "--repeats", "1"),
            *("--no-adult", "--skip", "tl2cgen", "--json", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    runs = {(r["case"], r["runtime"]): r for r in report["results"]}
    for case in ("forest", "tree", "tree_regressor"):
        assert runs[case, "gpu_tree"]["ratio_to_gpu_tree"] == 1.0
        for runtime in ("onnxruntime", "treelite_gtil"):
            run = runs[case, runtime]
            assert run["status"] == "ok" and run["agreement"]["agree"], run
            assert run["rows"] == 3000 and run["rows_per_second"] > 0
        assert runs[case, "tl2cgen"]["status"] == "skipped"
    assert "| forest | onnxruntime (export_onnx, float64) |" in result.stdout


# -- bench/gpu_check.py's nvForest step ----------------------------------------------------------
class GtilForest:
    """Stands in for nvForest's loaded forest: predicts with Treelite's GTIL, shaped as
    nvForest's output ((rows, classes) or (rows, 1)); ``shift`` spoils it."""

    def __init__(self, exported, classifier, shift=0.0):
        self.exported, self.shift = exported, shift
        if classifier:
            self.predict_proba = self._predict

    def _predict(self, X):
        out = treelite.gtil.predict(self.exported, np.asarray(X))
        return out.reshape(len(X), -1) + self.shift

    def predict(self, X):
        return self._predict(X)


class GtilNvforest:
    """Stands in for the nvforest module at its boundary: load_from_treelite_model."""

    def __init__(self, shift=0.0):
        self.shift, self.loads = shift, []

    def load_from_treelite_model(self, exported, *, device, precision):
        self.loads.append((device, precision))
        task = exported.get_header_accessor().get_field("task_type")
        return GtilForest(exported, classifier=task != 1, shift=self.shift)  # 1: kRegressor


def test_nvforest_case_compares_the_served_export_with_gpu_tree(gpu_check, fitted):
    X, models = fitted
    for model in models.values():
        stand_in = GtilNvforest()
        entry = gpu_check.nvforest_case(stand_in, model, X, repeats=2, device="cpu", xp=np)
        assert stand_in.loads == [("cpu", "double"), ("cpu", "single")]
        assert entry["equal"] and entry["rows"] == len(X)
        assert entry["double"]["agreement"]["agree"] and len(entry["double"]["runs_s"]) == 2
        spoiled = gpu_check.nvforest_case(
            GtilNvforest(shift=1e-9), model, X, repeats=1, device="cpu", xp=np
        )
        assert not spoiled["equal"]
    lines = gpu_check.render_nvforest({"status": "ran", "cases": {"tree": entry}})
    assert any(line.startswith("| tree | 400 |") for line in lines)


@pytest.fixture
def no_nvforest(monkeypatch):
    """nvforest not importable (find_spec gives None for a None entry of sys.modules)."""
    monkeypatch.setitem(sys.modules, "nvforest", None)


def test_nvforest_step_skips_with_the_install_hint(gpu_check, tmp_path, no_nvforest):
    gpu_check.step_nvforest(tmp_path, smoke=True)
    found = json.loads((tmp_path / "nvforest.json").read_text())
    assert found == {"status": gpu_check.NVFOREST_SKIPPED, "hint": gpu_check.NVFOREST_HINT}
    assert "pip install nvforest-cu13" in found["hint"]
    (line,) = [line for line in gpu_check.render_nvforest(found) if line]
    assert line.startswith("nvForest: skipped: nvforest not installed (pip install")


@pytest.mark.skipif(
    importlib.util.find_spec("nvforest") is not None,
    reason="nvforest installed: its step would run, not skip",
)
def test_the_check_goes_on_past_the_skip_unless_nvforest_is_carried(gpu_check, tmp_path):
    rc = gpu_check.run_all(tmp_path / "a", True, 300, "test", steps_wanted=("nvforest",))
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert rc == 0 and summary["steps"]["nvforest"]["status"] == gpu_check.NVFOREST_SKIPPED
    assert summary["carried_problem"] is None
    rc = gpu_check.run_all(
        tmp_path / "b", True, 300, "test", steps_wanted=("nvforest",), carried="nvforest"
    )
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert rc == 1 and summary["carried_problem"].startswith("--carried nvforest: nvforest")
    assert "carried wheels: --carried nvforest" in (tmp_path / "b" / "summary.md").read_text()


def test_carried_wheels_must_import(gpu_check):
    env = {"imports": {"xgboost": None, "nvforest": "not installed"}}
    assert gpu_check.carried_problem(env, None) is None
    assert gpu_check.carried_problem(env, "xgboost") is None
    assert (
        gpu_check.carried_problem(env, "nvforest") == "--carried nvforest: nvforest not installed"
    )
    skipped = {"status": gpu_check.NVFOREST_SKIPPED}
    assert gpu_check.step_passed("nvforest", skipped, None)
    assert not gpu_check.step_passed("nvforest", skipped, "nvforest")
    assert not gpu_check.step_passed("matrix", {"status": "skipped"}, None)


def test_steps_are_checked(gpu_check):
    assert gpu_check.parse_args(["out", "--steps", "env,probe,nvforest"]).steps == (
        "env",
        "probe",
        "nvforest",
    )
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["out", "--steps", "env,nvforrest"])
