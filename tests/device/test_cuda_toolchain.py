"""The CUDA kernels' toolchain: which compiler module they use (``kernels/cuda/api.py``)
and their on-disk cache (``cache=True`` on every kernel and device function).

The simulator (which runs these tests without a GPU) accepts ``cache=True`` and ignores
it, and its kernel objects do not record it; so the declarations are checked twice: in
the source (every ``cuda.jit`` has ``cache=True``), and in child processes where the
kernels are real numba dispatchers (simulator off: no GPU is needed to build them) or go
through a stand-in Numba-CUDA-MLIR that records how each was declared.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_tree.kernels.cuda.api import cuda

REPO = Path(__file__).resolve().parents[2]
CUDA_KERNELS = REPO / "kernels" / "cuda"
# Every module that declares CUDA kernels or device functions.
KERNEL_SOURCES = sorted(p for p in CUDA_KERNELS.glob("*.py") if p.stem not in ("__init__", "api"))
# The stage modules whose declarations the counts below follow: absolute_error.py builds
# its helpers through _median_errors.py's factories, which the counts do not model.
STAGE_SOURCES = [p for p in KERNEL_SOURCES if p.stem != "absolute_error"]


def _run(code, tmp_path, simulator=False, extra_path=None, env=None):
    """Run ``code`` in a child Python with the simulator on or off; returns its result."""
    child_env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1" if simulator else "0", **(env or {})}
    if extra_path is not None:
        child_env["PYTHONPATH"] = os.pathsep.join(
            [str(extra_path), *filter(None, [child_env.get("PYTHONPATH")])]
        )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


# -- cache=True, in the source -----------------------------------------------------------
def _is_cuda_jit(node) -> bool:
    """``cuda.jit``, or ``device_function`` (kernels/cuda/api.py: ``cuda.jit(device=True,
    ...)`` with the same keywords)."""
    if isinstance(node, ast.Name):
        return node.id == "device_function"
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "jit"
        and isinstance(node.value, ast.Name)
        and node.value.id == "cuda"
    )


def jit_sites_without_cache(source: str) -> list[int]:
    """Lines of every ``cuda.jit`` in ``source`` not called with ``cache=True``: a bare
    ``@cuda.jit``, ``cuda.jit(...)`` without the keyword or with another value, or
    ``cuda.jit`` passed around uncalled."""
    tree = ast.parse(source)
    called = {
        id(node.func): node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _is_cuda_jit(node.func)
    }
    lines = []
    for node in ast.walk(tree):
        if not _is_cuda_jit(node):
            continue
        call = called.get(id(node))
        cached = call is not None and any(
            k.arg == "cache" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in call.keywords
        )
        if not cached:
            lines.append(node.lineno)
    return sorted(lines)


def count_jit_sites(source: str) -> int:
    return sum(_is_cuda_jit(node) for node in ast.walk(ast.parse(source)))


SPLIT_SCAN_SOURCE = REPO / "kernels" / "_split_scan.py"
LOG2_SOURCE = REPO / "kernels" / "log2.py"


def _split_scan_factory():
    """(functions, exported): kernels/_split_scan.py's make_split_scan applies the one
    ``cuda.jit(device=True, cache=True)`` site kernels/cuda/split_scan.py hands it to each
    of its ``@device_function`` helpers, and to kernels/log2.py's (its log2, made by
    make_log2), and that module keeps ``exported`` of them."""
    functions = sum(
        isinstance(node, ast.FunctionDef)
        and any(getattr(d, "id", None) in decorators for d in node.decorator_list)
        for source, decorators in (
            (SPLIT_SCAN_SOURCE, {"device_function"}),
            (LOG2_SOURCE, {"device_function", "compile_function"}),
        )
        for node in ast.walk(ast.parse(source.read_text()))
    )
    exported = [
        len(node.targets[0].elts)
        for source in STAGE_SOURCES
        for node in ast.walk(ast.parse(source.read_text()))
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and getattr(node.value.func, "attr", None) == "make_split_scan"
    ]
    assert len(exported) == 1 and functions > 1
    return functions, exported[0]


def _repeated_factory_sites(source: str) -> int:
    """The ``cuda.jit`` decorations that a kernel module's ``_compile_*`` factories make
    beyond one per site: a factory called n times at module level (as
    ``_compile_histograms_shared`` is, once per shared-histogram type) decorates each of
    its sites n times, and each result is a module attribute of its own."""
    tree = ast.parse(source)
    calls = {}
    for node in tree.body:
        value = getattr(node, "value", None)
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            calls[value.func.id] = calls.get(value.func.id, 0) + 1
    return sum(
        sum(_is_cuda_jit(inner) for inner in ast.walk(node)) * (calls.get(node.name, 0) - 1)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_compile_")
    )


def _sites_beyond_the_split_scan() -> int:
    """The ``cuda.jit`` sites of the stage modules, each decorating once (its factory's
    repeats added), the split scan's factory site aside (counted by its helpers)."""
    sources = [p.read_text() for p in STAGE_SOURCES]
    return sum(count_jit_sites(s) + _repeated_factory_sites(s) for s in sources) - 1


def expected_declarations() -> int:
    """How many ``cuda.jit`` decorations importing the stage modules makes."""
    return _sites_beyond_the_split_scan() + _split_scan_factory()[0]


def expected_dispatchers() -> int:
    """How many dispatchers the stage modules hold as module attributes (each counted in
    the module that declares it)."""
    return _sites_beyond_the_split_scan() + _split_scan_factory()[1]


@pytest.mark.parametrize("path", KERNEL_SOURCES, ids=lambda p: p.name)
def test_every_cuda_jit_in_the_kernels_declares_cache_true(path):
    assert jit_sites_without_cache(path.read_text()) == []


def test_the_cache_check_sees_every_kernel_module():
    # The check sees the kernels and device functions (25 when written; the number moves
    # as kernels come and go, hence a floor), in every module but the compiler's choice.
    assert {p.stem for p in KERNEL_SOURCES} >= {"launch", "histograms", "split_scan"}
    assert sum(count_jit_sites(p.read_text()) for p in KERNEL_SOURCES) >= 16


def test_the_cache_check_finds_uncached_declarations():
    source = (
        "from numba import cuda\n"
        "@cuda.jit\n"  # line 2: bare
        "def a(x): pass\n"
        "b = cuda.jit(device=True)(a)\n"  # line 4: no cache keyword
        "c = cuda.jit(device=True, cache=False)(a)\n"  # line 5: cache=False
        "jit = cuda.jit\n"  # line 6: passed around uncalled
        "@cuda.jit(cache=True)\n"
        "def d(x): pass\n"
        "e = cuda.jit(cache=True, device=True)(a)\n"
        "f = device_function()(a)\n"  # line 10: no cache keyword
        "g = device_function(cache=True)(a)\n"
    )
    assert jit_sites_without_cache(source) == [2, 4, 5, 6, 10]
    assert count_jit_sites(source) == 8


# -- cache=True, on the compiled objects -------------------------------------------------
# Imports the stage modules (as STAGE_MODULES names them) and lists their dispatchers.
_IMPORT_STAGES = """
import importlib, pkgutil
from gpu_tree.kernels import cuda as package
from gpu_tree.kernels.cuda import api as cuda_api
stages = [
    importlib.import_module(f"{package.__name__}.{info.name}")
    for info in pkgutil.iter_modules(package.__path__)
    if info.name not in ("api", "absolute_error")
]
"""
_LIST_DISPATCHERS = (
    _IMPORT_STAGES
    + """
import json
found, seen = {}, set()
for module in stages:
    for name, obj in vars(module).items():
        if hasattr(obj, "_cache") and hasattr(obj, "py_func") and id(obj) not in seen:
            seen.add(id(obj))
            cache = obj._cache
            found[f"{module.__name__.rpartition('.')[2]}.{name}"] = [
                type(obj).__name__, type(cache).__name__, str(getattr(cache, "_cache_path", ""))
            ]
print(json.dumps({"provider": cuda_api.PROVIDER, "dispatchers": found}))
"""
)


def test_every_kernel_dispatcher_is_built_with_a_disk_cache(tmp_path):
    """With the simulator off (numba builds its dispatchers without a GPU), every
    dispatcher of gpu_tree.kernels.cuda carries a real cache, not numba's NullCache."""
    result = _run(_LIST_DISPATCHERS, tmp_path, env={"NUMBA_CACHE_DIR": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    if report["provider"] != "numba.cuda":
        pytest.skip(f"kernels compiled by {report['provider']}; its dispatchers differ")
    dispatchers = report["dispatchers"]
    assert len(dispatchers) == expected_dispatchers()
    for name in (
        "histograms.histograms_shared",
        "histograms.histograms_shared_int32",
        "histograms.histograms_global",
        "binning.bin_columns",
        "prediction.predict_leaves",
    ):
        assert name in dispatchers
    uncached = {name: d for name, d in dispatchers.items() if d[1] == "NullCache"}
    assert not uncached, uncached


def test_kernels_cache_in_a_temporary_folder_on_a_read_only_install(tmp_path):
    """kernels/__init__.py points numba at a temporary folder where kernels/__pycache__
    cannot be written (issue 15, defect 4): the CUDA kernels (real dispatchers, simulator
    off) cache there too rather than failing at import with "cannot cache function".
    numba-cuda and Numba-CUDA-MLIR read numba.core.config when numba is installed."""
    import shutil

    from _package_copy import run_in_a_copy

    def unwritable_cache(root):
        if (root / "gpu_tree" / "kernels").exists():  # a checkout's link to kernels/
            shutil.rmtree(root / "gpu_tree" / "kernels")
        (root / "kernels" / "__pycache__").write_text("not a folder")
        (root / "home-is-a-file").write_text("")
        (root / "tmp").mkdir()

    env = {
        "HOME": str(tmp_path / "home-is-a-file"),
        "TMPDIR": str(tmp_path / "tmp"),
        "NUMBA_ENABLE_CUDASIM": "0",
    }
    code = "from numba.core import config\n" + _LIST_DISPATCHERS + "print(config.CACHE_DIR)\n"
    result = run_in_a_copy(tmp_path, code, env, prepare=unwritable_cache)
    assert result.returncode == 0, result.stderr[-3000:]
    *_, report, cache_dir = result.stdout.strip().splitlines()
    assert cache_dir.startswith(str(tmp_path / "tmp"))
    report = json.loads(report)
    if report["provider"] != "numba.cuda":
        pytest.skip(f"kernels compiled by {report['provider']}; its dispatchers differ")
    paths = {d[2] for d in report["dispatchers"].values()}
    assert len(report["dispatchers"]) == expected_dispatchers()
    assert all(path.startswith(cache_dir) for path in paths), paths


@cuda.jit(cache=True)
def _double(values):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        values[i] *= 2


def test_the_simulator_accepts_cache_true():
    """Under the simulator (this test session, on a machine without a GPU) a cached
    kernel runs as any other."""
    import numpy as np
    from numba import config

    if not config.ENABLE_CUDASIM:
        pytest.skip("checks the simulator")
    values = np.arange(10.0)
    _double[2, 4](values)
    np.testing.assert_array_equal(values, np.arange(10.0) * 2)


# -- the compiler module: Numba-CUDA-MLIR where installed, else numba.cuda -------------------
# A stand-in numba_cuda_mlir: its jit records how each function was declared.
_FAKE_MLIR = """
import json, sys, types

declared = []

def jit(func_or_sig=None, **options):
    def wrap(func):
        declared.append([func.__name__, options])
        return types.SimpleNamespace(py_func=func, options=options)
    return wrap(func_or_sig) if callable(func_or_sig) else wrap

package = types.ModuleType("numba_cuda_mlir")
cuda = types.ModuleType("numba_cuda_mlir.cuda")
cuda.jit = jit
package.cuda = cuda
sys.modules["numba_cuda_mlir"] = package
sys.modules["numba_cuda_mlir.cuda"] = cuda
"""


def test_numba_cuda_mlir_is_preferred_where_installed(tmp_path):
    code = (
        _FAKE_MLIR
        + "import warnings; warnings.simplefilter('error', RuntimeWarning)\n"
        + _IMPORT_STAGES
        + "from gpu_tree.backends.cuda import cuda_status\n"
        + "import numba.cuda\n"
        + "k = stages[0]\n"
        + "print(json.dumps([cuda_api.PROVIDER, k.cuda is cuda, k.cuda is numba.cuda, declared]))\n"
    )
    result = _run(code, tmp_path, simulator=False)
    assert result.returncode == 0, result.stderr[-3000:]
    provider, is_fake, is_numba, declared = json.loads(result.stdout.strip().splitlines()[-1])
    assert provider == "numba_cuda_mlir.cuda" and is_fake and not is_numba
    # Every kernel and device function went through its jit, and each asked for the cache.
    assert len(declared) == expected_declarations()
    assert all(options.get("cache") is True for _, options in declared), declared
    names = {name for name, _ in declared}
    assert {"histograms_shared", "partition_rows", "predict_leaves", "add_row"} <= names


def test_the_simulator_keeps_numba_cuda_even_with_numba_cuda_mlir_installed(tmp_path):
    """Numba-CUDA-MLIR has no simulator: CI's simulator runs stay on numba.cuda."""
    code = (
        _FAKE_MLIR
        + _IMPORT_STAGES
        + "from gpu_tree.kernels.cuda import histograms as k\n"
        + "import numba.cuda\n"
        + "print(json.dumps([cuda_api.PROVIDER, k.cuda is numba.cuda, declared,"
        + " type(k.histograms_shared).__name__]))\n"
    )
    result = _run(code, tmp_path, simulator=True)
    assert result.returncode == 0, result.stderr[-3000:]
    provider, is_numba, declared, kernel_type = json.loads(result.stdout.strip().splitlines()[-1])
    assert provider == "numba.cuda" and is_numba and declared == []
    assert kernel_type == "FakeCUDAKernel"


@pytest.mark.parametrize("breakage", ["no jit", "import fails"])
def test_a_broken_numba_cuda_mlir_falls_back_to_numba_cuda_with_a_warning(tmp_path, breakage):
    package = tmp_path / "fake" / "numba_cuda_mlir"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    if breakage == "no jit":
        (package / "cuda.py").write_text("grid = None\n")
    else:
        (package / "cuda.py").write_text("raise RuntimeError('libnvvm not found')\n")
    code = (
        "import json, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    from gpu_tree.kernels.cuda import api as cuda_api\n"
        "import numba.cuda\n"
        "print(json.dumps([cuda_api.PROVIDER, cuda_api.cuda is numba.cuda,"
        " [str(w.message) for w in caught if 'numba-cuda-mlir' in str(w.message)]]))\n"
    )
    result = _run(code, tmp_path, simulator=False, extra_path=tmp_path / "fake")
    assert result.returncode == 0, result.stderr[-3000:]
    provider, is_numba, warned = json.loads(result.stdout.strip().splitlines()[-1])
    assert provider == "numba.cuda" and is_numba
    assert len(warned) == 1
    assert ("no jit" in warned[0]) if breakage == "no jit" else ("libnvvm not found" in warned[0])


def test_without_numba_cuda_mlir_numba_cuda_is_used_silently(tmp_path):
    code = (
        "import json, sys, warnings\n"
        "sys.modules['numba_cuda_mlir'] = None  # not installed, whatever this machine has\n"
        "warnings.simplefilter('error', RuntimeWarning)\n"
        "from gpu_tree.kernels.cuda import api as cuda_api\n"
        "import numba.cuda\n"
        "print(json.dumps([cuda_api.PROVIDER, cuda_api.cuda is numba.cuda]))\n"
    )
    result = _run(code, tmp_path, simulator=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["numba.cuda", True]


def test_a_first_cuda_fit_under_warnings_as_errors_raises_nothing(tmp_path):
    """numba-cuda's import warns under NumPy 2.5 (its datetime helpers); a user's first
    CUDA fit, where numba.cuda is first imported, must not fail on that under
    ``-W error`` (kernels/cuda/api.py ignores it around that import alone)."""
    code = (
        "import numpy as np\n"
        "from gpu_tree import DecisionTreeClassifier\n"
        "X = np.random.default_rng(0).normal(size=(80, 3)); y = (X[:, 0] > 0).astype(int)\n"
        "print(DecisionTreeClassifier(device='cuda', max_depth=2).fit(X, y).device_)\n"
    )
    child_env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "cuda"


# -- device functions under the simulator ----------------------------------------------------
def _reads_no_cuda(x):
    return x + 1


def _reads_cuda(x):
    return cuda.threadIdx.x + x


def _defines_a_function_reading_cuda(x):
    def inner():
        return cuda.threadIdx.x

    return inner() + x


def test_the_simulator_keeps_device_functions_that_read_no_cuda_as_plain_python():
    """The simulator's device-function wrapper takes a lock every thread of a launch
    shares, twice a call; a helper that reads no ``cuda`` global needs none of what it
    does, so under the simulator it stays the plain function. A helper that reads ``cuda``
    (directly or in a function it defines) keeps the wrapper, which swaps in the fake
    module. With the simulator off, every helper is compiled."""
    from numba import config

    from gpu_tree.kernels import _median_errors
    from gpu_tree.kernels.cuda import absolute_error as absolute_error_kernels
    from gpu_tree.kernels.cuda.api import device_function

    compile_device = device_function(cache=True)
    if not config.ENABLE_CUDASIM:
        assert compile_device(_reads_no_cuda) is not _reads_no_cuda
        return
    assert compile_device(_reads_no_cuda) is _reads_no_cuda
    assert absolute_error_kernels._median_of is _median_errors.median_of
    for reads_cuda in (_reads_cuda, _defines_a_function_reading_cuda):
        wrapped = compile_device(reads_cuda)
        assert wrapped is not reads_cuda and wrapped.__wrapped__ is reads_cuda


def test_a_device_function_reading_cuda_runs_in_a_simulated_kernel():
    import numpy as np
    from numba import config

    from gpu_tree.kernels.cuda.api import device_function

    if not config.ENABLE_CUDASIM:
        pytest.skip("checks the simulator")
    thread_index = device_function(cache=True)(_reads_cuda)
    plus_one = device_function(cache=True)(_reads_no_cuda)

    @cuda.jit(cache=True)
    def both(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = plus_one(thread_index(0))

    out = np.zeros(8)
    both[2, 4](out)
    np.testing.assert_array_equal(out, np.tile(np.arange(4.0) + 1, 2))
