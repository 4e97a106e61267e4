"""Everything a GPU machine should check, in one run that writes all it finds to a folder.

    python bench/gpu_check.py OUT                 # on a GPU machine: about 8 minutes
    python bench/gpu_check.py OUT --smoke         # anywhere: tiny sizes, CUDA simulator
    python bench/gpu_check.py OUT --steps env,probe,nvforest --carried nvforest

Steps, each a child process with its own time limit, so that a crash, a hang or a
missing package in one loses nothing else (``OUT/<step>.log`` holds its output):

1. ``env``: ``nvidia-smi``, Python and package versions, the CUDA driver and runtime,
   libNVVM's version and the PTX ISA version it emits, whether nvJitLink links in-process.
2. ``probe``: :func:`gpu_tree.backends.cuda.cuda_status`, whose probe kernel compiles and
   runs once before a fit trusts the GPU.
3. ``warmup``: one small fit per kind of model, each in its own process and all at once,
   so that the kernels compile in parallel into numba's on-disk cache.
4. ``matrix``: ``bench/bench_gpu_matrix.py`` on the Higgs-shaped 10.5M x 28 set at depth
   10: the end-to-end fit from host numpy and from a CuPy array, the device build alone,
   per-level times, the copy bandwidth floor, and XGBoost's one round on the same GPU in
   the same run (where an XGBoost built with CUDA is installed).
5. ``parity``: the same fits on the GPU and the CPU, timed, trees compared bit for bit:
   Higgs-shaped classification and regression at depth 10, entropy, a sparse fit, a
   forest and absolute_error; and the entropy criteria's ``log2`` (kernels/log2.py) on
   the device against the CPU's on many values (must be equal; libdevice's own ``log2``
   against the CPU's libm recorded beside it).
6. ``nvforest``: where ``nvforest`` imports, RAPIDS' GPU forest inference serves
   :func:`gpu_tree.export_treelite`'s model of a forest and a tree, classifier and
   regressor, and a tree with a categorical feature, each fitted on the GPU (1,000,000
   Higgs-shaped rows, forests of 10 trees, depth 10): nvForest in double precision must
   give gpu_tree's ``predict_proba`` / ``predict`` (equal for a tree, within n_trees x
   2**-52 x the largest leaf for a forest: ``bench/bench_export.py``'s ``agreement``),
   and its predict on the rows already on the GPU is timed against gpu_tree's (medians
   of 5), in double and in single precision (single's difference recorded, not judged:
   it rounds thresholds to float32). Where nvforest is not installed the step records
   ``skipped: nvforest not installed`` with the install hint, and the check goes on.
   Under ``--smoke`` nvForest runs on the CPU, where it installs without a GPU.
7. ``tests``: the CUDA-relevant test files on the device, with pytest-xdist, a per-test
   time limit and JUnit XML.

``OUT/summary.json`` gathers each step's status and time and the figures (the parity
cases, the matrix's goals, XGBoost's figures, the test counts); ``OUT/summary.md``
renders it. The exit status is 0 when every step ran and every parity case matched,
1 otherwise. ``--smoke`` runs the same steps at tiny sizes under
``NUMBA_ENABLE_CUDASIM=1`` (tests/quality/test_bench_scripts.py runs it in CI).
``--steps`` runs some of the steps (in their order); ``--carried xgboost|nvforest`` names
the wheel set the call carries, whose module must then import (``OUT/env.json``'s
``imports``), else the check fails, and with ``nvforest`` its step must run, not skip.

Carrying the peers' wheels to a lent GPU machine (64 MiB a call, the working tree
included: about 4 MB): its image has CuPy, cuda-bindings, numba-cuda, numpy and
scikit-learn, but neither XGBoost with CUDA nor nvForest nor Treelite. The two wheel sets
do not fit in one call, so a session runs two:

1. the whole check with XGBoost: ``.whl/xgboost-3.4.1-py3-none-manylinux_2_28_x86_64.whl``
   (57.6 MB), carry ``.whl``, run ``bench/gpu_check.py $OUT/check --carried xgboost``
   (about 8 minutes; the nvforest step skips in seconds);
2. nvForest alone: the 8 wheels of RAPIDS 26.10 for CUDA 13 and Python 3.12 in
   ``.whl-nvforest`` (ignored by ``.git/info/exclude``), 55.7 MB: ``libnvforest-cu13``
   26.3 MB, ``libraft-cu13`` 20.6, ``librmm-cu13`` 4.8, ``nvforest-cu13`` 0.9,
   ``pylibraft-cu13`` 1.0, ``rmm-cu13`` 1.0, ``treelite`` 4.8.1 0.9, ``rapids-logger``
   0.3; carry ``.whl-nvforest`` and run::

       python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \\
           --upgrade --target /tmp/site .whl-nvforest/*.whl && export PYTHONPATH=/tmp/site \\
           || exit; python3 bench/gpu_check.py $OUT/check --steps env,probe,nvforest \\
           --carried nvforest --budget 480

   with ``timeout_s`` 540. Not yet run on a GPU machine: on a fresh one the first fits
   compile their kernels (the first Higgs-sized fit took 30 s cold on the H200), so
   expect 3 to 6 minutes with the machine's start; the two calls together may pass one
   session's 15 minutes of device time, so a session may run the second alone.
   Fetch them with ``pip download --no-deps --only-binary=:all: --python-version 3.12
   --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
   --platform manylinux_2_24_x86_64 -d .whl-nvforest "nvforest-cu13==26.10.*"
   "libnvforest-cu13==26.10.*" "pylibraft-cu13==26.10.*" "libraft-cu13==26.10.*"
   "rmm-cu13==26.10.*" "librmm-cu13==26.10.*" "rapids-logger==0.3.*" treelite==4.8.1``.
   The image's packages give the rest of their requirements (cuda-bindings 13, CuPy
   14.2, numpy 2, scikit-learn). libraft's library names libnvJitLink, libcublas and
   libcusolver but nvForest does not load it (nvForest's own libraries need only librmm
   and rapids-logger), and libraft.load_library passes over a library it cannot load.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# The test files that fit, predict or compile on the CUDA backend (paths under tests/).
CUDA_TEST_FILES = (
    "device/test_cuda_backend.py",
    "estimators/test_estimators.py",
    "growing/test_fit_stats.py",
    "growing/test_absolute_error.py",
    "backends/test_sparse.py",
    "growing/test_multi_output.py",
    "ensemble/test_forest.py",
    "growing/test_grower.py",
    "data/test_categorical.py",
    "growing/test_monotonic.py",
    "growing/test_poisson.py",
    "growing/test_random_splitter.py",
    "growing/test_splitting.py",
    "estimators/test_oblique.py",
    "model/test_pruning.py",
    "data/test_regression_precision.py",
    "kernels/test_log2.py",
)

# Sizes: rows of the Higgs-shaped parity fits, the sparse, forest and absolute-error ones.
SIZES = {
    "full": dict(
        higgs=10_500_000,
        entropy=1_000_000,
        sparse=(500_000, 200, 0.05),
        forest=(1_000_000, 10),
        absolute_error=200_000,
        depth=10,
        log2_values=1 << 22,
        nvforest=dict(rows=1_000_000, trees=10, depth=10, repeats=5),
    ),
    "smoke": dict(
        higgs=300,
        entropy=200,
        sparse=(200, 10, 0.2),
        forest=(200, 2),
        absolute_error=40,
        depth=2,
        log2_values=256,
        nvforest=dict(rows=300, trees=2, depth=3, repeats=1),
    ),
}

# Step time limits in seconds (full run); the tests take what is left of --budget.
LIMITS = {"env": 60, "probe": 120, "warmup": 150, "matrix": 200, "parity": 200, "nvforest": 300}
SMOKE_LIMITS = {
    "env": 120,
    "probe": 300,
    "warmup": 600,
    "matrix": 600,
    "parity": 600,
    "nvforest": 900,
}
STEPS = ("env", "probe", "warmup", "matrix", "parity", "nvforest", "tests")

# The wheel sets a device call can carry (together they pass its 64 MiB; the module
# docstring gives the two-call plan) and the module each must make importable.
CARRIED = {"xgboost": "xgboost", "nvforest": "nvforest"}
NVFOREST_SKIPPED = "skipped: nvforest not installed"
NVFOREST_HINT = (
    "pip install nvforest-cu13 treelite (on a device call: carry the nvForest wheels and "
    "pass --carried nvforest, as bench/gpu_check.py's docstring says)"
)
TESTS_MINIMUM = 60

WARMUP_ROWS = 300_000
WARMUP_CASES = (
    "gini",
    "entropy",
    "regression",
    "weighted",
    "categorical",
    "sparse",
    "absolute_error",
    "forest",
    "float32",
    "multi_output",
)

# Under the simulator a warm-up fit takes a minute: the smoke run shows the mechanism on two.
SMOKE_WARMUP_CASES = ("gini", "sparse")


def log(message):
    print(f"[gpu_check {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- the parent: steps as child processes ------------------------------------------------
def child_env(smoke: bool) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    if smoke:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def run_step(name, command, timeout, out: Path, smoke: bool) -> dict:
    """Run one step's command with its time limit; its output to ``OUT/<name>.log``."""
    log(f"step {name}: up to {timeout:.0f} s: {' '.join(map(str, command))}")
    start = time.perf_counter()
    with open(out / f"{name}.log", "w") as output:
        process = subprocess.Popen(
            [str(c) for c in command],
            cwd=REPO,
            env=child_env(smoke),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = process.wait(timeout=timeout)
            status = "ok" if rc == 0 else "failed"
        except subprocess.TimeoutExpired:
            _stop(process)
            rc, status = None, "timeout"
    seconds = round(time.perf_counter() - start, 2)
    log(f"step {name}: {status} in {seconds} s")
    return {"status": status, "rc": rc, "seconds": seconds, "limit_s": round(timeout, 1)}


def _stop(process):
    """Stop a step and the processes it started (its own session), by their group id."""
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def step_command(step, out, smoke, *extra):
    command = [sys.executable, Path(__file__), "--step", step, "--out", out]
    return command + (["--smoke"] if smoke else []) + list(extra)


def matrix_command(out: Path, smoke: bool):
    command = [
        sys.executable,
        REPO / "bench" / "bench_gpu_matrix.py",
        "--only",
        "bandwidth,higgs,peers",
        "--datasets",
        "higgs",
        "--peers",
        "xgboost_cuda",
        "--out",
        out / "matrix",
    ]
    if smoke:
        return command + ["--smoke", "--peer-timeout", "120"]
    return command + ["--depths", "10", "--repeats", "3", "--peer-timeout", "120"]


def tests_command(out: Path, smoke: bool, per_test_timeout: int):
    files = [REPO / "tests" / name for name in CUDA_TEST_FILES]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--timeout={per_test_timeout}",
        "-rfE",
        f"--junitxml={out / 'junit.xml'}",
    ]
    if smoke:  # the step itself, not the suite: one quick test of the device
        return command + [str(files[0]), "-k", "probe_kernel_runs"]
    if importlib.util.find_spec("xdist") is None:  # pytest-xdist absent: one process
        return command + list(map(str, files))
    workers = max(2, min(16, (os.cpu_count() or 2) - 2))
    return command + ["-n", str(workers), *map(str, files)]


def step_passed(name: str, step: dict, carried: str | None) -> bool:
    """A step counts as passed when it ran to its end, or, for the nvForest step, when
    nvforest is not installed and this call was not told it carries it."""
    if step["status"] == "ok":
        return True
    return name == "nvforest" and step["status"] == NVFOREST_SKIPPED and carried != "nvforest"


def carried_problem(env: dict, carried: str | None) -> str | None:
    """Why the wheel set this call says it carries (--carried) is not usable, or None."""
    if carried is None:
        return None
    problem = env.get("imports", {}).get(
        CARRIED[carried], "not recorded (no env step, or it failed)"
    )
    return None if problem is None else f"--carried {carried}: {CARRIED[carried]} {problem}"


def run_all(
    out: Path,
    smoke: bool,
    budget: float,
    commit: str | None,
    steps_wanted=STEPS,
    carried: str | None = None,
) -> int:
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    limits = SMOKE_LIMITS if smoke else LIMITS
    steps = {}
    reserve = TESTS_MINIMUM if "tests" in steps_wanted else 0

    def left():
        return budget - (time.perf_counter() - start)

    plan = [
        ("env", step_command("env", out, smoke)),
        ("probe", step_command("probe", out, smoke)),
        ("warmup", step_command("warmup", out, smoke)),
        ("matrix", matrix_command(out, smoke)),
        ("parity", step_command("parity", out, smoke)),
        ("nvforest", step_command("nvforest", out, smoke)),
    ]
    for name, command in plan:
        if name not in steps_wanted:
            continue
        timeout = min(limits[name], left() - reserve)
        if timeout < 10:
            steps[name] = {"status": "skipped", "why": "no time left in --budget"}
            continue
        steps[name] = run_step(name, command, timeout, out, smoke)
        if name == "nvforest":
            found = _read_json(out / "nvforest.json") or {}
            if found.get("status") == NVFOREST_SKIPPED:
                steps[name]["status"] = NVFOREST_SKIPPED
        if name == "probe" and steps[name]["status"] != "ok":
            break  # no usable device: the steps after it would only fail the same way
    if "tests" in steps_wanted and steps.get("probe", {}).get("status") == "ok":
        timeout = left() - 5
        per_test = 60 if smoke else 120
        if timeout >= 30:
            steps["tests"] = run_step(
                "tests", tests_command(out, smoke, per_test), timeout, out, smoke
            )
    summary = summarise(out, steps, smoke, commit, time.perf_counter() - start)
    summary["carried"] = carried
    summary["carried_problem"] = carried_problem(summary["env"], carried)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    (out / "summary.md").write_text(render(summary))
    print(render(summary), end="")
    ran = all(step_passed(n, s, carried) for n, s in steps.items() if n != "tests")
    cases = summary["parity"].get("cases", {})
    matched = "parity" not in steps_wanted or (
        bool(cases)
        and all(case.get("equal") for case in cases.values())
        and bool((summary["parity"].get("log2") or {}).get("equal"))
    )
    return 0 if ran and matched and summary["carried_problem"] is None else 1


# -- summary ---------------------------------------------------------------------------
def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def junit_counts(path: Path) -> dict:
    """Tests run, failed, errors, skipped, and the failures' names (JUnit XML)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "failed": []}
    for case in root.iter("testcase"):
        counts["tests"] += 1
        for child in case:
            tag = {"failure": "failures", "error": "errors", "skipped": "skipped"}.get(child.tag)
            if tag:
                counts[tag] += 1
                if tag != "skipped":
                    counts["failed"].append(f"{case.get('classname')}::{case.get('name')}")
    return counts


def summarise(out: Path, steps: dict, smoke: bool, commit, seconds) -> dict:
    matrix = _read_json(out / "matrix" / "matrix.json") or {}
    higgs = matrix.get("gpu_tree", {}).get("higgs", {}).get("10", {})
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "smoke": smoke,
        "seconds": round(seconds, 1),
        "env": _read_json(out / "env.json") or {},
        "probe": _read_json(out / "probe.json") or {},
        "steps": steps,
        "warmup": _read_json(out / "warmup.json") or {},
        "parity": _read_json(out / "parity.json") or {},
        "nvforest": _read_json(out / "nvforest.json") or {},
        "matrix": {
            "gpu_tree_higgs_depth10": {
                k: higgs.get(k)
                for k in (
                    "rows",
                    "fit_host_s",
                    "fit_device_s",
                    "device_build_s",
                    "setup_copy_s",
                    "input_copy_s",
                    "predict_s",
                    "leaves",
                    "train_accuracy",
                    "one_pass_floor_s",
                    "error",
                )
            },
            "peers": matrix.get("peers", {}),
            "bandwidth": matrix.get("bandwidth"),
            "goals": matrix.get("goals"),
        },
        "tests": junit_counts(out / "junit.xml"),
    }


def render(summary: dict) -> str:
    lines = [
        f"# gpu_check {summary['date']} (commit {summary['commit']}, "
        f"{'smoke, simulator' if summary['smoke'] else 'GPU'})",
        "",
        f"device: {summary['env'].get('device')}; probe: {summary['probe'].get('reason')}",
        "",
        "| step | status | seconds |",
        "|---|---|---|",
    ]
    for name, step in summary["steps"].items():
        lines.append(f"| {name} | {step['status']} | {step.get('seconds', '')} |")
    cases = summary["parity"].get("cases", {})
    if cases:
        lines += ["", "| parity case | GPU first fit s | GPU fit s | CPU fit s | equal |"]
        lines.append("|---|---|---|---|---|")
        for name, case in cases.items():
            lines.append(
                f"| {name} | {case.get('gpu_first_s')} | {case.get('gpu_s')} | "
                f"{case.get('cpu_s')} | {case.get('equal')} {case.get('difference') or ''} |"
            )
    log2 = summary["parity"].get("log2")
    if log2:
        lines += ["", f"log2 on the device against the CPU's: {log2}"]
        if not log2.get("equal"):
            lines += ["", "**the entropy criteria's log2 differs between the devices**"]
    lines += render_nvforest(summary.get("nvforest") or {})
    if summary.get("carried_problem"):
        lines += ["", f"carried wheels: {summary['carried_problem']}"]
    higgs = summary["matrix"]["gpu_tree_higgs_depth10"]
    if any(v is not None for v in higgs.values()):
        lines += ["", f"Higgs-shaped depth 10 on the GPU: {higgs}"]
    for name, peer in summary["matrix"]["peers"].items():
        lines += [f"peer {name}: {peer}"]
    tests = summary["tests"]
    if tests:
        lines += [
            "",
            f"tests: {tests['tests']} run, {tests['failures']} failed, {tests['errors']} "
            f"errors, {tests['skipped']} skipped",
            *(f"- {name}" for name in tests["failed"]),
        ]
    return "\n".join(lines) + "\n"


# -- the steps (in child processes) --------------------------------------------------------
# The packages whose versions a run records.
VERSIONED = (
    "numpy numba numba-cuda numba-cuda-mlir llvmlite cupy-cuda13x cupy-cuda12x "
    "cuda-bindings cuda-core cuda-toolkit nvidia-nvjitlink nvidia-nvvm "
    "nvidia-cuda-nvcc nvidia-cuda-runtime scikit-learn xgboost pytest pytest-xdist treelite "
    "nvforest-cu13 libnvforest-cu13 pylibraft-cu13 libraft-cu13 rmm-cu13 librmm-cu13 "
    "rapids-logger"
).split()


def import_problem(module: str) -> str | None:
    """None when ``module`` imports, else why not: not installed, or the error it raises
    (a carried wheel whose library does not load, say)."""
    if importlib.util.find_spec(module) is None:
        return "not installed"
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure to import is the finding
        return f"does not import: {type(exc).__name__}: {exc}"[:500]
    return None


def step_env(out: Path, smoke: bool):
    info = {"python": platform.python_version(), "host_cpus": os.cpu_count()}
    from bench_gpu_matrix import _versions  # this script's folder is on sys.path

    info["versions"] = _versions(VERSIONED)
    info["imports"] = {module: import_problem(module) for module in CARRIED.values()}
    smi = shutil.which("nvidia-smi")
    if smi:
        result = subprocess.run([smi], capture_output=True, text=True, timeout=30)
        (out / "nvidia-smi.txt").write_text(result.stdout + result.stderr)
        query = subprocess.run(
            [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        info["device"] = query.stdout.strip()
    else:
        info["device"] = "CUDA simulator" if smoke else "no nvidia-smi"
    from gpu_tree.kernels.cuda.api import NUMPY_ROW_STACK_RESTORED, PROVIDER, cuda

    info["cuda_module"] = PROVIDER
    info["numpy_row_stack_restored"] = NUMPY_ROW_STACK_RESTORED
    if not smoke:
        from numba.cuda.cudadrv import nvvm
        from numba.cuda.cudadrv.driver import _have_nvjitlink

        info["driver"] = list(cuda.driver.driver.get_version())
        info["runtime"] = list(cuda.runtime.get_version())
        info["nvvm"] = list(nvvm.NVVM().get_version())
        info["nvjitlink_in_process"] = bool(_have_nvjitlink())

        def add_one(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] += 1

        ptx, _ = cuda.compile_ptx(add_one, "void(float32[:])", cc=(9, 0))
        info["ptx_isa"] = next(
            (line.split()[1] for line in ptx.splitlines() if line.startswith(".version")), None
        )
    (out / "env.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info, indent=2))


def step_probe(out: Path, smoke: bool):
    start = time.perf_counter()
    from gpu_tree.backends.cuda import cuda_status

    usable, reason, xp = cuda_status()
    result = {"usable": usable, "reason": reason, "seconds": round(time.perf_counter() - start, 2)}
    if usable and xp is not np:
        props = xp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        result["device"] = name.decode() if isinstance(name, bytes) else name
    (out / "probe.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if not usable:
        raise SystemExit(1)
    if not smoke and xp is np:
        raise SystemExit("the CUDA simulator is on: NUMBA_ENABLE_CUDASIM must be unset on a GPU")


def _small_problem(case: str, n: int, seed: int = 0):
    """(estimator, X, y, fit keywords) of one warm-up kind, n rows."""
    from gpu_tree import (
        DecisionTreeClassifier,
        DecisionTreeRegressor,
        RandomForestClassifier,
    )

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(scale=0.5, size=n) > 0).astype(np.int64)
    target = np.nan_to_num(X[:, 1]) * 2 + rng.normal(size=n)
    fit_kw = {}
    if case == "gini":
        return DecisionTreeClassifier(max_depth=6), X, y, fit_kw
    if case == "entropy":
        return DecisionTreeClassifier(criterion="entropy", max_depth=6), X, y, fit_kw
    if case == "regression":
        return DecisionTreeRegressor(max_depth=6), X, target, fit_kw
    if case == "weighted":
        fit_kw["sample_weight"] = rng.integers(1, 4, size=n).astype(float)
        return DecisionTreeClassifier(max_depth=6), X, y, fit_kw
    if case == "categorical":
        X[:, 2] = rng.integers(0, 12, size=n)
        return DecisionTreeClassifier(max_depth=6, categorical_features=[2]), X, y, fit_kw
    if case == "sparse":
        import scipy.sparse as sp

        dense = np.where(rng.random(X.shape) < 0.3, np.nan_to_num(X), 0.0)
        return DecisionTreeRegressor(max_depth=6), sp.csr_matrix(dense), target, fit_kw
    if case == "absolute_error":
        return DecisionTreeRegressor(criterion="absolute_error", max_depth=4), X, target, fit_kw
    if case == "forest":
        return RandomForestClassifier(n_estimators=2, max_depth=6, random_state=0), X, y, fit_kw
    if case == "float32":
        return DecisionTreeClassifier(max_depth=6), X.astype(np.float32), y, fit_kw
    if case == "multi_output":
        Y = np.column_stack([target, np.nan_to_num(X[:, 3])])
        return DecisionTreeRegressor(max_depth=6), X, Y, fit_kw
    raise ValueError(f"unknown warm-up case {case!r}")


def step_warmup_case(case: str, smoke: bool):
    """One kind of model fitted and used on both devices: the CUDA kernels, and the CPU
    kernels' parallel versions (rows enough to pass kernels/cpu/launch.py's serial limit)."""
    estimator, X, y, fit_kw = _small_problem(case, 100 if smoke else WARMUP_ROWS)
    if smoke:
        estimator.set_params(max_depth=2)
    timings = {"case": case}
    for device in ("cuda", "cpu"):
        start = time.perf_counter()
        estimator.set_params(device=device).fit(X, y, **fit_kw)
        estimator.predict(X)
        timings[device] = round(time.perf_counter() - start, 2)
    print(json.dumps(timings))


def step_warmup(out: Path, smoke: bool):
    """Every warm-up case in its own process, all at once (numba compiles in one thread
    per process; its on-disk cache is shared)."""
    start = time.perf_counter()
    processes = {
        case: subprocess.Popen(
            [sys.executable, __file__, "--step", "warmup-case", "--case", case]
            + (["--smoke"] if smoke else []),
            cwd=REPO,
            env=child_env(smoke),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for case in (SMOKE_WARMUP_CASES if smoke else WARMUP_CASES)
    }
    results = {}
    for case, process in processes.items():
        output, _ = process.communicate()
        results[case] = {"rc": process.returncode}
        if process.returncode == 0:
            results[case].update(json.loads(output.strip().splitlines()[-1]))
        else:
            results[case]["output"] = output[-3000:]
            print(f"--- {case} failed:\n{output[-3000:]}")
    results["wall_s"] = round(time.perf_counter() - start, 2)
    (out / "warmup.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "output"}, indent=2))
    if any(r["rc"] != 0 for k, r in results.items() if k != "wall_s"):
        raise SystemExit(1)


def _timed(function, *args, **kwargs):
    from gpu_tree.backends.cuda import cuda_status

    xp = cuda_status()[2]
    start = time.perf_counter()
    result = function(*args, **kwargs)
    if xp is not None and xp is not np:
        xp.cuda.get_current_stream().synchronize()
    return result, round(time.perf_counter() - start, 4)


def _compare(gpu_model, cpu_model) -> str | None:
    """None where the two models' trees are equal bit for bit, else the first difference."""
    from gpu_tree.testing import assert_tree_equal

    gpu_trees = getattr(gpu_model, "estimators_", None) or [gpu_model]
    cpu_trees = getattr(cpu_model, "estimators_", None) or [cpu_model]
    if len(gpu_trees) != len(cpu_trees):
        return f"{len(gpu_trees)} trees against {len(cpu_trees)}"
    for index, (a, b) in enumerate(zip(gpu_trees, cpu_trees, strict=True)):
        try:
            assert_tree_equal(a.tree_, b.tree_, impurity_rtol=0, value_rtol=0)
        except AssertionError as exc:
            return f"tree {index}: {str(exc).strip().splitlines()[0]}"[:300]
    return None


def parity_case(make, X, y, fit_kw=None) -> dict:
    """The same model fitted on the GPU (twice: the first may compile) and the CPU."""
    fit_kw = fit_kw or {}
    entry = {}
    try:
        gpu, entry["gpu_first_s"] = _timed(make().set_params(device="cuda").fit, X, y, **fit_kw)
        gpu, entry["gpu_s"] = _timed(make().set_params(device="cuda").fit, X, y, **fit_kw)
        cpu, entry["cpu_s"] = _timed(make().set_params(device="cpu").fit, X, y, **fit_kw)
        entry["difference"] = _compare(gpu, cpu)
        entry["equal"] = entry["difference"] is None
        entry["gpu_over_cpu"] = (
            round(entry["cpu_s"] / entry["gpu_s"], 2) if entry["gpu_s"] else None
        )
    except Exception as exc:  # noqa: BLE001 - record it, go on with the other cases
        entry["equal"] = False
        entry["error"] = f"{type(exc).__name__}: {exc}"[:500]
        traceback.print_exc()
    log(f"parity: {entry}")
    return entry


# The CUDA module and the kernels' log2, set by log2_parity: numba's simulator runs a
# kernel with a stand-in for the module its globals name ``cuda``, so the kernels below
# read them as globals.
cuda = None
kernels_log2 = None


def _device_log2_each(values, out):
    i = cuda.grid(1)
    if i < values.size:
        out[i] = math.log2(values[i])


def _kernels_log2_each(values, out):
    i = cuda.grid(1)
    if i < values.size:
        out[i] = kernels_log2(values[i])


def _log2_comparison(values, gpu, cpu) -> dict:
    differ = gpu != cpu
    ulps = np.abs(gpu.view(np.int64) - cpu.view(np.int64))
    return {
        "values": int(values.size),
        "differ": int(differ.sum()),
        "max_ulps": int(ulps.max()),
        "examples": [
            [float(v), float(a), float(b)]
            for v, a, b in zip(values[differ][:5], gpu[differ][:5], cpu[differ][:5], strict=True)
        ],
    }


def log2_parity(n_values: int) -> dict:
    """On integers 1..n and fractions k/n: the entropy criteria's log2 (kernels/log2.py)
    in a kernel against the same function on the CPU, which must give the same bits
    (``gpu_tree``), and, for the record, the device's own ``math.log2`` (libdevice)
    against the CPU's libm (``device_math``), which the criteria no longer use."""
    global cuda, kernels_log2
    from gpu_tree.backends.cuda import cuda_status
    from gpu_tree.kernels.cuda.api import cuda
    from gpu_tree.kernels.cuda.split_scan import _product
    from gpu_tree.kernels.log2 import log2_of_array, make_log2

    xp = cuda_status()[2]
    kernels_log2 = make_log2(cuda.jit(device=True), _product)
    integers = np.arange(1, n_values + 1, dtype=np.float64)
    values = np.concatenate([integers, integers / n_values])
    device_values = xp.asarray(values)
    threads = 256
    found = {}
    for name, function, cpu in (
        ("gpu_tree", _kernels_log2_each, log2_of_array),
        ("device_math", _device_log2_each, np.log2),
    ):
        out = xp.zeros_like(device_values)
        cuda.jit(function)[(values.size + threads - 1) // threads, threads](device_values, out)
        gpu = out.get() if hasattr(out, "get") else out
        found[name] = _log2_comparison(values, gpu, cpu(values))
    found["equal"] = found["gpu_tree"]["differ"] == 0
    return found


def step_parity(out: Path, smoke: bool):
    import scipy.sparse as sp

    from gpu_tree import (
        DecisionTreeClassifier,
        DecisionTreeRegressor,
        RandomForestClassifier,
    )
    from gpu_tree.datasets import make_higgs_like

    sizes = SIZES["smoke" if smoke else "full"]
    depth = sizes["depth"]
    results = {"sizes": sizes, "cases": {}}

    def save():
        (out / "parity.json").write_text(json.dumps(results, indent=2) + "\n")

    try:
        results["log2"] = log2_parity(sizes["log2_values"])
    except Exception as exc:  # noqa: BLE001
        results["log2"] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
    log(f"log2: {results['log2']}")
    save()
    n = sizes["higgs"]
    X, y = make_higgs_like(n, 28, random_state=0)
    cases = results["cases"]
    cases[f"higgs {n:,} gini depth {depth}"] = parity_case(
        lambda: DecisionTreeClassifier(max_depth=depth), X, y
    )
    save()
    target = regression_target(X)
    cases[f"higgs {n:,} regression depth {depth}"] = parity_case(
        lambda: DecisionTreeRegressor(max_depth=depth), X, target
    )
    save()
    m = sizes["entropy"]
    cases[f"higgs {m:,} entropy depth {depth}"] = parity_case(
        lambda: DecisionTreeClassifier(criterion="entropy", max_depth=depth), X[:m], y[:m]
    )
    save()
    del target
    rows, columns, density = sizes["sparse"]
    rng = np.random.default_rng(1)
    X_sparse = sp.random(rows, columns, density=density, format="csr", random_state=rng)
    y_sparse = (np.asarray(X_sparse[:, :5].sum(axis=1)).ravel() > 5 * density * 0.5).astype(int)
    cases[f"sparse {rows:,} x {columns} density {density}"] = parity_case(
        lambda: DecisionTreeClassifier(max_depth=depth), X_sparse, y_sparse
    )
    save()
    rows, trees = sizes["forest"]
    cases[f"forest {trees} trees {rows:,} rows"] = parity_case(
        lambda: RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=0),
        X[:rows],
        y[:rows],
    )
    save()
    rows = sizes["absolute_error"]
    noisy = X[:rows, 0] + np.random.default_rng(2).laplace(size=rows)
    ae_depth = min(6, depth)
    cases[f"absolute_error {rows:,} depth {ae_depth}"] = parity_case(
        lambda: DecisionTreeRegressor(criterion="absolute_error", max_depth=ae_depth),
        X[:rows],
        noisy,
    )
    save()
    print(json.dumps(results, indent=2, default=str))


# -- nvForest: the Treelite export served by RAPIDS' GPU forest inference -------------------
def regression_target(X):
    """The regressions' target (parity and nvForest steps): features mixed, one product."""
    return X[:, 0] * 2.0 + X[:, 5] - X[:, 11] * X[:, 3]


def _synchronize(xp):
    if xp is not None and xp is not np:
        xp.cuda.runtime.deviceSynchronize()  # nvForest runs on its own handle's stream


def _median_timed(xp, repeats, function, *args, **kwargs):
    """(the last result, the median seconds, every run's seconds) of ``repeats`` calls,
    after one untimed call on 1,000 rows of ``args[0]`` (first-call costs)."""
    function(args[0][:1000], *args[1:], **kwargs)
    _synchronize(xp)
    runs, result = [], None
    for _ in range(repeats):
        result = None
        start = time.perf_counter()
        result = function(*args, **kwargs)
        _synchronize(xp)
        runs.append(round(time.perf_counter() - start, 5))
    return result, float(np.median(runs)), runs


def nvforest_models(depth: int, trees: int) -> dict:
    """name -> (estimator, target kind): forests and trees, classifiers and regressors, and
    a tree with a categorical feature (column 2 holding codes)."""
    from gpu_tree import (
        DecisionTreeClassifier,
        DecisionTreeRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )

    return {
        f"forest classifier {trees} trees": (
            RandomForestClassifier(n_estimators=trees, max_depth=depth, random_state=0),
            "class",
        ),
        f"forest regressor {trees} trees": (
            RandomForestRegressor(n_estimators=trees, max_depth=depth, random_state=0),
            "regression",
        ),
        "tree classifier": (DecisionTreeClassifier(max_depth=depth), "class"),
        "tree regressor": (DecisionTreeRegressor(max_depth=depth), "regression"),
        "tree categorical": (
            DecisionTreeClassifier(max_depth=depth, categorical_features=[2]),
            "categorical",
        ),
    }


def nvforest_case(nvforest, model, X, repeats: int, device: str, xp) -> dict:
    """A fitted gpu_tree model against nvForest serving its Treelite export, on the rows
    ``X`` already on the device: gpu_tree's predict (``predict_proba`` / ``predict`` of a
    CuPy array: on the GPU) and nvForest's, timed; nvForest in double precision must give
    gpu_tree's predictions (bench_export.agreement: equal for a tree, within
    n_trees * 2**-52 * the largest leaf for a forest); single precision (thresholds and
    leaves as float32) is timed and its difference recorded, not judged."""
    from bench_export import agreement, as_columns, gpu_tree_predict

    import gpu_tree

    on_device = xp.asarray(X)
    output, gpu_tree_s, gpu_tree_runs = _median_timed(
        xp, repeats, gpu_tree_predict(model), on_device
    )
    expected = as_columns(output)
    entry = {"rows": int(len(X)), "gpu_tree_s": gpu_tree_s, "gpu_tree_runs_s": gpu_tree_runs}
    exported = gpu_tree.export_treelite(model)
    inputs = gpu_tree.export_inputs(model, X)
    inputs = xp.asarray(inputs) if device == "gpu" else inputs
    for precision in ("double", "single"):
        start = time.perf_counter()
        forest = nvforest.load_from_treelite_model(exported, device=device, precision=precision)
        load_s = round(time.perf_counter() - start, 4)
        method = forest.predict_proba if hasattr(model, "predict_proba") else forest.predict
        got, seconds, runs = _median_timed(xp, repeats, method, inputs)
        entry[precision] = {
            "load_s": load_s,
            "predict_s": seconds,
            "runs_s": runs,
            "gpu_tree_over_nvforest": round(gpu_tree_s / seconds, 2) if seconds else None,
            "agreement": agreement(model, got, expected),
        }
    entry["equal"] = entry["double"]["agreement"]["agree"]
    return entry


def nvforest_check(sizes: dict, smoke: bool) -> dict:
    """The nvForest step's findings: skipped when nvforest is not installed, else each of
    :func:`nvforest_models` fitted on the GPU and compared (:func:`nvforest_case`); under
    ``--smoke`` nvForest runs on the CPU (its CPU forest: the same loading and outputs)."""
    if importlib.util.find_spec("nvforest") is None:
        return {"status": NVFOREST_SKIPPED, "hint": NVFOREST_HINT}
    try:
        import nvforest
    except Exception as exc:  # noqa: BLE001 - installed but broken: a failure, not a skip
        return {"status": "failed", "error": f"nvforest does not import: {exc}"[:500]}
    from gpu_tree.backends.cuda import cuda_status
    from gpu_tree.datasets import make_higgs_like

    xp = cuda_status()[2]
    device = "cpu" if smoke else "gpu"
    rows, trees, depth, repeats = (sizes[k] for k in ("rows", "trees", "depth", "repeats"))
    X, y = make_higgs_like(rows, 28, random_state=0)
    codes = np.random.default_rng(3).integers(0, 12, rows)
    X_categorical = X.copy()
    X_categorical[:, 2] = codes
    data = {
        "class": (X, y),
        "regression": (X, regression_target(X)),
        "categorical": (X_categorical, (y + (codes % 3 == 0)) % 2),
    }
    result = {"status": "ran", "device": device, "version": nvforest.__version__, "cases": {}}
    result["sizes"] = sizes
    for name, (model, kind) in nvforest_models(depth, trees).items():
        features, target = data[kind]
        try:
            model.set_params(device="cuda").fit(features, target)
            entry = nvforest_case(nvforest, model, features, repeats, device, xp)
        except Exception as exc:  # noqa: BLE001 - record it, go on with the other cases
            entry = {"equal": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
            traceback.print_exc()
        log(f"nvforest {name}: {entry}")
        result["cases"][name] = entry
    if not all(case["equal"] for case in result["cases"].values()):
        result["status"] = "failed"
    return result


def step_nvforest(out: Path, smoke: bool):
    result = nvforest_check(SIZES["smoke" if smoke else "full"]["nvforest"], smoke)
    (out / "nvforest.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(json.dumps(result, indent=2, default=str))
    if result["status"] == "failed":
        raise SystemExit(1)


def _exponent(value) -> str:
    """A difference as 1.2e-08 (or as it is: None, a shape mismatch)."""
    return f"{value:.1e}" if isinstance(value, float) else str(value)


def render_nvforest(nvforest: dict) -> list[str]:
    """The nvForest step's lines of summary.md."""
    if not nvforest:
        return []
    if nvforest["status"] != "ran" and not nvforest.get("cases"):
        why = nvforest.get("hint") or nvforest.get("error")
        return ["", f"nvForest: {nvforest['status']} ({why})"]
    lines = [
        "",
        f"nvForest {nvforest.get('version')} on the {nvforest.get('device')}, Treelite export "
        "of gpu_tree's GPU fits; times: medians, rows already on the device",
        "",
        "| nvForest case | rows | gpu_tree s | nvForest double s | gpu_tree s / nvForest s "
        "| max abs diff (bound) "
        "| nvForest single s | single max diff |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, case in nvforest.get("cases", {}).items():
        if "error" in case:
            lines.append(f"| {name} | error: {case['error']} | | | | | | |")
            continue
        double, single = case["double"], case["single"]
        check = double["agreement"]
        difference = f"{_exponent(check.get('max_abs_difference'))} ({check['bound']:.1e})"
        verdict = "" if case["equal"] else " **DISAGREES**"
        lines.append(
            f"| {name} | {case['rows']:,} | {case['gpu_tree_s']} | {double['predict_s']} | "
            f"{double['gpu_tree_over_nvforest']} | {difference}{verdict} | "
            f"{single['predict_s']} | {_exponent(single['agreement'].get('max_abs_difference'))} |"
        )
    return lines


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", help="folder for everything the run finds")
    parser.add_argument("--out", dest="out_option", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, CUDA simulator")
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds for the whole run (480; smoke 1500)"
    )
    parser.add_argument("--commit", default=os.environ.get("GPU_TREE_COMMIT"))
    parser.add_argument(
        "--steps",
        default=",".join(STEPS),
        help=f"comma list of the steps to run, in their order: {','.join(STEPS)} (all)",
    )
    parser.add_argument(
        "--carried",
        choices=sorted(CARRIED),
        help="the wheel set this call carries: its module must import, else the check fails "
        "(nvforest: its step must run rather than skip)",
    )
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.out = args.out_option or args.out
    args.steps = tuple(name.strip() for name in args.steps.split(",") if name.strip())
    unknown = sorted(set(args.steps) - set(STEPS))
    if unknown:
        parser.error(f"unknown steps in --steps: {unknown}; choose from {','.join(STEPS)}")
    if args.out is None and args.step != "warmup-case":
        parser.error("the output folder is required")
    return args


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out) if args.out else None
    if args.step == "warmup-case":
        step_warmup_case(args.case, args.smoke)
        return 0
    if args.step:
        steps = {
            "env": step_env,
            "probe": step_probe,
            "warmup": step_warmup,
            "parity": step_parity,
            "nvforest": step_nvforest,
        }
        steps[args.step](out, args.smoke)
        return 0
    commit = args.commit
    if commit is None and (REPO / ".git").exists():
        found = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
        commit = found.stdout.strip() or None
    budget = args.budget if args.budget is not None else (1500 if args.smoke else 480)
    return run_all(out, args.smoke, budget, commit, args.steps, args.carried)


if __name__ == "__main__":
    sys.exit(main())
