"""``gputree bench``'s accuracy gate: the quick start's main job fails when gpu_tree is broken.

The bar is the best peer's accuracy minus 1 point (wider on test sets too small to tell 1
point), or, with no peer, the floor derived in gpu_tree/app/bench.py for the default dataset.
Real runs here are small (100,000 rows is the smallest size the floor is derived for).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _backends import without_compiled_search
from _cli import run_cli

import gpu_tree.estimators.tree as estimators
import gpu_tree.growing.grower as grower_module
import gpu_tree.growing.splitting as splitting
from gpu_tree.app import bench as _bench
from gpu_tree.app.bench import FLOOR, GateVerdict, Result, accuracy_gate, gate_line
from gpu_tree.backends.cpu import CPUHistogramBackend

FLOOR_ROWS = "100000"  # 80,000 to train: the smallest default size, the floor's own


def run(*args):
    return run_cli("-q", *args)


def assert_gate_error(result, *phrases):
    """Exit 2, the table on stdout first, and one 'gputree: error:' line naming the bar."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gputree: error: accuracy gate failed: ")
    assert "gpu_tree's accuracy" in lines[0] and "is below the bar" in lines[0]
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stdout.splitlines()[1].startswith("model ")  # the table was printed
    assert "\ngpu_tree " in result.stdout
    return lines[0]


class Stump(estimators.DecisionTreeClassifier):
    """A trainer that ignores max_depth and stops after one split."""

    def fit(self, X, y, sample_weight=None):
        self.max_depth = 1
        return super().fit(X, y, sample_weight)


def _wrong_sign(monkeypatch):
    """The split criterion's sign flipped: every node takes its worst split (or none). In
    the vectorised search, which then searches every level (not the compiled one, nor the
    subtree finisher, which would grow a small tree whole)."""
    real = splitting.weighted_split_score
    monkeypatch.setattr(splitting, "weighted_split_score", lambda *a, **k: -real(*a, **k))
    monkeypatch.setattr(
        CPUHistogramBackend, "capabilities", without_compiled_search(CPUHistogramBackend)
    )
    monkeypatch.setattr(grower_module, "FINISH_BELOW_ROWS", 0)
    monkeypatch.setattr(grower_module, "FINISH_ROOT_BELOW_ROWS", 0)


def _make_stump(monkeypatch):
    monkeypatch.setattr(estimators, "DecisionTreeClassifier", Stump)


BROKEN = {"stump": _make_stump, "wrong criterion sign": _wrong_sign}


# -- the real command ---------------------------------------------------------------------------
def test_gate_passes_on_the_default_dataset_without_peers_and_reports_it_in_json(tmp_path):
    out = tmp_path / "bench.json"
    result = run("bench", "--rows", FLOOR_ROWS, "--no-peers", "--repeats", "1", "--json", out)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    gate = json.loads(out.read_text())["gate"]
    assert gate["status"] == "passed" and gate["passed"] is True
    assert gate["against"] == "floor" and gate["bar"] == FLOOR
    assert gate["accuracy"] >= FLOOR
    assert (
        f"accuracy gate passed: gpu_tree's accuracy {100 * gate['accuracy']:.2f}%" in result.stdout
    )


@pytest.mark.parametrize("breakage", sorted(BROKEN))
def test_gate_fails_below_the_floor_when_gpu_tree_is_broken(breakage, tmp_path, monkeypatch):
    BROKEN[breakage](monkeypatch)
    out = tmp_path / "bench.json"
    result = run("bench", "--rows", FLOOR_ROWS, "--no-peers", "--repeats", "1", "--json", out)
    gate = json.loads(out.read_text())["gate"]  # written before the failure
    assert gate["status"] == "failed" and gate["passed"] is False and gate["accuracy"] < FLOOR
    assert_gate_error(
        result, f"gpu_tree's accuracy {100 * gate['accuracy']:.2f}%", "the bar 69.70%", "floor"
    )


def test_gate_passes_with_peers_at_a_small_size(tmp_path):
    pytest.importorskip("sklearn")
    out = tmp_path / "bench.json"
    result = run("bench", "--rows", "10000", "--repeats", "1", "--json", out)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(out.read_text())
    gate = report["gate"]
    peers = {r["name"]: r["accuracy"] for r in report["results"][1:] if r["status"] == "ok"}
    assert gate["status"] == "passed" and gate["against"] in peers
    assert gate["reference"] == max(peers.values())
    assert gate["bar"] <= gate["reference"] - 0.01  # at least the 1 point


def test_gate_fails_against_a_peer_when_gpu_tree_is_broken(tmp_path, monkeypatch):
    pytest.importorskip("sklearn")
    _wrong_sign(monkeypatch)
    out = tmp_path / "bench.json"
    result = run("bench", "--rows", "10000", "--repeats", "1", "--json", out)
    gate = json.loads(out.read_text())["gate"]
    assert gate["status"] == "failed" and gate["against"].startswith("scikit-learn")
    assert_gate_error(
        result,
        f"gpu_tree's accuracy {100 * gate['accuracy']:.2f}%",
        f"the bar {100 * gate['bar']:.2f}%",
        f"best peer {gate['against']} {100 * gate['reference']:.2f}%",
    )


def test_settings_the_floor_was_not_derived_for_are_not_checked_without_peers(tmp_path):
    out = tmp_path / "bench.json"
    result = run(
        "bench", "--rows", "2000", "--depth", "4", "--no-peers", "--repeats", "1", "--json", out
    )
    assert result.exit_code == 0, (result.stdout, result.stderr)
    gate = json.loads(out.read_text())["gate"]
    assert gate["status"] == "not checked" and gate["passed"] is True
    assert "depth 10" in gate["reason"] and "80,000 training rows" in gate["reason"]
    assert "accuracy gate not checked: no peer ran" in result.stdout


# -- the gate function, with results injected ---------------------------------------------------
SETTINGS = {
    "features": 28,
    "classes": 2,
    "depth": 10,
    "bins": 256,
    "criterion": "gini",
    "train_rows": 160_000,
}


def _result(name, accuracy, status="ok", predictions=None):
    return Result(name, "cpu", status=status, accuracy=accuracy, predictions=predictions)


def test_gate_compares_with_the_best_peer_that_ran_within_one_point():
    results = [
        _result("gpu_tree", 0.7060),
        _result("peer A", 0.7100),
        _result("peer B", 0.7150),
        _result("broken peer", None, status="failed"),
    ]
    verdict = accuracy_gate(results, SETTINGS)
    assert verdict.status == "passed" and verdict.against == "peer B"
    assert verdict.bar == pytest.approx(0.7050) and verdict.tolerance_pp == 1.0
    results[0].accuracy = 0.7040
    verdict = accuracy_gate(results, SETTINGS)
    assert verdict.status == "failed" and not verdict.passed
    message = gate_line(verdict)
    assert "gpu_tree's accuracy 70.40% is below the bar 70.50%" in message
    assert "best peer peer B 71.50% minus 1 point" in message


def test_gate_widens_to_three_paired_standard_errors_on_a_small_test_set():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=400)
    theirs = np.where(rng.random(400) < 0.72, y, 1 - y)
    ours = np.where(rng.random(400) < 0.15, 1 - theirs, theirs)  # disagree on ~15% of rows
    results = [
        _result("gpu_tree", float(np.mean(ours == y)), predictions=ours),
        _result("peer", float(np.mean(theirs == y)), predictions=theirs),
    ]
    discordant = np.count_nonzero((ours == y) != (theirs == y))
    expected = 3 * np.sqrt(discordant) / 400
    verdict = accuracy_gate(results, SETTINGS, y_test=y)
    assert expected > 0.01 and verdict.tolerance_pp == pytest.approx(100 * expected)
    assert verdict.bar == pytest.approx(results[1].accuracy - expected)
    assert "3 paired standard errors" in verdict.reason
    # A broken gpu_tree (a constant) is still far below the wider bar.
    constant = np.zeros(400, dtype=int)
    results[0] = _result("gpu_tree", float(np.mean(constant == y)), predictions=constant)
    assert accuracy_gate(results, SETTINGS, y_test=y).status == "failed"


def test_gate_without_peers_uses_the_floor_only_where_it_was_derived():
    ours = [_result("gpu_tree", FLOOR - 0.005), _result("peer", None, status="failed")]
    verdict = accuracy_gate(ours, SETTINGS)
    assert verdict.status == "failed" and verdict.against == "floor" and verdict.bar == FLOOR
    assert (
        "gpu_tree's accuracy 69.20% is below the bar 69.70%: no peer ran; the floor"
        in gate_line(verdict)
    )
    ours[0].accuracy = FLOOR
    assert accuracy_gate(ours, SETTINGS).status == "passed"
    ours[0].accuracy = 0.5
    for change in (
        {"classes": 3},
        {"features": 10},
        {"depth": 8},
        {"bins": 64},
        {"train_rows": 79_999},
    ):
        verdict = accuracy_gate(ours, {**SETTINGS, **change})
        assert verdict.status == "not checked" and verdict.passed, change
    verdict = accuracy_gate([_result("gpu_tree", 0.5)], {**SETTINGS, "criterion": "cart"})
    assert verdict.status == "not checked" and "criterion cart" in verdict.reason


def test_verdict_as_json():
    verdict = GateVerdict("failed", 0.6, 0.697, "floor", 0.697, None, "why")
    assert json.loads(json.dumps(verdict.as_dict())) == {
        "status": "failed",
        "passed": False,
        "accuracy": 0.6,
        "bar": 0.697,
        "against": "floor",
        "reference": 0.697,
        "tolerance_pp": None,
        "reason": "why",
    }
    assert _bench.FLOOR_SETTINGS["min_train_rows"] == 80_000
