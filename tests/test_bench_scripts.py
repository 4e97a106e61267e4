"""The benchmark scripts run end to end on tiny sizes (smoke tests: no timing is judged)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="not a source checkout")


def _run(script, *args, env=None):
    result = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_cpu_benchmark_runs_and_writes_json(tmp_path):
    pytest.importorskip("sklearn")
    out = tmp_path / "cpu.json"
    stdout = _run(
        "bench_cpu.py", "--rows", "4000", "--depth", "4", "--repeats", "1",
        "--skip", "lightgbm,xgboost,hist_gb", "--warmup-rows", "500", "--json", str(out),
    )  # fmt: skip
    assert "gpu_tree" in stdout and "sklearn DecisionTree" in stdout
    assert out.is_file() and json.loads(out.read_text())


def test_gpu_benchmark_runs_under_the_simulator(tmp_path):
    out = tmp_path / "gpu.json"
    stdout = _run(
        "bench_gpu.py", "--rows", "2000", "--features", "4", "--depth", "3", "--bins", "16",
        "--repeats", "1", "--predict-rows", "300", "--json", str(out),
        env={"NUMBA_ENABLE_CUDASIM": "1"},
    )  # fmt: skip
    results = json.loads(out.read_text())
    assert results["simulated"] and results["leaves"] >= 2 and results["histogram_floor_bytes"] > 0
    assert "device tree build alone" in stdout


def test_categorical_benchmark_runs_and_writes_markdown(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    shared = BENCH.parent.parent / "shared" / "datasets"
    if not (shared / "car_evaluation.arff").is_file() or not (shared / "penguins.csv").is_file():
        pytest.skip(f"shared datasets not available ({shared} absent)")
    out = tmp_path / "categorical.md"
    stdout = _run(
        "bench_categorical.py", "--datasets", "car_evaluation,penguins", "--depths", "4",
        "--repeats", "1", "--out", str(out),
    )  # fmt: skip
    table = [line for line in stdout.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 3 + 2  # header; car: native, multiway, one-hot; penguins: 2
    assert "gpu_tree multiway, gain_ratio" in stdout and "sklearn one-hot" in stdout
    assert out.read_text() in stdout
