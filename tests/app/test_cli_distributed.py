"""gputree train --scheduler / --workers (issue 19): files read by Dask workers, and a
model file whose tree is the one a single-file train grows on the same rows. Real worker
processes, one LocalCluster shared by the module (each start costs seconds)."""

import socket
import subprocess
import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

from _cli import run_cli  # noqa: E402

import gpu_tree  # noqa: E402
from gpu_tree.testing import assert_tree_equal  # noqa: E402

pytestmark = pytest.mark.timeout(300)

# Uneven partitions, one of them small: the tree must not depend on where rows fall.
CUTS = (0, 700, 1900, 2100, 3000)


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(7)
    n = CUTS[-1]
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.integers(0, 5, n),  # few distinct values
            "c": rng.normal(size=n).round(2),
            "w": rng.random(n) + 0.1,
        }
    )
    frame.loc[rng.random(n) < 0.05, "a"] = np.nan
    noise = rng.normal(size=n)
    frame["y"] = ((frame["a"].fillna(0) + noise > 0).astype(int) + (frame["b"] > 2)).astype(int)
    frame["t"] = frame["c"] * 3 + frame["a"].fillna(1) + noise
    return frame


def _write_parts(frame, folder, suffix):
    folder.mkdir()
    for i, (start, stop) in enumerate(zip(CUTS[:-1], CUTS[1:], strict=True)):
        part = frame.iloc[start:stop]
        if suffix == ".parquet":
            part.to_parquet(folder / f"part.{i}.parquet", index=False)
        else:
            part.to_csv(folder / f"part.{i}{suffix}", index=False)
    return sorted(folder.iterdir(), key=lambda p: int(p.name.split(".")[1]))


def _whole(frame, path):
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


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


def _same_model(distributed_model, single_model):
    ours, reference = gpu_tree.load(distributed_model), gpu_tree.load(single_model)
    assert_tree_equal(ours.tree_, reference.tree_)
    assert list(ours.feature_names_in_) == list(reference.feature_names_in_)
    if hasattr(reference, "classes_"):
        np.testing.assert_array_equal(ours.classes_, reference.classes_)
        assert ours.classes_.dtype.kind == reference.classes_.dtype.kind
    return ours, reference


# -- the model equals the single-file train's --------------------------------------------------
TRAININGS = {
    "parquet glob, classification": (".parquet", ["-t", "y", "--ignore", "t"]),
    "csv files, weights, entropy": (
        ".csv",
        ["-t", "y", "--ignore", "t", "--weight", "w", "--criterion", "entropy"],
    ),
    "parquet, regression, stopping rules": (
        ".parquet",
        ["-t", "t", "--ignore", "y", "--min-samples-leaf", "5", "--max-bins", "32"],
    ),
    "tsv, forced regression, best-first, pruned": (
        ".tsv",
        ["-t", "y", "--task", "regression", "--max-leaf-nodes", "12", "--ccp-alpha", "0.001"],
    ),
}


@pytest.mark.parametrize("case", list(TRAININGS))
def test_scheduler_tree_equals_the_single_file_tree(case, scheduler, rows, tmp_path):
    suffix, options = TRAININGS[case]
    frame = rows
    if suffix == ".tsv":
        frame = rows.drop(columns=["t"])
        paths = []
        (tmp_path / "parts").mkdir()
        for i, (start, stop) in enumerate(zip(CUTS[:-1], CUTS[1:], strict=True)):
            paths.append(tmp_path / "parts" / f"part.{i}.tsv")
            frame.iloc[start:stop].to_csv(paths[-1], sep="\t", index=False)
        whole = tmp_path / "all.tsv"
        frame.to_csv(whole, sep="\t", index=False)
        data = [str(p) for p in paths]
    else:
        paths = _write_parts(frame, tmp_path / "parts", suffix)
        whole = _whole(frame, tmp_path / f"all{suffix}")
        # A glob (as the shell would pass it quoted) for Parquet, the files for CSV.
        data = [str(tmp_path / "parts" / "*.parquet")] if suffix == ".parquet" else paths
    options = [*options, "--max-depth", "6"]
    single = tmp_path / "single.json"
    ok(run_cli("train", whole, *options, "-o", single))
    spread = tmp_path / "distributed.json"
    result = ok(run_cli("train", *data, *options, "--scheduler", scheduler, "-o", spread))
    assert f"{len(paths)} files" in result.stdout and "model saved to" in result.stdout
    ours, _ = _same_model(spread, single)
    assert ours.device_ == "cpu"  # --device auto, decided on each worker: no GPU here
    assert result.stdout.count("\n") == 3 and result.stderr == ""


def test_workers_starts_and_closes_a_local_cluster(rows, tmp_path):
    # A folder of Parquet files, read by two fresh worker processes.
    _write_parts(rows, tmp_path / "parts", ".parquet")
    whole = _whole(rows, tmp_path / "all.parquet")
    options = ["-t", "y", "--ignore", "t", "--max-depth", "5", "--random-state", "3"]
    single = tmp_path / "single.json"
    ok(run_cli("train", whole, *options, "-o", single))
    spread = tmp_path / "distributed.json"
    result = ok(run_cli("train", tmp_path / "parts", *options, "--workers", "2", "-o", spread))
    assert "a local cluster of 2 worker processes" in result.stdout
    assert f"{len(rows):,} rows" in result.stdout
    _same_model(spread, single)


def test_text_columns_are_categorical(scheduler, rows, tmp_path):
    frame = rows.drop(columns=["t", "w"])
    colours = np.array(["red", "green", "blue", "grey"])
    frame["colour"] = colours[(frame["b"].to_numpy() + np.arange(len(frame)) % 2) % 4]
    frame.loc[::37, "colour"] = None
    frame["y"] = np.where(frame["colour"] == "red", "yes", "no")
    paths = _write_parts(frame, tmp_path / "parts", ".csv")
    whole = _whole(frame, tmp_path / "all.csv")
    options = ["-t", "y", "--max-depth", "4"]
    single = tmp_path / "single.json"
    ok(run_cli("train", whole, *options, "-o", single))
    spread = tmp_path / "distributed.json"
    result = run_cli("train", *paths, *options, "--scheduler", scheduler, "-o", spread)
    if result.exit_code == 2:
        assert "categorical features ('colour'" in result.stderr and "--ignore" in result.stderr
    ok(result)
    ours, reference = _same_model(spread, single)
    for ours_categories, categories in zip(ours.categories_, reference.categories_, strict=True):
        assert (ours_categories is None) == (categories is None)
        if categories is not None:
            assert list(ours_categories) == list(categories)


# -- errors: one line, exit status 2, no model file --------------------------------------------
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def small_files(rows, tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    rows.to_csv(folder / "all.csv", index=False)
    rows.to_parquet(folder / "all.parquet", index=False)
    np.savez(folder / "all.npz", X=rows[["a", "b"]].to_numpy(), y=rows["y"].to_numpy())
    broken = rows.copy()
    broken.loc[10, "y"] = np.nan
    broken.loc[20, "w"] = -1.0
    broken.to_parquet(folder / "broken.parquet", index=False)
    return folder


ERRORS = {
    "both cluster options": (
        ["{d}/all.csv", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"],
        ["--scheduler and --workers exclude each other"],
    ),
    "no workers": (["{d}/all.csv", "--workers", "0"], ["--workers", "0 is not in the range"]),
    "glob matching nothing": (
        ["{d}/nothing-*.parquet", "--workers", "2"],
        ["nothing-*.parquet", "no file matches"],
    ),
    "missing file": (["{d}/nope.parquet", "--workers", "2"], ["nope.parquet", "no such file"]),
    "folder without parquet": (["{d}/empty", "--workers", "2"], ["holds none"]),
    "several files, no cluster": (
        ["{d}/all.csv", "{d}/all.parquet"],
        ["train reads one data file", "--workers N or --scheduler ADDRESS"],
    ),
    "mixed formats": (["{d}/all.csv", "{d}/all.parquet", "--workers", "2"], ["mixes file formats"]),
    "npz": (["{d}/all.npz", "--workers", "2"], ["distributed training reads", ".npz"]),
    "text option on parquet": (
        ["{d}/all.parquet", "--workers", "2", "--sep", ";"],
        ["--sep is for .csv and .tsv files only"],
    ),
    "unknown target": (["{d}/all.parquet", "--workers", "2", "-t", "zz"], ["unknown target"]),
    "bad address": (["{d}/all.csv", "--scheduler", "nonsense:::"], ["--scheduler 'nonsense:::'"]),
    "unreachable scheduler": (
        ["{d}/all.csv", "--scheduler", "tcp://127.0.0.1:{port}", "--connect-timeout", "1"],
        ["cannot reach the Dask scheduler", "within 1 s", "--connect-timeout"],
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_before_any_work(case, small_files, tmp_path):
    (small_files / "empty").mkdir(exist_ok=True)
    args, phrases = ERRORS[case]
    args = [a.format(d=small_files, port=_closed_port()) for a in args]
    if "-t" not in args:
        args += ["-t", "y"]
    output = tmp_path / "model.json"
    assert_one_line_error(run_cli("train", *args, "-o", output), *phrases)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "phrases"),
    [
        (["-t", "y"], ["the target column 'y' has 1 missing value(s)"]),
        (["-t", "t", "--weight", "w"], ["the weight column 'w' holds -1.0", "non-negative"]),
    ],
)
def test_bad_values_found_on_the_workers(options, phrases, scheduler, small_files, tmp_path):
    output = tmp_path / "model.json"
    args = [small_files / "broken.parquet", *options, "--scheduler", scheduler, "-o", output]
    assert_one_line_error(run_cli("train", *args), "broken.parquet", *phrases)
    assert not output.exists()


def test_without_dask_the_message_says_how_to_install_it(monkeypatch, small_files, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    result = run_cli(
        "train", small_files / "all.csv", "-t", "y", "--workers", "2", "-o", tmp_path / "m.json"
    )
    assert_one_line_error(result, "--scheduler and --workers need Dask", 'pip install ".[dask]"')


def test_the_command_line_imports_dask_only_when_asked():
    code = (
        "import sys\nfrom gpu_tree.app.cli import main\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".tsv.gz"])
def test_a_file_with_other_columns_is_named_with_the_columns_that_differ(suffix, rows, tmp_path):
    """Issue 43, item 17: one file lacks a column of the first and has one of its own."""
    first = rows.iloc[:100]
    other = rows.iloc[100:200].drop(columns=["c"]).assign(extra=1.0)
    paths = [tmp_path / f"part.0{suffix}", tmp_path / f"part.1{suffix}"]
    for frame, path in zip((first, other), paths, strict=True):
        if suffix == ".parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False, sep="\t" if ".tsv" in suffix else ",")
    output = tmp_path / "model.json"
    result = run_cli("train", *paths, "-t", "y", "--workers", "2", "-o", output)
    assert_one_line_error(
        result,
        f"{paths[1]}: its columns are not those of {paths[0]}",
        "missing 'c'",
        "extra 'extra'",
        "every file must have the same columns",
    )
    assert not output.exists()


def test_headerless_files_of_another_width_are_named(rows, tmp_path):
    paths = [tmp_path / "part.0.csv", tmp_path / "part.1.csv"]
    rows.iloc[:100].to_csv(paths[0], index=False, header=False)
    rows.iloc[100:200].drop(columns=["c"]).to_csv(paths[1], index=False, header=False)
    output = tmp_path / "model.json"
    args = ["train", *paths, "--no-header", "-t", "4", "--workers", "2", "-o", output]
    assert_one_line_error(
        run_cli(*args), f"{paths[1]}: it has 5 columns, {paths[0]} has 6", "same columns"
    )
