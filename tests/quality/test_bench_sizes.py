"""bench/bench_sizes.py (issue 17's size sweep) runs its smallest configuration end to end
and reports what it says it does (no timing is judged)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _shared_data import dataset_path

BENCH = Path(__file__).resolve().parents[2] / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="not a source checkout")


def _run(*args):
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_sizes.py"), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _table_rows(text, first_header_cell):
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header_cell} |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    header, rule, body = rows[0], rows[1], rows[2:]
    assert all(len(row) == len(header) for row in [rule, *body])
    return header, body


@pytest.mark.parametrize("rows", ["1x", "k", "0", "-5k"])
def test_a_bad_row_count_is_refused_by_name(rows):
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_sizes.py"), "--rows", f"1k,{rows}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "--rows:" in result.stderr and repr(rows) in result.stderr


def test_the_smallest_sweep_measures_every_tool_and_reports_ratios(tmp_path):
    pytest.importorskip("sklearn")
    out = tmp_path / "sizes.json"
    stdout = _run(
        *("--rows", "0.3k", "--depths", "3,full", "--datasets", "higgs,cat20"),
        *("--peers", "sklearn,hist_gb", "--repeats", "2", "--parts", "sweep"),
        *("--json", str(out)),
    )
    report = json.loads(out.read_text())
    assert report["args"]["rows"] == [300] and report["args"]["depths"] == ["3", "full"]
    assert report["grid_search"] is None
    entries = report["sweep"]
    assert [(e["dataset"], e["max_depth"]) for e in entries] == [
        ("higgs", "3"),
        ("higgs", "full"),
        ("cat20", "3"),
        ("cat20", "full"),
    ]
    for e in entries:
        assert e["rows"] == 300 and e["test_rows"] == 250
        assert set(e["tools"]) == {"gpu_tree", "sklearn", "hist_gb"}
        ours = e["tools"]["gpu_tree"]
        for name, item in e["tools"].items():
            assert item["status"] == "ok", (name, item["status"])
            assert len(item["fit_seconds"]) == 2 and len(item["predict_seconds"]) == 2
            assert item["fit_median_seconds"] > 0 and 0 <= item["accuracy_percent"] <= 100
            if e["max_depth"] == "3":
                assert item["depth"] <= 3 and 2 <= item["leaves"] <= 8
            if name != "gpu_tree":
                expected = item["fit_median_seconds"] / ours["fit_median_seconds"]
                assert item["fit_ratio"] == pytest.approx(expected)
                assert item["predict_ratio"] == pytest.approx(
                    item["predict_median_seconds"] / ours["predict_median_seconds"]
                )
    assert entries[2]["categorical_columns"] == list(range(8)) and entries[2]["features"] == 12
    # The table: one row per configuration, a fit and a predict ratio per peer.
    header, body = _table_rows(stdout, "data")
    assert header[:3] == ["data", "rows", "depth"]
    assert "sklearn fit ×" in header and "HistGB predict ×" in header
    assert "LightGBM fit ×" not in header
    assert [row[:3] for row in body] == [
        ["higgs", "300", "3"],
        ["higgs", "300", "full"],
        ["cat20", "300", "3"],
        ["cat20", "300", "full"],
    ]
    column = header.index("sklearn fit ×")
    assert all(row[column].endswith("x") for row in body)


def test_a_peer_projected_past_the_time_limit_is_skipped_and_named(tmp_path):
    pytest.importorskip("sklearn")
    out = tmp_path / "sizes.json"
    stdout = _run(
        *("--rows", "200,20000", "--depths", "2", "--datasets", "higgs"),
        *("--peers", "sklearn", "--repeats", "1", "--parts", "sweep"),
        *("--max-fit-seconds", "0.000001", "--json", str(out)),
    )
    entries = json.loads(out.read_text())["sweep"]
    assert entries[0]["tools"]["sklearn"]["status"] == "ok"  # nothing to project from
    skipped = entries[1]["tools"]["sklearn"]
    assert skipped["status"].startswith("skipped") and skipped["fit_seconds"] == []
    assert entries[1]["tools"]["gpu_tree"]["status"] == "ok"  # the reference always runs
    assert "Not measured:" in stdout and "skipped: a fit projected" in stdout


def test_real_data_sizes_stop_at_the_training_rows(tmp_path):
    pytest.importorskip("pandas")
    dataset_path("nursery.arff")  # skips where ../shared/datasets is absent
    out = tmp_path / "sizes.json"
    _run(
        *("--rows", "1000,100000,1000000", "--depths", "2", "--datasets", "nursery"),
        *("--peers", "hist_gb", "--repeats", "1", "--parts", "sweep", "--json", str(out)),
    )
    entries = json.loads(out.read_text())["sweep"]
    assert [e["rows"] for e in entries] == [1000, 9072]  # 70 % of nursery's 12,960 rows
    assert [e["all_rows"] for e in entries] == [False, True]
    assert entries[1]["categorical_columns"] == list(range(8))


def test_the_penguins_grid_search_runs_fifty_fits_per_tool(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    dataset_path("penguins.csv")
    out = tmp_path / "sizes.json"
    stdout = _run("--parts", "gridsearch", "--repeats", "1", "--json", str(out))
    grid = json.loads(out.read_text())["grid_search"]
    assert grid["fits"] == 50 and grid["rows"] > 300
    assert set(grid["tools"]) == {"gpu_tree", "sklearn"}
    for item in grid["tools"].values():
        assert item["median_seconds"] > 0 and item["best_cv_accuracy_percent"] > 90
    assert grid["tools"]["sklearn"]["ratio"] == pytest.approx(
        grid["tools"]["sklearn"]["median_seconds"] / grid["tools"]["gpu_tree"]["median_seconds"]
    )
    header, body = _table_rows(stdout, "tool")
    assert [row[0] for row in body] == ["gpu_tree", "sklearn"]


def test_the_features_part_measures_each_case_against_its_reference(tmp_path):
    """Two cases at two sizes: both sides timed at each, the ratio theirs / ours, the
    quality of both, and every figure below 1× listed with its case's cause."""
    pytest.importorskip("sklearn")
    out = tmp_path / "features.json"
    stdout = _run(
        *("--parts", "features", "--cases", "random_forest,prediction"),
        *("--rows", "0.3k,0.6k", "--repeats", "2", "--json", str(out)),
    )
    entries = json.loads(out.read_text())["features"]
    assert [(e["key"], e["rows"]) for e in entries] == [
        ("random_forest", 300),
        ("random_forest", 600),
        ("prediction", 300),
        ("prediction", 600),
    ]
    for e in entries:
        assert len(e["gpu_tree_seconds"]) == len(e["reference_seconds"]) == 2
        ours, theirs = np.median(e["gpu_tree_seconds"]), np.median(e["reference_seconds"])
        assert e["ratio"] == pytest.approx(theirs / ours)
        assert 40 <= e["gpu_tree_quality"] <= 100 and 40 <= e["reference_quality"] <= 100
    header, body = _table_rows(stdout, "feature")
    assert len(body) == 4 and header[6] == "ratio"
    below = [e for e in entries if e["ratio"] < 1]
    for e in below:
        assert f"{e['case']}, {e['rows']:,} rows: {e['ratio']:.2f}x" in stdout


def test_an_unknown_feature_case_is_refused_by_name():
    result = subprocess.run(
        [sys.executable, str(BENCH / "bench_sizes.py"), "--parts", "features", "--cases", "boost"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "unknown cases ['boost']" in result.stderr
