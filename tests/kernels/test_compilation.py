"""Compiling the kernels (issue 17): numba's disk cache where it can be written, a
temporary folder or no cache where it cannot (never a failure), and the one-time notice
"compiling kernels (first run only)" on a terminal.

The read-only installs run in a child process, on a copy of the package
(``_package_copy.run_in_a_copy``); each test writes only under its ``tmp_path``."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from _cli import TENNIS_ARFF
from _package_copy import run_in_a_copy, site_packages

from gpu_tree.kernels import compilation

REPO = Path(__file__).resolve().parents[2]


def _weather(folder: Path) -> Path:
    path = folder / "weather.arff"
    path.write_text(TENNIS_ARFF)
    return path


# Fits a small tree and reports where the kernels were cached. Exact search: its kernels
# compile in seconds (every kernel caches alike; the subtree finisher alone would take a
# minute, in every one of these fresh caches).
_FIT_AND_REPORT = """
import json, numpy as np, gpu_tree
from numba.core import config
from gpu_tree.kernels import compilation
from gpu_tree.kernels.cpu import partition
X = np.arange(20.0)[:, None]; y = (X[:, 0] > 9).astype(int)
model = gpu_tree.DecisionTreeClassifier(device='cpu', splitter='exact')
score = model.fit(X, y).score(X, y)
print(json.dumps({
    "score": score,
    "mode": compilation.CACHE_MODE,
    "cache_dir": config.CACHE_DIR,
    "cache": type(partition.partition_rows.serial._cache).__name__,
}))
"""


def _report(result):
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _read_only(root: Path):
    """The copy as a read-only install: nothing in it writable (which binds only a user
    other than root) and the kernels' __pycache__ folders files (which binds root too)."""
    if (root / "gpu_tree" / "kernels").exists():  # a worktree's link to kernels/, copied
        shutil.rmtree(root / "gpu_tree" / "kernels")
    # kernels/ and each package of it (cpu/, cuda/): numba caches beside the source.
    for folder in [root / "kernels", *(p.parent for p in (root / "kernels").glob("*/__init__.py"))]:
        (folder / "__pycache__").write_text("not a folder")
    for top in (root / "gpu_tree", root / "kernels"):
        for path in [top, *top.rglob("*")]:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _unwritable_home(tmp_path: Path) -> dict:
    """HOME and the user-wide cache folder where nothing can be made (a file)."""
    (tmp_path / "home-is-a-file").write_text("")
    (tmp_path / "tmp").mkdir()
    return {
        "HOME": str(tmp_path / "home-is-a-file"),
        "XDG_CACHE_HOME": str(tmp_path / "home-is-a-file" / "cache"),
        "TMPDIR": str(tmp_path / "tmp"),
    }


def _writable_again(root: Path):
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def copy_root(tmp_path):
    yield tmp_path
    _writable_again(tmp_path)  # so that pytest can remove it


def test_a_read_only_install_with_no_home_caches_in_a_temporary_folder(copy_root):
    env = _unwritable_home(copy_root)
    result = run_in_a_copy(copy_root, _FIT_AND_REPORT, env, prepare=_read_only)
    report = _report(result)
    assert report["score"] == 1.0
    assert report["mode"] == "temporary"
    uid = os.getuid()
    assert report["cache_dir"] == str(copy_root / "tmp" / f"gpu_tree-numba-cache-{uid}")
    # The fit's kernels cached there (an exact fit of 20 rows is finished from its root:
    # the subtree finisher's, not partition_rows').
    assert any(Path(report["cache_dir"]).rglob("*.nbi"))
    folder = Path(report["cache_dir"]).stat()
    assert folder.st_uid == uid and not folder.st_mode & 0o077  # this user's alone


def test_the_command_line_trains_on_a_read_only_install(copy_root):
    """`gputree train` itself, as `docker run -u` runs it: read-only package, HOME /."""
    env = _unwritable_home(copy_root)
    (copy_root / "out").mkdir()
    data, model = _weather(copy_root / "out"), copy_root / "out" / "model.json"
    code = (
        "import sys\nfrom gpu_tree.app.launch import main\n"
        f"sys.argv = ['gputree', 'train', {str(data)!r}, '-t', 'play',"
        f" '-o', {str(model)!r}, '--device', 'cpu']\nmain()\n"
    )
    result = run_in_a_copy(copy_root, code, env, prepare=_read_only)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "model saved to" in result.stdout
    assert "compiling kernels" not in result.stderr  # not a terminal
    assert json.loads(model.read_text())


def test_with_nowhere_to_write_the_kernels_run_uncached(copy_root):
    """No cache folder at all, the temporary directory included (a read-only root file
    system): the kernels compile in memory and run."""
    env = _unwritable_home(copy_root)
    nowhere = copy_root / "tmp-is-a-file"
    nowhere.write_text("")
    code = f"import tempfile\ntempfile.tempdir = {str(nowhere)!r}\n" + _FIT_AND_REPORT
    report = _report(run_in_a_copy(copy_root, code, env, prepare=_read_only))
    assert report["score"] == 1.0
    assert report["mode"] == "none"
    assert report["cache"] == "NullCache"
    assert not list((copy_root / "tmp").iterdir())


def test_a_temporary_folder_someone_else_can_write_is_not_used(copy_root):
    """numba loads its cache files with pickle: a shared folder of the expected name that
    others may write is passed over for a fresh one of this process's."""
    env = _unwritable_home(copy_root)
    planted = copy_root / "tmp" / f"gpu_tree-numba-cache-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)
    report = _report(run_in_a_copy(copy_root, _FIT_AND_REPORT, env, prepare=_read_only))
    assert report["mode"] == "temporary"
    assert report["cache_dir"] != str(planted)
    assert Path(report["cache_dir"]).parent == copy_root / "tmp"
    assert not any(planted.iterdir())
    assert not Path(report["cache_dir"]).exists()  # removed at exit


def test_a_user_cache_dir_that_cannot_be_written_falls_back(copy_root):
    """numba passes over a NUMBA_CACHE_DIR it cannot write; with nothing else writable it
    failed. The temporary folder takes over."""
    env = _unwritable_home(copy_root)
    env["NUMBA_CACHE_DIR"] = str(copy_root / "home-is-a-file" / "numba")
    report = _report(run_in_a_copy(copy_root, _FIT_AND_REPORT, env, prepare=_read_only))
    assert report["score"] == 1.0
    assert report["mode"] == "temporary"
    assert report["cache_dir"].startswith(str(copy_root / "tmp"))


def test_a_user_cache_dir_is_kept(copy_root):
    env = _unwritable_home(copy_root)
    env["NUMBA_CACHE_DIR"] = str(copy_root / "mine")
    report = _report(run_in_a_copy(copy_root, _FIT_AND_REPORT, env, prepare=_read_only))
    assert (report["mode"], report["cache_dir"]) == ("numba", str(copy_root / "mine"))
    assert any((copy_root / "mine").rglob("*.nbi"))


def test_a_read_only_install_uses_numbas_user_wide_folder_where_it_can(copy_root):
    """numba's own fallback, ~/.cache/numba, persists across reboots: it is kept."""
    env = _unwritable_home(copy_root)
    env["XDG_CACHE_HOME"] = str(copy_root / "xdg")
    report = _report(run_in_a_copy(copy_root, _FIT_AND_REPORT, env, prepare=_read_only))
    assert (report["mode"], report["cache_dir"]) == ("numba", "")
    assert any((copy_root / "xdg" / "numba").rglob("*.nbi"))  # the fit's kernels
    assert not list((copy_root / "tmp").iterdir())


# -- CuPy's kernel cache -----------------------------------------------------------------------
@pytest.fixture
def cupy_cache(monkeypatch, tmp_path):
    """choose_cupy_cache_folder as if CuPy were installed and not yet imported, with an
    environment of this test's (restored after it), HOME and TMPDIR in tmp_path."""
    for name in ("CUPY_CACHE_DIR", "CUPY_CACHE_IN_MEMORY"):
        monkeypatch.setenv(name, "")  # recorded, so that what the test sets is undone
        monkeypatch.delenv(name)
    env = _unwritable_home(tmp_path)  # tmp_path / "home-is-a-file", for the tests below
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", env["TMPDIR"])
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    monkeypatch.setattr(compilation, "CUPY_CACHE_MODE", None)
    monkeypatch.setattr(compilation, "_cupy_installed", lambda: True)
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    return tmp_path


def test_cupy_keeps_its_own_folder_where_it_can_write(cupy_cache):
    assert compilation.choose_cupy_cache_folder() == "cupy"
    assert "CUPY_CACHE_DIR" not in os.environ and "CUPY_CACHE_IN_MEMORY" not in os.environ
    assert (cupy_cache / "home" / ".cupy" / "kernel_cache").is_dir()  # as CuPy makes it


def test_cupy_keeps_a_cache_dir_it_can_write(cupy_cache, monkeypatch):
    monkeypatch.setenv("CUPY_CACHE_DIR", str(cupy_cache / "mine"))
    assert compilation.choose_cupy_cache_folder() == "cupy"
    assert os.environ["CUPY_CACHE_DIR"] == str(cupy_cache / "mine")


@pytest.mark.parametrize("where", ["home", "CUPY_CACHE_DIR"])
def test_cupy_caches_in_a_temporary_folder_where_its_own_cannot_be_made(
    cupy_cache, monkeypatch, where
):
    """HOME / for an unknown uid (`docker run -u`): CuPy's import failed making
    ~/.cupy/kernel_cache. A folder of this user's in the temporary directory instead."""
    if where == "home":
        monkeypatch.setenv("HOME", str(cupy_cache / "home-is-a-file"))
    else:
        monkeypatch.setenv("CUPY_CACHE_DIR", str(cupy_cache / "home-is-a-file" / "cupy"))
    assert compilation.choose_cupy_cache_folder() == "temporary"
    folder = Path(os.environ["CUPY_CACHE_DIR"])
    assert folder == cupy_cache / "tmp" / f"gpu_tree-cupy-cache-{os.getuid()}"
    assert folder.is_dir() and not folder.stat().st_mode & 0o077
    assert "CUPY_CACHE_IN_MEMORY" not in os.environ
    assert compilation.choose_cupy_cache_folder() == "temporary"  # decided once


def test_with_nowhere_to_write_cupy_compiles_in_memory(cupy_cache, monkeypatch):
    """No folder at all: CuPy keeps its kernels in memory, and CUPY_CACHE_DIR names a
    folder that exists, so that its import makes none."""
    monkeypatch.setenv("HOME", str(cupy_cache / "home-is-a-file"))
    monkeypatch.setattr(tempfile, "tempdir", str(cupy_cache / "home-is-a-file"))
    assert compilation.choose_cupy_cache_folder() == "none"
    assert os.environ["CUPY_CACHE_IN_MEMORY"] == "1"
    assert os.path.isdir(os.environ["CUPY_CACHE_DIR"])


def test_without_home_cupys_folder_is_not_made_in_the_working_directory(cupy_cache, monkeypatch):
    """No HOME and no password entry: "~" stays as it is, a relative folder."""
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)
    monkeypatch.chdir(cupy_cache)
    assert compilation.choose_cupy_cache_folder() == "temporary"
    assert not (cupy_cache / "~").exists()


def test_the_cupy_folder_is_chosen_only_before_cupy_is_imported(cupy_cache, monkeypatch):
    monkeypatch.setattr(compilation, "_cupy_installed", lambda: False)
    assert compilation.choose_cupy_cache_folder() is None  # not installed: no folder made
    assert not (cupy_cache / "home" / ".cupy").exists()
    monkeypatch.setattr(compilation, "_cupy_installed", lambda: True)
    monkeypatch.setitem(sys.modules, "cupy", object())
    assert compilation.choose_cupy_cache_folder() is None  # too late to choose
    assert "CUPY_CACHE_DIR" not in os.environ


# -- the notice ------------------------------------------------------------------------------
class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def fresh_notice(monkeypatch):
    monkeypatch.setitem(compilation._notice, "said", False)
    monkeypatch.setitem(compilation._notice, "when", "terminal")
    monkeypatch.setitem(compilation._notice, "program", "gpu_tree")
    monkeypatch.setitem(compilation._notice, "line", None)


def test_the_notice_is_said_once_on_a_terminal(fresh_notice):
    terminal = _Terminal()
    assert compilation.say_compiling_kernels(stream=terminal)
    assert not compilation.say_compiling_kernels(stream=terminal)
    assert terminal.getvalue() == "gpu_tree: compiling kernels (first run only)\n"


def test_a_line_under_the_notice_counts_the_kernels_and_names_the_one_compiling(
    fresh_notice,
):
    import numba

    terminal = _Terminal()
    assert compilation.say_compiling_kernels(stream=terminal)
    line = compilation._notice["line"]
    line.package = __name__  # this module's functions count as the package's kernels

    @numba.njit
    def helper_of_the_test(x):
        return x + 1

    @numba.njit
    def first_kernel_of_the_test(x):
        return helper_of_the_test(x) * 2

    @numba.njit
    def second_kernel_of_the_test(x):
        return x - 1

    assert first_kernel_of_the_test(3) == 8
    assert second_kernel_of_the_test(3) == 2
    shown = terminal.getvalue()
    assert shown.startswith("gpu_tree: compiling kernels (first run only)\n"), shown
    heading = "gpu_tree: compiling kernels"
    # the helper compiles inside its caller: not a kernel of its own
    assert f"{heading}: 0 done, 0 s, now first_kernel_of_the_test" in shown, shown
    assert re.search(f"{heading}: 1 done, \\d+ s, now second_kernel_of_the_test", shown)
    assert "helper_of_the_test" not in shown
    assert line.done == 2 and line.depth == 0 and line.bar is None
    # cleared once done: the last thing written erases the line (tqdm's leave=False)
    assert shown.rstrip(" ").endswith("\r") or shown.endswith("\x1b[A"), repr(shown[-40:])

    # other modules' compiles (numba's own, a user's) draw nothing
    def users_function(x):
        return x * 3

    users_function.__module__ = "users_module"
    before = terminal.getvalue()
    assert numba.njit(users_function)(2) == 6
    assert terminal.getvalue() == before


def test_the_line_is_redrawn_while_one_kernel_compiles(fresh_notice):
    import time
    from types import SimpleNamespace

    def slow_kernel():
        pass

    slow_kernel.__module__ = compilation.__package__ + ".somewhere"
    compiling = SimpleNamespace(data={"dispatcher": SimpleNamespace(py_func=slow_kernel)})
    terminal = _Terminal()
    line = compilation.CompileLine(terminal, "gputree", redraw_seconds=0.02)
    line.on_start(compiling)
    time.sleep(0.3)
    assert line.bar is not None
    line.on_end(compiling)
    assert line.bar is None and not line.redrawer.is_alive()
    drawn = len(
        re.findall("gputree: compiling kernels: 0 done, 0 s, now slow_kernel", terminal.getvalue())
    )
    assert drawn >= 3, terminal.getvalue()


def test_the_notice_is_never_said_into_a_pipe_or_when_quiet(fresh_notice):
    piped = io.StringIO()
    assert not compilation.say_compiling_kernels(stream=piped)
    assert piped.getvalue() == ""
    restore = compilation.set_compile_notice("never", program="gputree")
    terminal = _Terminal()
    assert not compilation.say_compiling_kernels(stream=terminal)
    restore()
    assert compilation.say_compiling_kernels(stream=terminal, cached=False)
    assert terminal.getvalue() == (
        "gpu_tree: compiling kernels (no writable cache folder: every run)\n"
    )


def _train_on_a_terminal(tmp_path, cache, *extra):
    """`gputree train` with its stderr on a pseudo-terminal: (stderr text, stdout text,
    the terminal's lines at the end)."""
    from _terminal import run_on_terminal

    model = tmp_path / "model.json"
    argv = ["train", str(_weather(tmp_path)), "-t", "play", "-o", str(model), "--device", "cpu"]
    code = f"import sys\nfrom gpu_tree.app.launch import main\nsys.argv = ['gputree', *{[*extra, *argv]!r}]\nmain()\n"
    env = {
        "PYTHONPATH": f"{REPO}:{site_packages()}",
        "NUMBA_CACHE_DIR": str(cache),
        "GPU_TREE_PYTHON_KERNELS": "never",  # a 14-row fit would otherwise compile nothing
    }
    shown = run_on_terminal(
        [sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, stdout_on_terminal=False
    )
    assert shown.returncode == 0, shown.raw.decode()[-3000:]
    return shown.raw.decode(), shown.stdout, shown.lines


@pytest.mark.slow
def test_the_command_says_it_compiles_on_a_first_run_only(tmp_path):
    cache = tmp_path / "cache"
    first, out, screen = _train_on_a_terminal(tmp_path, cache)
    notice = "gputree: compiling kernels (first run only)"
    assert first.count(notice) == 1, first
    # the line under it, while numba compiles: kernels done, seconds, the one compiling
    assert "gputree: compiling kernels: 0 done, 0 s, now " in first, first
    assert re.search("gputree: compiling kernels: [1-9][0-9]* done, [0-9]+ s, now [a-z]", first)
    # and the notice stays, the line is gone
    assert [line for line in screen if "compiling" in line] == [notice], screen
    assert "model saved to" in out and "compiling" not in out
    second, _, _ = _train_on_a_terminal(tmp_path, cache)
    assert "compiling kernels" not in second
    # --quiet: nothing, even where numba compiles again (a fresh cache).
    quiet, _, _ = _train_on_a_terminal(tmp_path, tmp_path / "cache2", "--quiet")
    assert "compiling kernels" not in quiet


# -- serial twins of the parallel kernels ------------------------------------------------------
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize("categorical_split", ["binary", "multiway"])
def test_the_serial_twins_grow_the_trees_of_the_parallel_kernels(
    monkeypatch, task, categorical_split
):
    """Small data runs on serial twins (kernels/cpu/launch.py, SERIAL_MAX_ELEMENTS): the same
    trees and predictions as the parallel kernels, missing values and categories in."""
    import numpy as np

    import gpu_tree
    from gpu_tree.kernels.cpu import launch as cpu_launch
    from gpu_tree.testing import assert_tree_equal

    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 4))
    X[:, 3] = rng.integers(5, size=600)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + (X[:, 3] == 2) + rng.normal(scale=0.3, size=600)
    if task == "classification":
        y = (y > 0.5).astype(int)
        estimator = gpu_tree.DecisionTreeClassifier
    else:
        estimator = gpu_tree.DecisionTreeRegressor
    params = dict(device="cpu", categorical_features=[3], categorical_split=categorical_split)
    fitted = {}
    for name, limit in (("serial", 1 << 60), ("parallel", -1)):
        monkeypatch.setattr(cpu_launch, "SERIAL_MAX_ELEMENTS", limit)
        fitted[name] = estimator(**params).fit(X, y)
        fitted[name + " predictions"] = fitted[name].predict(X)
    assert_tree_equal(fitted["serial"].tree_, fitted["parallel"].tree_)
    np.testing.assert_array_equal(fitted["serial predictions"], fitted["parallel predictions"])


def _serial_when_small_kernels():
    """Every kernel of the CPU stage modules that runs on its serial twin on small data."""
    import importlib
    import pkgutil

    from gpu_tree.kernels import cpu
    from gpu_tree.kernels.cpu.launch import SerialWhenSmall

    modules = [
        importlib.import_module(f"{cpu.__name__}.{module.name}")
        for module in pkgutil.iter_modules(cpu.__path__)
    ]
    return [k for m in modules for k in vars(m).values() if isinstance(k, SerialWhenSmall)]


def test_the_kernels_used_by_small_data_are_the_serial_twins():
    kernels = _serial_when_small_kernels()
    # The stage modules' 18 and the absolute-error drawn splits' search (a level's best
    # splits are a serial kernel on threads: ThreadedWhenLarge).
    assert len(kernels) == 19, kernels
    for kernel in kernels:
        assert not kernel.serial.targetoptions.get("parallel"), kernel
        assert kernel.parallel.targetoptions["parallel"], kernel
        # Cached apart: numba names a cache index after the function.
        assert kernel.serial.py_func.__qualname__.endswith("_serial")
        assert kernel.serial.py_func.__code__ is kernel.parallel.py_func.__code__


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_the_largest_kernels_share_their_items_out_to_threads_with_the_same_tree(monkeypatch, task):
    """ThreadedWhenLarge (the subtree finisher, the split search): tasks on threads grow
    the tree that one serial call grows."""
    import numpy as np

    import gpu_tree
    from gpu_tree.kernels.cpu import launch as cpu_launch
    from gpu_tree.testing import assert_tree_equal
    from gpu_tree.utils.threads import numba_threads

    # Enough rows for a level-wise root (16,384 rows and more) and levels of several nodes
    # above the finisher's limit (1,024 rows).
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20_000, 6))
    X[rng.random(X.shape) < 0.03] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + rng.normal(scale=0.5, size=20_000)
    estimator = gpu_tree.DecisionTreeRegressor
    if task == "classification":
        y, estimator = (y > 0).astype(int), gpu_tree.DecisionTreeClassifier
    submitted = []
    pool = cpu_launch._thread_pool()
    real_submit = pool.submit

    def counting_submit(*args, **kwargs):
        submitted.append(args[0].py_func.__name__)
        return real_submit(*args, **kwargs)

    fitted = {}
    with numba_threads(2):
        for name, limit in (("serial", 1 << 60), ("threads", -1)):
            monkeypatch.setattr(cpu_launch, "SERIAL_MAX_ELEMENTS", limit)
            monkeypatch.setattr(pool, "submit", counting_submit)
            fitted[name] = estimator(min_samples_leaf=2).fit(X, y)
    assert_tree_equal(fitted["serial"].tree_, fitted["threads"].tree_)
    assert any(name.startswith("finish_subtrees") for name in submitted), submitted
    assert "score_splits" in submitted, submitted


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_shares_items_out_to_threads_of_its_own():
    """The pool's threads are not in a child forked after a large fit: it makes its own
    pool rather than wait for ever on the parent's."""
    import multiprocessing

    from gpu_tree.kernels.cpu import launch as cpu_launch

    assert cpu_launch._thread_pool().submit(sum, (1, 2)).result(timeout=60) == 3
    child = multiprocessing.get_context("fork").Process(target=_sum_on_the_pool)
    child.start()
    child.join(timeout=120)
    if child.exitcode is None:
        child.kill()
        child.join()
        pytest.fail("the forked child waited for the parent's pool")
    assert child.exitcode == 0


def _sum_on_the_pool():
    from gpu_tree.kernels.cpu import launch as cpu_launch

    result = cpu_launch._thread_pool().submit(sum, (1, 2)).result(timeout=60)
    raise SystemExit(0 if result == 3 else 1)


def test_items_are_shared_out_by_their_work():
    import numpy as np

    from gpu_tree.kernels.cpu import subtrees as cpu_subtrees

    finisher = cpu_subtrees.finish_subtrees_numeric
    start = np.array([0, 10, 1000, 1010, 1020, 1030])
    end = np.array([10, 1000, 1010, 1020, 1030, 5000])
    args = [None, None, start, end]
    bounds = finisher._task_bounds(args, start.size, threads=1)  # four tasks
    assert bounds[0] == 0 and bounds[-1] == start.size
    assert np.all(np.diff(bounds) >= 0)
    # The two large roots (990 and 3,970 rows) are not in one task.
    tasks = [set(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
    assert not any({1, 5} <= task for task in tasks)


# -- the Docker image -------------------------------------------------------------------------
def test_the_docker_image_compiles_its_kernels_at_build_time():
    """The warm-up runs after the install, into a cache folder any uid may use."""
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "NUMBA_CACHE_DIR=/opt/gputree/numba-cache" in dockerfile
    install = dockerfile.index("pip install")
    warm_up = dockerfile.index("RUN gputree warm-up")
    assert install < warm_up < dockerfile.index("USER ")
    assert 'chmod -R a+rwX "$NUMBA_CACHE_DIR"' in dockerfile[warm_up:]
