"""The benchmark scripts run end to end on tiny sizes (smoke tests: no timing is judged)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _shared_data import dataset_path

BENCH = Path(__file__).resolve().parents[2] / "bench"
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
        "bench_cpu.py",
        "--rows",
        "4000",
        "--depth",
        "4",
        "--repeats",
        "1",
        "--skip",
        "lightgbm,xgboost,hist_gb",
        "--warmup-rows",
        "500",
        "--json",
        str(out),
    )
    assert "gpu_tree" in stdout and "scikit-learn DecisionTreeClassifier" in stdout
    assert out.is_file() and json.loads(out.read_text())


def test_regression_precision_benchmark_measures_every_node(tmp_path):
    out = tmp_path / "precision.json"
    stdout = _run(
        "bench_regression_precision.py",
        *("--rows", "3000", "--depth", "3", "--only", "offset 10000", "--json", str(out)),
    )
    assert "offset 10000" in stdout
    report = json.loads(out.read_text())
    by_target = {r["target"]: r for r in report["results"]}
    assert set(by_target) == {"offset 0", "offset 10000"}
    base = by_target["offset 0"]
    # The numpy two-pass variance of the root is the target's variance, and the
    # offset-free tree's impurities agree with it closely (a check the script can fail).
    assert base["root_variance_numpy"] > 0
    assert base["worst_relative_impurity_error"] < 1e-6
    assert "same_tree_as_offset_0" in by_target["offset 10000"]


def test_gpu_benchmark_runs_under_the_simulator(tmp_path):
    out = tmp_path / "gpu.json"
    stdout = _run(
        "bench_gpu.py",
        "--rows",
        "2000",
        "--features",
        "4",
        "--depth",
        "3",
        "--bins",
        "16",
        "--repeats",
        "1",
        "--predict-rows",
        "300",
        "--json",
        str(out),
        env={"NUMBA_ENABLE_CUDASIM": "1"},
    )
    results = json.loads(out.read_text())
    assert results["simulated"] and results["leaves"] >= 2 and results["histogram_floor_bytes"] > 0
    assert "device tree build alone" in stdout


def test_categorical_benchmark_runs_and_writes_markdown(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    dataset_path("car_evaluation.arff")  # skips (or fails where required) when absent
    dataset_path("penguins.csv")
    out = tmp_path / "categorical.md"
    stdout = _run(
        "bench_categorical.py",
        "--datasets",
        "car_evaluation,penguins",
        "--depths",
        "4",
        "--repeats",
        "1",
        "--out",
        str(out),
    )
    table = [line for line in stdout.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 3 + 2  # header; car: native, multiway, one-hot; penguins: 2
    assert "gpu_tree multiway, gain_ratio" in stdout and "sklearn one-hot" in stdout
    assert out.read_text() in stdout


# -- issue 7: the GPU matrix, the bytes model, the kernel resource report ----------------------
def _bench_module(name):
    """Import bench/<name>.py (bench/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _markdown_tables(text):
    """Each markdown table of ``text`` as a list of rows of cells; checks they are regular."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif current:
            tables.append(current)
            current = []
    for table in tables:
        assert len(table) >= 3, table  # header, separator, rows
        assert set("".join(table[1])) <= set("-:"), table[1]
        assert {len(row) for row in table} == {len(table[0])}, table
    return tables


def test_gpu_matrix_runs_under_the_simulator_and_writes_its_tables(tmp_path):
    import csv

    out = tmp_path / "matrix"
    stdout = _run(
        "bench_gpu_matrix.py",
        "--smoke",
        "--out",
        str(out),
        "--datasets",
        "higgs",
        "--peers",
        "sklearn_tree,xgboost_cuda,selftest_crash",
        env={"NUMBA_ENABLE_CUDASIM": "1"},
    )
    text = (out / "matrix.md").read_text()
    assert text in stdout
    tables = _markdown_tables(text)
    assert len(tables) == 1 + 1 + 2 + 1 + 1  # bandwidth, gpu_tree, 2 level tables, peers, goals
    gpu_header = tables[1][0]
    assert gpu_header[4:7] == ["device build ms", "input copy ms", "set-up copies ms"]
    assert tables[-1][0] == ["goal", "measured", "goal", "met?"] and len(tables[-1]) == 2 + 7
    results = json.loads((out / "matrix.json").read_text())
    assert results["meta"]["simulated"]
    for name in ("higgs", "covertype"):
        entry = results["gpu_tree"][name]["3"]
        assert "error" not in entry, entry
        assert entry["leaves"] >= 2 and entry["device_build_s"] > 0 and entry["predict_s"] > 0
        # The build excludes the copies, timed apart: X's, and the backend's set-up (labels).
        assert entry["input_copy_s"] >= 0 and entry["setup_copy_s"] > 0
        assert len(entry["setup_copy_runs_s"]) == len(entry["device_build_runs_s"])
        assert entry["model_bytes"]["one_pass_floor"] > 0
    peers = results["peers"]["higgs"]
    assert "simulator" in peers["xgboost_cuda"]["skipped"]
    assert "exit 3" in peers["selftest_crash"]["failed"]  # a dying peer is recorded
    assert "covertype" not in results["peers"]
    with open(out / "levels.csv", newline="") as handle:
        levels = list(csv.DictReader(handle))
    for name in ("higgs", "covertype"):
        rows = [r for r in levels if r["dataset"] == name]
        assert [int(r["level"]) for r in rows] == [0, 1, 2]
        assert int(rows[0]["built_rows"]) == int(rows[0]["split_rows"]) > 0
        assert all(float(r["hist_kernel_s"]) > 0 for r in rows)
        assert int(rows[1]["derived"]) >= 1  # the subtraction trick was used
    # --merge joins runs into one set of tables (no device needed).
    merged = tmp_path / "merged"
    _run(
        "bench_gpu_matrix.py",
        "--merge",
        str(out / "matrix.json"),
        str(out / "matrix.json"),
        "--out",
        str(merged),
    )
    assert _markdown_tables((merged / "matrix.md").read_text())[-1] == tables[-1]


def test_gpu_matrix_forest_case_runs_under_the_simulator(tmp_path):
    """The matrix's forest case: bench_forest.py on the device (gpu_tree alone under the
    simulator), its table and JSON in --out."""
    out = tmp_path / "matrix"
    _run(
        "bench_gpu_matrix.py",
        "--smoke",
        "--only",
        "forest",
        "--out",
        str(out),
        env={"NUMBA_ENABLE_CUDASIM": "1"},
    )
    text = (out / "forest.md").read_text()
    assert "gpu_tree" in text and _markdown_tables(text)
    measured = json.loads((out / "forest.json").read_text())
    assert "cuda" in json.dumps(measured)


def test_bench_cuda_extra_brings_xgboost_with_cuda():
    """The bench extra's xgboost-cpu has no GPU mode; bench-cuda brings the CUDA build (the
    xgboost wheel) with the same other peers and the cuda13 extra's CuPy and numba-cuda,
    and the README says to use it on a GPU."""
    tomllib = pytest.importorskip("tomllib")

    root = BENCH.parent
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]

    def names(requirements):
        return {re.split(r"[\[<>=!~ ]", r, maxsplit=1)[0] for r in requirements}

    assert "xgboost" in names(extras["bench-cuda"])
    assert "xgboost-cpu" not in names(extras["bench-cuda"])
    assert names(extras["bench"]) - {"xgboost-cpu"} <= names(extras["bench-cuda"])
    assert set(extras["cuda13"]) <= set(extras["bench-cuda"])
    assert '".[bench-cuda]"' in (root / "README.md").read_text()


def test_bytes_model_matches_a_hand_computed_case():
    model = _bench_module("bytes_model")
    shape = model.Shape(n_rows=1000, n_features=4, n_bins=16, n_classes=2)
    # int32 class counts (unweighted): H bytes of histogram per node.
    H = 4 * 16 * 2 * 4
    assert shape.node_hist_bytes == H == 512
    # Scoring: 3 reads of the histogram plus two feature rows (H / 4 each); scratch per
    # feature prefix + totals (2 channels x int64 each) + 4 float64 results, per node 16
    # bytes, and a winner row of 6 + 2 x 2 int64.
    scoring = 3 * H + 2 * H // 4 + 4 * (2 * 2 * 8 + 32) + 16 + (6 + 4) * 8
    # The compaction, per row of n: the slot gather (node id read, int32 slot written),
    # >= 0 (slot read, bool written), cumsum (astype: bool read, int32 written; CUB's
    # scan: read and write), - 1 (read, write), where (the mask copied, then mask and
    # place read, target written), the scatter (target and all_rows read); and the
    # listed rows' indices written.
    per_row = (4 + 4) + (4 + 1) + (1 + 4) + (4 + 4) + (4 + 4) + (1 + 1) + (1 + 4 + 4) + (4 + 4)
    assert model.COMPACTION_BYTES_PER_ROW == per_row == 53
    compaction = 1000 * 53 + 400 * 4
    root = model.level_bytes(shape, model.LevelWork(0, 1, 1, 1000, 1, 1000, 1))
    # Shared kernel, one feature group, every row listed (all_rows as it is: no
    # compaction): list 4000 + node ids 4000 + codes 4000 + labels 4000, zero fill and
    # result H each; partition: node ids read + written 8000, one code per row 1000;
    # nothing regrouped after it.
    assert root.path == "shared"
    assert root.as_implemented["row list: compaction (CuPy)"] == 0
    assert root.as_implemented_total == 4 * 4000 + 2 * H + scoring + 9000
    assert root.histogram_kernel_l2_kept == 4 * 4000 + 2 * H  # one sweep: nothing to keep
    assert root.one_pass_floor == 1000 * (4 + 4 + 4) + H + H + 1000 * (1 + 8)
    # Only the built rows' codes and labels, and a stable partition of the row indices.
    assert root.ideal_floor == 1000 * (4 + 4) + H + H + 1000 * (1 + 8) + 1000 * 8
    assert root.histogram_atomics == 1 * 4 * 16 * 2
    assert root.row_atomics == 0
    # Level 1: 400 rows in the built child (40%), the sibling by subtraction, two split
    # features. Labels and node ids: 8 per sector, 1 - 0.6**8 of the sectors; codes: 32
    # per sector, all but 0.6**32 of them.
    level = model.level_bytes(shape, model.LevelWork(1, 2, 1, 400, 2, 1000, 2))
    labels = round(1000 * 4 * (1 - 0.6**8))
    assert labels == 3933
    assert level.as_implemented["hist: labels"] == labels
    assert level.as_implemented["hist: node ids"] == labels
    assert level.as_implemented["hist: row list reads"] == 400 * 4
    assert level.as_implemented["row list: compaction (CuPy)"] == compaction
    assert level.as_implemented["subtraction"] == 5 * H
    assert level.as_implemented_total == (
        1600 + 2 * labels + 4000 + 2 * H + 5 * H + 2 * scoring + 8000 + 2000 + compaction
    )
    hist_terms = H + 3 * H + 2 * H
    assert level.one_pass_floor == 2 * labels + 4000 + hist_terms + 9000  # no row list
    assert level.ideal_floor == 400 * 8 + hist_terms + 9000 + 8000
    # Level 2: two built nodes of 200 rows each, listed together in row order: the same
    # compaction, and the node ids and labels read as the 40% of the rows in one sweep
    # touch them (not node by node: 2 x (1 - 0.8**8) of the sectors, 6658 bytes).
    level = model.level_bytes(shape, model.LevelWork(2, 4, 2, 400, 4, 1000, 4))
    assert level.as_implemented["row list: compaction (CuPy)"] == compaction
    assert level.as_implemented["hist: node ids"] == labels < round(2 * 4000 * (1 - 0.8**8))
    assert level.as_implemented["hist: labels"] == labels
    reads = 1600 + 2 * labels + 4000
    assert level.histogram_kernel_l2_kept == reads + 2 * 2 * H  # one feature group
    assert level.histogram_kernel_bytes == level.histogram_kernel_l2_kept
    # 7 classes x 256 bins: 4 built nodes (7,168 entries a feature) fit a block's 12,288
    # int32 shared entries, not its 6,144 int64 ones (weighted: 8 channels).
    wide = model.Shape(n_rows=1024, n_features=4, n_bins=256, n_classes=7)
    weighted = model.Shape(n_rows=1024, n_features=4, n_bins=256, n_classes=7, weighted=True)
    four_built = model.LevelWork(3, 8, 4, 512, 8, 1024)
    assert model.level_bytes(wide, four_built).path == "shared"
    assert model.level_bytes(weighted, four_built).path == "global"
    # 8 built nodes fit neither: the global kernel reads the list, node ids and labels
    # once per feature (4 sweeps), half the rows in row order (255 of 256 sectors: 4080
    # bytes of 4096); kept in L2 across sweeps they would be read once.
    deep = model.level_bytes(wide, model.LevelWork(4, 16, 8, 512, 16, 1024))
    assert deep.path == "global"
    assert deep.as_implemented["hist: node ids"] == 4 * 4080
    assert deep.as_implemented["hist: labels"] == 4 * 4080
    assert deep.as_implemented["hist: row list reads"] == 4 * 512 * 4
    kept = 512 * 4 + 2 * 4080 + deep.as_implemented["hist: codes"] + 2 * 8 * wide.node_hist_bytes
    assert deep.histogram_kernel_l2_kept == kept
    assert deep.histogram_kernel_bytes - kept == 3 * (512 * 4 + 2 * 4080)
    assert deep.histogram_atomics == 512 * 4
    assert model.seconds(4.8e12, 4800.0) == pytest.approx(1.0)
    levels = model.assumed_levels(shape, 3, smaller_fraction=0.25)
    assert [(w.n_nodes, w.n_built, w.built_rows) for w in levels] == [
        (1, 1, 1000),
        (2, 1, 250),
        (4, 2, 250),
    ]
    text = model.predictions_markdown(depths=(3,), shapes={"tiny": shape})
    assert "| level |" in text
    for table in _markdown_tables(text):
        assert len({len(row) for row in table}) == 1


def test_bytes_model_histogram_bytes_follow_the_built_rows_not_n():
    """The histogram launch visits only the built rows, in row order: a level whose
    1,000 built rows sit among 10 times more rows reads about the same bytes (each row
    costs at most a sector per gathered array), where a sweep over every row would read
    10 times more; the compaction and the partition, which do sweep every row, scale."""
    model = _bench_module("bytes_model")
    work = model.LevelWork(6, 64, 32, 1000, 64, 1000, 3)
    small, large = (
        model.level_bytes(model.Shape(n, 28, 256, 2), work) for n in (1_000_000, 10_000_000)
    )

    def kernel_reads(lv):  # the launch's row reads (as bench_gpu_matrix sums them)
        return sum(
            v
            for k, v in lv.as_implemented.items()
            if k.startswith("hist:") and "fill" not in k and "result" not in k
        )

    assert kernel_reads(large) == pytest.approx(kernel_reads(small), rel=0.01)
    # At most a 32-byte sector per row and gathered array in every sweep (node id,
    # label; the codes once per feature), plus the list; at least the ideal floor's bytes.
    sweeps = 28  # the global kernel: 32 nodes x 256 bins x 2 classes leave no shared room
    assert small.path == large.path == "global"
    assert kernel_reads(large) <= sweeps * 1000 * (4 + 32 + 32) + 28 * 1000 * 32
    assert kernel_reads(large) >= 1000 * (28 + 4)
    # The compaction: 53 bytes per row of n, 4 per listed row; 10 times the rows, about
    # 10 times the bytes.
    compaction = "row list: compaction (CuPy)"
    assert small.as_implemented[compaction] == 1_000_000 * 53 + 1000 * 4
    ratio = large.as_implemented[compaction] / small.as_implemented[compaction]
    assert ratio == pytest.approx(10, rel=0.001)
    ratio = (
        large.as_implemented["partition: node ids r/w"]
        / small.as_implemented["partition: node ids r/w"]
    )
    assert ratio == pytest.approx(10, rel=0.01)
    # No regroup: no sort of the node ids, no per-node segments.
    for lv in (small, large):
        assert not any("sort" in k or "regroup" in k or "segment" in k for k in lv.as_implemented)
    assert not hasattr(model, "SORT_BYTES_PER_ROW")
    # Every row listed (all_rows as it is): no compaction, at any n.
    everything = model.LevelWork(5, 32, 16, 1_000_000, 32, 1_000_000, 3)
    whole = model.level_bytes(model.Shape(1_000_000, 28, 256, 2), everything)
    assert whole.as_implemented[compaction] == 0


@pytest.mark.parametrize("weighted", [False, True])
def test_bytes_model_regression_adds_the_variance_passes(weighted):
    """A regression level moves what a classification level does outside the histograms,
    plus its two variance passes: pass 1's reads of the split rows' targets (and
    weights) in the partition, and the squared-deviation pass over every row's node id
    and the children's targets again; five row atomics per split row."""
    model = _bench_module("bytes_model")
    n = 100_000
    work = model.LevelWork(3, 8, 4, 30_000, 8, 60_000, 5)
    classification = model.level_bytes(model.Shape(n, 10, 64, 2, weighted), work)
    regression = model.level_bytes(model.Shape(n, 10, 64, 0, weighted), work)

    def row_passes(lv):
        return sum(
            v for k, v in lv.as_implemented.items() if k.startswith(("partition", "squared"))
        )

    # float64 targets (and weights): 4 per sector, 60% of the rows needed.
    targets = (2 if weighted else 1) * round(n * 8 * (1 - 0.4**4))
    pass_2 = regression.as_implemented["squared deviations (pass 2)"]
    assert pass_2 == n * 4 + targets
    assert regression.as_implemented["partition: targets (pass 1)"] == targets
    assert row_passes(regression) - row_passes(classification) == targets + pass_2
    assert regression.row_atomics == 60_000 * (3 + 2) and classification.row_atomics == 0
    # No split, no partition, no variance pass.
    unsplit = model.level_bytes(model.Shape(n, 10, 64, 0), model.LevelWork(3, 8, 4, 30_000, 0, 0))
    assert not any(k.startswith(("partition", "squared")) for k in unsplit.as_implemented)
    assert unsplit.row_atomics == 0


def test_bytes_model_constants_follow_the_kernels():
    import numpy as np

    from gpu_tree.kernels.cuda import histograms as cuda_histograms
    from gpu_tree.kernels.cuda import launch as cuda_launch
    from gpu_tree.kernels.cuda import split_scan as cuda_split_scan

    model = _bench_module("bytes_model")
    assert model.SHARED_HISTOGRAM_BYTES == cuda_histograms.SHARED_HISTOGRAM_BYTES
    assert model.THREADS_PER_BLOCK == cuda_launch.THREADS_PER_BLOCK
    assert model.WINNER_FIXED_COLUMNS == cuda_split_scan.WINNER_FIXED_COLUMNS
    for n_rows in (1, 5_000, 4_096 * 300, 10_500_000):
        (blocks, _), _ = cuda_histograms.shared_launch_config(n_rows, 1, simulator=False)
        assert model.row_blocks(n_rows) == blocks
    for hist_slots, bins, classes, features in (
        (1, 256, 2, 28),
        (8, 256, 2, 28),
        (16, 256, 2, 28),
        (2, 256, 7, 54),
        (4, 256, 7, 54),
        (1, 16, 3, 5),
    ):
        # Unweighted: int32 class counts; weighted: int64, with a count channel.
        for weighted, dtype in ((False, np.int32), (True, np.int64)):
            shape = model.Shape(10, features, bins, classes, weighted=weighted)
            assert model.shared_features_per_block(hist_slots, shape) == (
                cuda_histograms.shared_features_per_block(
                    hist_slots, bins, shape.n_channels, features, dtype
                )
            )


def test_kernel_resources_occupancy_and_ptxas_parsing():
    report = _bench_module("kernel_resources")
    # Hopper: 62 registers -> 2048 per warp -> 32 warps; 48 KiB + 1 KiB reserved -> 4 blocks.
    shared = report.occupancy(62, 49152, 256)
    assert shared["blocks_per_sm"] == 4 and shared["occupancy"] == 0.5
    assert shared["limiter"] == "registers/shared memory"
    assert report.occupancy(30, 0, 256)["occupancy"] == 1.0
    assert report.occupancy(128, 0, 256)["blocks_per_sm"] == 2  # 4096 regs/warp, 16 warps
    text = (
        "ptxas info    : Used 62 registers, used 1 barriers, 49152 bytes smem, 400 bytes "
        "cmem[0]\n    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads"
    )
    assert report.parse_ptxas(text) == {
        "registers": 62,
        "shared_bytes": 49152,
        "stack_bytes": 16,
        "spill_store_bytes": 8,
        "spill_load_bytes": 4,
        "cmem_bytes": 400,
    }


def test_kernel_resources_records_every_kernels_signature_under_the_simulator():
    stdout = _run("kernel_resources.py", "--record-only", env={"NUMBA_ENABLE_CUDASIM": "1"})
    signatures = json.loads(stdout.strip().splitlines()[-1])
    report = _bench_module("kernel_resources")
    assert set(signatures) == set(report.KERNELS) and all(signatures.values())
    assert signatures["histograms_shared"][0][0] == ["array", "uint8", 2, "C"]
    assert signatures["histograms_shared"][0][1] == ["array", "int32", 1, "C"]  # row list
    assert len(signatures["histograms_shared"][0]) == 15
    # The shared histogram's type follows the global one's: int64 weighted or regression
    # sums, int32 unweighted class counts (twice the entries in 48 KiB).
    assert {s[10][1] for s in signatures["histograms_shared"]} == {"int64"}
    assert {s[10][1] for s in signatures["histograms_shared_int32"]} == {"int32"}
    assert {s[0][1] for s in signatures["predict_leaves"]} == {"float64", "float32"}


# -- bench/readme_figures.py: the benchmarks page's figures come from a script -------------------
# (docs/benchmarks.md, the site's benchmarks page; the README links to it)
README = BENCH.parent / "docs" / "benchmarks.md"
RESULTS = BENCH / "RESULTS.md"


def _split_on_markers(text, names):
    """The text outside every figures block, in order, and the blocks' contents."""
    import re

    outside, inside = [], {}
    rest = text
    for name in names:
        begin, end = f"<!-- figures:{name} begin -->\n", f"<!-- figures:{name} end -->"
        head, found, tail = rest.partition(begin)
        assert found, name
        block, found, rest = tail.partition(end)
        assert found, name
        outside.append(head)
        inside[name] = block
    outside.append(rest)
    assert not re.search(r"<!-- figures:", "".join(outside).replace("<!-- figures:` markers", ""))
    return outside, inside


def test_readme_figure_blocks_are_replaced_and_nothing_else():
    figures = _bench_module("readme_figures")
    text = (
        "intro\n<!-- figures:a begin -->\nold a\n<!-- figures:a end -->\nmiddle\n"
        "<!-- figures:b begin -->\n<!-- figures:b end -->\ntail"
    )
    new = figures.replace_blocks(text, {"a": "new a\n", "b": "new b\n"})
    assert new == text.replace("old a\n", "new a\n").replace(
        "<!-- figures:b begin -->\n", "<!-- figures:b begin -->\nnew b\n"
    )
    with pytest.raises(SystemExit, match="exactly once"):
        figures.replace_blocks(text, {"c": "x\n"})
    with pytest.raises(SystemExit, match="found 2"):
        figures.check_markers(text + "\n" + text, ["a"])


def test_readme_figures_take_medians_and_ranges_over_runs():
    figures = _bench_module("readme_figures")
    info = {
        "date": "2026-01-02 03:04 UTC",
        "commit": "abc123",
        "modified": False,
        "cores": 2,
        "usable_cores": 2,
        "cpu_model": "Some CPU",
        "memory_bytes": 8 * 2**30,
    }
    runs = [
        figures.Run(
            tools={
                "gpu_tree": {"fit_s": fit, "ratio": 1.0, "accuracy": 0.88, "leaves": 900},
                "peer": {"fit_s": fit * ratio, "ratio": ratio, "accuracy": 0.881, "leaves": 901},
            },
            settings={
                "depth": 10,
                "bins": 256,
                "features": 28,
                "n_train": 800,
                "n_test": 200,
                "repeats": 5,
                "sklearn_repeats": 3,
            },
            not_installed=["XGBoost"],
        )
        for fit, ratio in ((0.8, 50.0), (0.9, 54.0), (0.85, 52.0))
    ]
    text = figures.render_cpu_1m(runs, info, "python bench/bench_cpu.py")
    assert "| gpu_tree: 0.85 s (0.8–0.9 s) | 1× | 88.00% |" in text
    assert "| peer | 52× (50–54×) | 88.10% |" in text
    assert "XGBoost" in text and "2026-01-02 03:04 UTC" in text and "`abc123`" in text
    assert "2 cores, Some CPU, 8.0 GiB memory" in " ".join(text.split())
    assert "median of 3 run(s) of `python bench/bench_cpu.py`" in " ".join(text.split())


@pytest.mark.slow
def test_readme_figures_quick_run_rewrites_a_copy_of_the_readme_between_markers(tmp_path):
    pytest.importorskip("sklearn")
    readme, results = tmp_path / "README.md", tmp_path / "RESULTS.md"
    original_readme, original_results = README.read_text(), RESULTS.read_text()
    readme.write_text(original_readme)
    results.write_text(original_results)
    stdout = _run(
        "readme_figures.py",
        "--quick",
        "--runs",
        "1",
        "--readme",
        str(readme),
        "--results",
        str(results),
    )
    names = ("cpu-1m", "full-depth", "quick-start")
    before_outside, before_inside = _split_on_markers(original_readme, names)
    after_outside, after_inside = _split_on_markers(readme.read_text(), names)
    assert after_outside == before_outside  # every byte outside the markers is untouched
    for name in names:
        block = after_inside[name]
        assert block != before_inside[name] and block in stdout
        flat = " ".join(block.split())
        assert "Measured " in flat and " UTC at commit `" in flat and " cores, " in flat
        assert "GiB memory" in flat and "| gpu_tree" in flat
    assert "depth-4 tree on 3,000 × 28 rows" in " ".join(after_inside["cpu-1m"].split())
    assert "on 1,600 training rows" in " ".join(after_inside["full-depth"].split())
    assert "Accuracy gate: passed" in " ".join(after_inside["quick-start"].split())
    history = results.read_text()
    assert history.startswith(original_results)  # appended, nothing before rewritten
    appended = history[len(original_results) :]
    assert "README figures (`bench/readme_figures.py`)" in appended
    assert appended.count("Run by run") == 3
    # The real files were not touched.
    assert README.read_text() == original_readme and RESULTS.read_text() == original_results


def test_readme_figures_quick_mode_refuses_to_write_the_real_readme():
    result = subprocess.run(
        [sys.executable, str(BENCH / "readme_figures.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and "--readme and --results" in result.stderr


@pytest.mark.timeout(600)
def test_dask_benchmark_runs_and_grows_the_in_memory_tree(tmp_path):
    """bench/bench_dask.py on a 1-worker cluster at a tiny size, with the client-side
    reduction: gpu_tree.dask's tree has the in-memory reference's leaves and accuracy,
    and its bytes per level are reported."""
    pytest.importorskip("distributed")
    pytest.importorskip("pyarrow")
    out = tmp_path / "dask.json"
    stdout = _run(
        "bench_dask.py",
        *("--rows", "20k", "--partition-rows", "10k", "--warm-up-rows", "4k"),
        *("--workers", "1", "--tools", "gpu_tree", "--reference", "--repeats", "1"),
        *("--depth", "5", "--reduction", "client", "--data-dir", str(tmp_path / "data")),
        *("--json", str(out)),
    )
    assert "bytes" in stdout
    report = json.loads(out.read_text())
    by_tool = {r["tool"]: r for r in report["results"]}
    assert set(by_tool) == {"gpu_tree", "gpu_tree_local"}
    assert by_tool["gpu_tree"]["leaves"] == by_tool["gpu_tree_local"]["leaves"] > 1
    assert by_tool["gpu_tree"]["train_accuracy"] == by_tool["gpu_tree_local"]["train_accuracy"]
    assert report["args"]["reduction"] == "client"


def test_forest_benchmark_prints_its_table_ratios_and_batches(tmp_path):
    """bench/bench_forest.py at a tiny size: a table row per tool, the peer's time as a
    ratio of gpu_tree's, held-out accuracy, and gpu_tree's n_batches_."""
    pytest.importorskip("sklearn")
    out = tmp_path / "forest.json"
    stdout = _run(
        "bench_forest.py",
        *("--rows", "2000", "--trees", "5", "--depth", "4", "--repeats", "1"),
        *("--tools", "gpu_tree,sklearn", "--accuracy", "--n-jobs", "1", "--json", str(out)),
    )
    (table,) = _markdown_tables(stdout)
    header, _, *rows = table
    assert [row[0] for row in rows] == [
        "gpu_tree RandomForestClassifier",
        "scikit-learn RandomForestClassifier",
    ]
    fit_ratio = header.index("fit: tool / gpu_tree")
    assert rows[0][fit_ratio] == "1.00x"
    assert re.fullmatch(r"\d+\.\d\dx", rows[1][fit_ratio])
    assert all(50 < float(row[header.index("acc %")]) <= 100 for row in rows)
    assert "gpu_tree n_batches_: 1 " in stdout
    report = json.loads(out.read_text())
    by_tool = {r["tool"]: r for r in report["synthetic"]["results"]}
    assert by_tool["gpu_tree"]["n_batches"] == 1 and by_tool["sklearn"]["fit_ratio"] > 0


def test_sparse_benchmark_compares_the_csr_and_dense_paths(tmp_path):
    """bench/bench_sparse.py at a tiny size: a row per tool, ratios against the CSR path,
    the same training accuracy from the CSR and the dense path (the same tree), and the
    CSR codes smaller than the dense ones on 1 % stored values."""
    pytest.importorskip("sklearn")
    out = tmp_path / "sparse.json"
    stdout = _run(
        "bench_sparse.py",
        *("--rows", "3000", "--features", "200", "--depth", "4", "--repeats", "1"),
        *("--tools", "gpu_tree_sparse,gpu_tree_dense,sklearn", "--json", str(out)),
    )
    (table,) = _markdown_tables(stdout)
    header, _, *rows = table
    assert [row[0] for row in rows] == [
        "gpu_tree, CSR input",
        "gpu_tree, the same X dense",
        "scikit-learn DecisionTreeClassifier (exact)",
    ]
    assert rows[0][header.index("tool / gpu_tree CSR")] == "1.00x"
    report = json.loads(out.read_text())
    by_tool = {r["tool"]: r for r in report["results"]}
    csr, dense = by_tool["gpu_tree_sparse"], by_tool["gpu_tree_dense"]
    assert csr["train_accuracy"] == dense["train_accuracy"] > 0.5
    assert csr["nodes"] == dense["nodes"] > 3
    assert csr["csr_codes_bytes"] < dense["dense_codes_bytes"] / 5


def test_outputs_and_medians_benchmark_compares_with_scikit_learn(tmp_path):
    """bench/bench_outputs_and_medians.py at a tiny size: a row per case and tool, the
    ratio 1.00x for scikit-learn itself, and gpu_tree's exact mode as accurate as
    scikit-learn's tree (the same search) within a hair."""
    pytest.importorskip("sklearn")
    out = tmp_path / "outputs.json"
    stdout = _run(
        "bench_outputs_and_medians.py",
        *("--rows", "1500", "--depth", "4", "--repeats", "1", "--json", str(out)),
    )
    (table,) = _markdown_tables(stdout)
    header, _, *rows = table
    assert len(rows) == 9 and {row[0] for row in rows} == {
        "absolute_error",
        "multi_output_regression",
        "multi_output_classification",
    }
    results = json.loads(out.read_text())["results"]
    by = {(r["case"], r["tool"]): r for r in results}
    for case in ("absolute_error", "multi_output_regression", "multi_output_classification"):
        assert by[case, "scikit-learn"]["speedup_vs_sklearn"] == 1.0
        exact, theirs = by[case, "gpu_tree exact"], by[case, "scikit-learn"]
        assert exact["score"] == pytest.approx(theirs["score"], abs=0.02)
        assert exact["leaves"] > 4


@pytest.mark.timeout(900)
def test_gpu_check_dry_run_under_the_simulator(tmp_path):
    """bench/gpu_check.py's every step at tiny sizes under the simulator: the run a GPU
    machine gets, so that it cannot first break there."""
    out = tmp_path / "check"
    result = subprocess.run(
        [sys.executable, str(BENCH / "gpu_check.py"), str(out), "--smoke", "--commit", "test"],
        capture_output=True,
        text=True,
        env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"},
        timeout=880,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["commit"] == "test" and summary["smoke"]
    steps = summary["steps"]
    assert [*steps] == ["env", "probe", "warmup", "matrix", "parity", "nvforest", "tests"]
    nvforest = steps.pop("nvforest")["status"]  # runs where nvforest is installed, else skips
    assert nvforest in ("ok", "skipped: nvforest not installed"), summary["nvforest"]
    assert all(step["status"] == "ok" for step in steps.values()), steps
    assert summary["probe"]["usable"]
    assert summary["env"]["numpy_row_stack_restored"] in (True, False)
    cases = summary["parity"]["cases"]
    assert len(cases) == 6 and all(case["equal"] for case in cases.values()), cases
    log2 = summary["parity"]["log2"]
    assert log2["equal"] and log2["gpu_tree"]["differ"] == 0
    assert log2["device_math"]["differ"] == 0  # the simulator's math.log2 is the CPU's
    assert summary["tests"]["tests"] >= 1 and summary["tests"]["failures"] == 0
    assert set(summary["warmup"]) >= {"gini", "sparse", "wall_s"}
    assert (out / "matrix" / "matrix.json").is_file()
    assert "| parity case |" in (out / "summary.md").read_text()


def test_model_files_benchmark_compares_packed_and_list_files(tmp_path):
    out = tmp_path / "files.json"
    stdout = _run(
        "bench_model_files.py",
        "--rows",
        "1500",
        "--trees",
        "2",
        "--repeats",
        "1",
        "--json",
        str(out),
    )
    assert "| forest of 2 |" in stdout
    report = json.loads(out.read_text())
    for row in report["models"].values():  # packed files are the smaller ones
        assert row["packed"]["bytes"] < row["lists"]["bytes"]
        assert row["size_ratio"] == row["lists"]["bytes"] / row["packed"]["bytes"]


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux's /proc only")
def test_memory_benchmark_reads_each_fits_own_peak(tmp_path):
    """Each tool in a child of its own: its peak resident size during the second fit,
    never below the resident size before it, and the fit's seconds."""
    pytest.importorskip("sklearn")
    out = tmp_path / "memory.json"
    stdout = _run(
        "bench_memory.py",
        *("--rows", "3000", "--depth", "4", "--tools", "gpu_tree,sklearn"),
        *("--repeats", "2", "--json", str(out)),
    )
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"gpu_tree", "sklearn"}
    for tool, r in results.items():
        assert r["status"] == "ok" and len(r["runs"]) == 2, tool
        for run in r["runs"]:
            assert 20 < run["peak_before_mib"] <= run["peak_after_mib"] < 4096, tool
            assert run["fit_seconds"] > 0
    assert re.search(r"^\| gpu_tree \| \d+ \| \d+ \| [\d.]+ \| 1\.00 \|$", stdout, re.M)
