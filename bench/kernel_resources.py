"""Resource report of gpu_tree's CUDA kernels for one GPU architecture (default sm_90, H200).

No GPU is needed. Two steps:

1. The kernels' real argument types are recorded, not written by hand: a child process
   under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) fits and predicts a few tiny
   models through the public estimators (classification with and without weights,
   regression, categorical subset and multiway splits, sparse X, float32 and float64 input), with
   every kernel of the modules of ``gpu_tree.kernels.cuda`` wrapped to note
   the numba type of each
   argument it is launched with. The backend passes the same array kinds on a GPU (CuPy
   arrays of the same dtypes and layouts), so these are the signatures it compiles there.
2. Each distinct (kernel, signature) is compiled to PTX by numba
   (``numba.cuda.compile_ptx(..., cc=(9, 0))``, which needs libNVVM but no device), then
   assembled by ``ptxas -v --gpu-name sm_90``: registers per thread, static shared
   memory, stack frame and spills. The theoretical occupancy at the block size the
   backend launches with (``THREADS_PER_BLOCK``; ``SCORING_THREADS`` for the split
   search) follows from the SM's limits (Hopper: 65,536 registers, 2,048 threads, 64
   warps, 32 blocks, 228 KiB shared memory per SM, 1 KiB reserved per block, registers
   allocated per warp in units of 256).

    python bench/kernel_resources.py --out bench/out/kernels   # kernels.md, kernels.json,
                                                               # signatures.json, ptx/*.ptx
    python bench/kernel_resources.py --arch sm_90 --ptxas /usr/local/bin/ptxas

libNVVM is looked for through numba's usual means; when ``CUDA_HOME`` is unset, the
toolkit root of the ``nvcc``/``ptxas`` on PATH (or /usr/local/cuda) is used. If PTX cannot
be made (no libNVVM, no ptxas), the script says why, writes what it has, and exits 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = (
    "bin_columns",
    "histograms_global",
    "histograms_shared",
    "histograms_shared_int32",
    "partition_rows",
    "partition_rows_multiway",
    "score_splits",
    "largest_squared_deviations",
    "squared_deviation_sums",
    "predict_leaves",
    "predict_forest",
    "sparse_histograms",
    "split_feature_codes",
    "node_median_errors",
    "candidate_errors",
    "choose_splits",
)
KERNEL_PACKAGE = "gpu_tree.kernels.cuda"


def kernel_module(name):
    """The module of gpu_tree.kernels.cuda (a module per stage) that defines kernel ``name``."""
    import importlib
    import pkgutil

    package = importlib.import_module(KERNEL_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{KERNEL_PACKAGE}.{info.name}")
        if name in vars(module):
            return module
    raise LookupError(f"no module of {KERNEL_PACKAGE} defines a kernel {name!r}")


# Per-SM limits by compute capability (CUDA occupancy calculator's table).
SM_LIMITS = {
    (9, 0): dict(
        regs=65536,
        threads=2048,
        warps=64,
        blocks=32,
        shared=228 * 1024,
        shared_per_block=227 * 1024,
        reserved_shared=1024,
        reg_unit=256,
        shared_unit=128,
    ),
    (8, 0): dict(
        regs=65536,
        threads=2048,
        warps=64,
        blocks=32,
        shared=164 * 1024,
        shared_per_block=163 * 1024,
        reserved_shared=1024,
        reg_unit=256,
        shared_unit=128,
    ),
}


def log(message):
    print(f"kernel_resources: {message}", file=sys.stderr, flush=True)


# -- step 1: record the argument types (runs under the simulator) ------------------------
def _describe(value):
    """A JSON-able description of a kernel argument's numba type."""
    import numba
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return ["scalar", "bool"]
    if isinstance(value, (int, float, np.number)):
        return ["scalar", str(numba.typeof(value))]
    t = numba.typeof(value)
    return ["array", str(t.dtype), int(t.ndim), t.layout]


def record_signatures():
    """Fit tiny models under the simulator; return {kernel: [signature, ...]}."""
    import numpy as np

    import gpu_tree
    from gpu_tree.backends.cuda import apply_on_device, predict_forest_on_device
    from gpu_tree.model.tree import forest_walk_arrays

    seen = {name: [] for name in KERNELS}

    class Recorder:
        def __init__(self, name, kernel):
            self.name, self.kernel = name, kernel

        def __getitem__(self, config):
            launch = self.kernel[config]

            def call(*args):
                signature = [_describe(a) for a in args]
                if signature not in seen[self.name]:
                    seen[self.name].append(signature)
                return launch(*args)

            return call

    for name in KERNELS:
        module = kernel_module(name)
        setattr(module, name, Recorder(name, getattr(module, name)))
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 3))
    X[rng.random(n) < 0.05, 1] = np.nan  # missing values: the missing bin
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int) + (X[:, 2] > 1)
    common = dict(max_depth=3, max_bins=16, device="cuda")
    for dtype in (np.float64, np.float32):
        model = gpu_tree.DecisionTreeClassifier(**common).fit(X.astype(dtype), y)
        # What predict runs for a GPU array (the simulator's arrays are numpy's).
        apply_on_device(model.tree_, X.astype(dtype), np)
    # 20 classes x 256 bins (5,120 entries a node and feature): from 3 built nodes on, a
    # level's int32 histograms exceed a block's shared memory (12,288 int32 entries) and
    # take the global-memory kernel.
    y20 = np.digitize(X[:, 0] + 0.3 * X[:, 2], np.linspace(-1.5, 1.5, 19))
    gpu_tree.DecisionTreeClassifier(max_depth=4, max_bins=256, device="cuda").fit(X, y20)
    gpu_tree.DecisionTreeClassifier(**common).fit(X, y, sample_weight=rng.random(n) + 0.5)
    gpu_tree.DecisionTreeRegressor(**common).fit(X, X[:, 0] * 2 + rng.normal(size=n))
    Xc = X.copy()
    Xc[:, 2] = rng.integers(0, 5, size=n)
    yc = (Xc[:, 2] % 2 == 0).astype(int) ^ (Xc[:, 0] > 0)
    for split, criterion in (("binary", "gini"), ("multiway", "gain_ratio")):
        model = gpu_tree.DecisionTreeClassifier(
            **common, categorical_features=[2], categorical_split=split, criterion=criterion
        ).fit(Xc, yc)
        apply_on_device(model.tree_, Xc, np)
    # A sparse X: histograms from the stored values, routing by the stored columns.
    from scipy import sparse

    S = sparse.csr_matrix(np.where(rng.random(X.shape) < 0.3, X, 0.0))
    gpu_tree.DecisionTreeClassifier(**common).fit(S, y)
    gpu_tree.DecisionTreeRegressor(**common).fit(S, X[:, 0], sample_weight=rng.random(n) + 0.5)
    # Absolute error (medians searched on the rows), dense and sparse, weighted or not.
    for data, weight in ((X, None), (S, rng.random(n) + 0.5)):
        gpu_tree.DecisionTreeRegressor(criterion="absolute_error", **common).fit(
            data, X[:, 0] + rng.normal(size=n), sample_weight=weight
        )
    # A forest's prediction for a GPU array: every tree in one launch.
    for dtype in (np.float64, np.float32):
        forest = gpu_tree.RandomForestClassifier(3, max_depth=3, max_bins=16).fit(X, y)
        packed = forest_walk_arrays([e.tree_ for e in forest.estimators_])
        predict_forest_on_device(packed, X.astype(dtype), np)
    return seen


# -- step 2: compile and assemble ---------------------------------------------------------
def _numba_type(description):
    from numba import types

    if description[0] == "scalar":
        return types.boolean if description[1] == "bool" else getattr(types, description[1])
    _, dtype, ndim, layout = description
    return types.Array(getattr(types, dtype), ndim, layout)


def signature_text(signature) -> str:
    parts = []
    for d in signature:
        if d[0] == "scalar":
            parts.append(d[1])
        else:
            parts.append(
                f"{d[1]}[{', '.join([':'] * (d[2] - 1) + ['::1' if d[3] == 'C' else ':'])}]"
            )
    return "(" + ", ".join(parts) + ")"


def find_toolkit_root():
    """A CUDA toolkit root holding libNVVM: CUDA_HOME, nvcc's/ptxas's, /usr/local/cuda*."""
    candidates = []
    if os.environ.get("CUDA_HOME"):
        candidates.append(Path(os.environ["CUDA_HOME"]))
    for tool in ("nvcc", "ptxas"):
        found = shutil.which(tool)
        if found:
            path = Path(found).resolve()
            candidates.append(path.parent.parent)
            # A wrapper script (exec /usr/local/cuda-13.0/bin/nvcc "$@") points elsewhere.
            try:
                text = path.read_text(errors="ignore")[:1000]
            except OSError:
                text = ""
            match = re.search(r"(/\S+)/bin/" + tool, text)
            if match:
                candidates.append(Path(match.group(1)))
    candidates += sorted(Path("/usr/local").glob("cuda*"), reverse=True)
    for root in candidates:
        if any(root.glob("nvvm/lib64/libnvvm.so*")) or any(root.glob("lib*/libnvvm.so*")):
            return root
    return None


def _ptxas_release(path) -> tuple:
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return ()
    match = re.search(r"release (\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else ()


def ptxas_candidates(root) -> list:
    """[(release, path)], newest first: the nvidia-cuda-nvcc wheel's beside numba-cuda's
    libNVVM (its PTX may be newer than an older toolkit's ptxas accepts), PATH's, the
    toolkit's."""
    paths = []
    for entry in sys.path:
        for pattern in ("nvidia/cu*/bin/ptxas", "nvidia/cuda_nvcc/bin/ptxas"):
            paths += sorted(Path(entry).glob(pattern)) if entry else []
    if shutil.which("ptxas"):
        paths.append(Path(shutil.which("ptxas")))
    if root is not None:
        paths.append(root / "bin" / "ptxas")
    found = {}
    for path in paths:
        if path.exists() and str(path) not in found:
            found[str(path)] = _ptxas_release(str(path))
    return sorted(((rel, p) for p, rel in found.items() if rel), key=lambda c: c[0], reverse=True)


def numba_cuda_description() -> str:
    """Which CUDA target compiles the kernels (Numba-CUDA-MLIR, the numba-cuda package or
    numba's own; see kernels/cuda/api.py)."""
    from importlib import metadata

    import numba
    import numba.cuda

    from gpu_tree.kernels.cuda.api import PROVIDER

    if PROVIDER != "numba.cuda":
        return f"numba-cuda-mlir {metadata.version('numba-cuda-mlir')} ({PROVIDER})"
    try:
        return f"numba-cuda {metadata.version('numba-cuda')} (numba {numba.__version__})"
    except metadata.PackageNotFoundError:
        return f"numba {numba.__version__}'s built-in CUDA target"


def occupancy(registers: int, shared_bytes: int, threads: int, cc=(9, 0)) -> dict:
    """Theoretical blocks per SM and occupancy (active warps / max warps) and the limiter."""
    lim = SM_LIMITS[cc]
    warps = math.ceil(threads / 32)
    limits = {"threads": lim["threads"] // (warps * 32), "blocks": lim["blocks"]}
    if registers > 0:
        per_warp = math.ceil(registers * 32 / lim["reg_unit"]) * lim["reg_unit"]
        limits["registers"] = (lim["regs"] // per_warp) // warps
    per_block = math.ceil((shared_bytes + lim["reserved_shared"]) / lim["shared_unit"])
    limits["shared memory"] = lim["shared"] // (per_block * lim["shared_unit"])
    blocks = min(limits.values())
    limiter = "/".join(k for k, v in limits.items() if v == blocks)
    return {
        "blocks_per_sm": blocks,
        "occupancy": blocks * warps / lim["warps"],
        "limiter": limiter,
        "limits": limits,
    }


PTXAS_PATTERNS = {
    "registers": r"Used (\d+) registers",
    "shared_bytes": r"(\d+) bytes smem",
    "stack_bytes": r"(\d+) bytes stack frame",
    "spill_store_bytes": r"(\d+) bytes spill stores",
    "spill_load_bytes": r"(\d+) bytes spill loads",
    "cmem_bytes": r"(\d+) bytes cmem\[0\]",
}


def ptx_notes(ptx: str) -> str:
    """Static counts of PTX instructions worth a look: 64-bit integer division/remainder
    (a software routine of tens of instructions) and atomics by space and type."""
    counts = {}
    for pattern, label in (
        (r"\b(?:div|rem)\.[su]64\b", "div/rem.64"),
        (r"\b(?:atom|red)\.shared\.\w+\.f64\b", "shared f64 atomics"),
        (r"\b(?:atom|red)\.shared\.add\.[us](?:32|64)\b", "shared int atomics"),
        (r"\b(?:atom|red)(?:\.global)?\.(?:add\.)?f64\b", "global f64 atomics"),
        (r"\batom\.global\.cas\.b64\b", "CAS loops"),
        (r"\b(?:atom|red)\.global\.add\.[us](?:32|64)\b", "global int atomics"),
    ):
        n = len(re.findall(pattern, ptx))
        if n:
            counts[label] = n
    return ", ".join(f"{k} ×{v}" for k, v in counts.items())


def parse_ptxas(text: str) -> dict:
    out = {}
    for key, pattern in PTXAS_PATTERNS.items():
        match = re.search(pattern, text)
        out[key] = int(match.group(1)) if match else 0
    return out


def _compile_without_a_device(cc):
    """Let numba compile device functions for ``cc`` with no GPU present.

    ``compile_ptx`` takes the target's compute capability, but the device functions a
    kernel calls (``cuda.jit(device=True)``) are compiled, in numba's built-in CUDA target
    and older numba-cuda releases, for ``get_current_device().compute_capability``, which
    needs a driver. Within this script only, that lookup answers ``cc``.
    """
    from types import SimpleNamespace

    try:
        from numba.cuda import dispatcher
    except ImportError:  # pragma: no cover - a numba without the CUDA target
        return
    if hasattr(dispatcher, "get_current_device"):
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=cc)


def compile_all(signatures, arch: str, ptxas: str, out: Path, threads: dict) -> list[dict]:
    from gpu_tree.kernels.cuda.api import cuda  # the compiler the kernels are built with

    cc = (int(arch[3:-1]), int(arch[-1]))
    _compile_without_a_device(cc)
    rows = []
    for name in KERNELS:
        for index, signature in enumerate(signatures.get(name, [])):
            block = threads.get(name, threads[None])
            row = {"kernel": name, "signature": signature_text(signature), "threads": block}
            rows.append(row)
            stem = f"{name}_{index}"
            try:
                from numba import types

                sig = types.void(*[_numba_type(d) for d in signature])
                kernel = getattr(kernel_module(name), name)
                ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cc)
            except Exception as exc:  # noqa: BLE001 - report, go on with the others
                row["error"] = f"compile_ptx: {type(exc).__name__}: {exc}".splitlines()[0]
                log(f"{stem}: {row['error']}")
                continue
            (out / "ptx").mkdir(exist_ok=True)
            ptx_path = out / "ptx" / f"{stem}.ptx"
            ptx_path.write_text(ptx)
            with tempfile.TemporaryDirectory() as tmp:
                result = subprocess.run(
                    [ptxas, "-v", "--gpu-name", arch, str(ptx_path), "-o", f"{tmp}/k.cubin"],
                    capture_output=True,
                    text=True,
                )
            report = result.stdout + result.stderr
            (out / "ptx" / f"{stem}.ptxas.txt").write_text(report)
            if result.returncode != 0:
                row["error"] = f"ptxas exit {result.returncode}: {report.strip()[:300]}"
                log(f"{stem}: {row['error']}")
                continue
            row.update(parse_ptxas(report))
            row["ptx_notes"] = ptx_notes(ptx)
            row.update(occupancy(row["registers"], row["shared_bytes"], block, cc))
            log(
                f"{stem}: {row['registers']} registers, {row['shared_bytes']} B shared, "
                f"occupancy {row['occupancy']:.0%} ({row['limiter']})"
            )
    return rows


def markdown(rows, arch: str, header: str) -> str:
    lines = [
        header,
        "",
        "| kernel | signature # | threads/block | registers | static shared B | stack B | "
        "spill st/ld B | blocks/SM | occupancy | limited by | PTX (static counts) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    counters = {}
    for row in rows:
        k = counters[row["kernel"]] = counters.get(row["kernel"], -1) + 1
        if "error" in row:
            cells = [
                row["kernel"],
                k,
                row["threads"],
                "error: " + row["error"][:80].replace("|", "/"),
            ]
            lines.append("| " + " | ".join(map(str, cells + [""] * 8)) + " |")
            continue
        lines.append(
            f"| {row['kernel']} | {k} | {row['threads']} | {row['registers']} | "
            f"{row['shared_bytes']:,} | {row['stack_bytes']} | {row['spill_store_bytes']}/"
            f"{row['spill_load_bytes']} | {row['blocks_per_sm']} | {row['occupancy']:.0%} | "
            f"{row['limiter']} | {row.get('ptx_notes', '')} |"
        )
    lines += ["", "Signatures (argument types, in order):", ""]
    counters = {}
    for row in rows:
        k = counters[row["kernel"]] = counters.get(row["kernel"], -1) + 1
        lines.append(f"- `{row['kernel']}` #{k}: `{row['signature']}`")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/out/kernels", help="folder for the reports")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--ptxas", default=None, help="ptxas to run (default: PATH, toolkit)")
    parser.add_argument("--record-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.record_only:  # the child process, under the simulator
        print(json.dumps(record_signatures()))
        return 0

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = find_toolkit_root()
    env = dict(os.environ)
    if root is not None and "CUDA_HOME" not in env:
        env["CUDA_HOME"] = str(root)
        os.environ["CUDA_HOME"] = str(root)
    log("recording the kernels' argument types under the CUDA simulator")
    child = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--record-only"],
        capture_output=True,
        text=True,
        env={**env, "NUMBA_ENABLE_CUDASIM": "1"},
    )
    if child.returncode != 0:
        log("recording failed:\n" + child.stderr[-3000:])
        return 2
    signatures = json.loads(child.stdout.strip().splitlines()[-1])
    (out / "signatures.json").write_text(json.dumps(signatures, indent=1))
    missing = [name for name in KERNELS if not signatures.get(name)]
    if missing:
        log(f"no launch recorded for {missing}")

    candidates = ptxas_candidates(root)
    ptxas = args.ptxas or (candidates[0][1] if candidates else None)
    problems = []
    if root is None:
        problems.append(
            "no CUDA toolkit with libNVVM found (set CUDA_HOME to one; numba-cuda "
            "with the cuda-bindings/nvvm wheels also provides it)"
        )
    if ptxas is None:
        problems.append("no ptxas found (PATH, --ptxas, or the toolkit's bin/)")
    if problems:
        text = "Kernel resource report: not produced.\n\n" + "\n".join(f"- {p}" for p in problems)
        (out / "kernels.md").write_text(text + "\n")
        log("; ".join(problems))
        return 2

    from gpu_tree.kernels.cuda import launch as cuda_launch
    from gpu_tree.kernels.cuda import split_scan as cuda_split_scan

    release = _ptxas_release(ptxas)
    version = f"ptxas {'.'.join(map(str, release)) or '?'} ({ptxas})"
    compiler = numba_cuda_description()
    if "built-in" in compiler:
        log(
            "numba's built-in CUDA target is in use; it fails on some kernels (e.g. min() of "
            "two integers); pip install 'numba-cuda[cu13]' nvidia-cuda-nvcc for a full report"
        )
    # The block size each kernel is launched with: THREADS_PER_BLOCK but for the split
    # search's, which takes a block per node and a thread per feature.
    threads = {None: cuda_launch.THREADS_PER_BLOCK, "score_splits": cuda_split_scan.SCORING_THREADS}
    log(f"compiling with {compiler}, CUDA_HOME={os.environ.get('CUDA_HOME')}, {version}")
    rows = compile_all(signatures, args.arch, ptxas, out, threads)
    header = (
        f"Kernels of gpu_tree.kernels.cuda for {args.arch}: PTX from {compiler} "
        f"(`cuda.compile_ptx`, default options), assembled by `ptxas -v --gpu-name "
        f"{args.arch}` ({version}); occupancy at the launch's threads per block from the SM's "
        "limits (theoretical)."
    )
    (out / "kernels.md").write_text(markdown(rows, args.arch, header))
    (out / "kernels.json").write_text(
        json.dumps(
            {"arch": args.arch, "ptxas": version, "compiler": compiler, "kernels": rows}, indent=1
        )
    )
    print(markdown(rows, args.arch, header), end="")
    failed = [row for row in rows if "error" in row]
    if failed:
        log(f"{len(failed)} of {len(rows)} kernels could not be compiled or assembled")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
