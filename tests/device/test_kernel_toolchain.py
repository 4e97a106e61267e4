"""Every CUDA kernel signature gpu_tree launches builds, with the installed toolchain and no
GPU, into an sm_90 cubin that a CUDA 13.0 driver (580.x) loads (issue 42).

The signatures are those bench/kernel_resources.py records (tiny fits under the CUDA
simulator with every kernel wrapped to note its argument types), recorded afresh here, so
the two cannot drift; plus the launches that script leaves out (``EXTRA_LAUNCHES``), and a
check that no kernel of the kernel modules is missed. A child process with the simulator
off (tests/_kernel_toolchain_child.py) builds each one as numba-cuda 0.30 does at a launch
on a compute capability 9.0 GPU: ``_Kernel(...)`` (NVVM: PTX, and LTO-IR) and the code
library's ``get_cubin()``, the link that numba-cuda does in-process with nvJitLink
(``cuda.core.Linker``) where nvJitLink is installed (numba-cuda[cu13] requires it); only the
driver's ``cuModuleLoadData`` of that cubin is left out.

Why a cubin, not PTX, decides whether a 13.0 driver runs the kernels: the newest toolkit
components (NVVM 13.5 today) write PTX ISA 9.5, which a CUDA 13.0 driver and ptxas 13.0
refuse ("Unsupported .version 9.5"); but numba-cuda hands the driver no PTX where nvJitLink
is installed, only the cubin, and CUDA's minor-version compatibility lets a 13.0 driver
load 13.x cubins. Seen on an H200 with driver 580.159.04 (CUDA 13.0): the cubins this test
builds with NVVM and nvJitLink 13.5 all loaded (``cuModuleLoadData``), classification
trees fitted through five of them (bin_columns, histograms_global, partition_rows,
score_splits, predict_leaves) equalled the CPU's, and their PTX 9.5 failed to load
(CUDA_ERROR_UNSUPPORTED_PTX_VERSION).

So each cubin must be a CUDA ELF file for sm_90, in the ELF ABI of CUDA 13.0's own
cubins (a later one could need a newer driver), holding the kernel's code. Where no
nvJitLink links in-process, the driver would get the PTX: it must then be at most ISA 9.0.
Each PTX is also assembled by the ``ptxas`` on PATH where that ptxas reads its version.

Skipped (with the reason) without numba-cuda or libNVVM (``pip install ".[cuda13]"``),
except where GPU_TREE_REQUIRE_KERNEL_TOOLCHAIN is set (CI sets it): there it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parents[1] / "_kernel_toolchain_child.py"
KERNEL_RESOURCES = REPO / "bench" / "kernel_resources.py"

# Launches kernel_resources does not record: gpu_tree.backends.cuda.probe_failure runs
# kernels.cuda.launch.probe on an int64 vector once per process, before any fit uses the GPU.
EXTRA_LAUNCHES = {"probe": [[["array", "int64", 1, "C"]]]}
# Built first: the slowest by far (NVVM spends minutes on score_splits on 2 cores).
SLOWEST = ("score_splits", "candidate_errors")

EM_CUDA = 190
# The ELF OS ABI (0x41) and ABI version (8) of the cubins CUDA 13.0's ptxas (V13.0.88)
# writes for sm_90 and sm_90a, the format driver 580.159 (CUDA 13.0) was seen to load.
CUDA_13_0_ELF_ABI = (0x41, 8)
# The newest PTX ISA a CUDA 13.0 driver (and ptxas 13.0) accepts.
CUDA_13_0_PTX_ISA = (9, 0)


def toolchain_required() -> bool:
    return os.environ.get("GPU_TREE_REQUIRE_KERNEL_TOOLCHAIN", "") not in ("", "0")


def _skip(reason: str):
    if toolchain_required():
        pytest.fail(f"{reason}, and GPU_TREE_REQUIRE_KERNEL_TOOLCHAIN is set")
    pytest.skip(reason)


def _child(args, tmp, timeout, simulator=False):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1" if simulator else "0"}
    return subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _json_lines(stdout: str) -> list:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


# -- what the cubins and PTX say about themselves --------------------------------------------
def cubin_facts(data: bytes) -> dict:
    """ELF header fields and section names of a cubin (64-bit little-endian ELF)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"not a 64-bit little-endian ELF file: {data[:16]!r}")
    machine, flags = struct.unpack_from("<H", data, 18)[0], struct.unpack_from("<I", data, 48)[0]
    (section_table,) = struct.unpack_from("<Q", data, 40)
    entry_size, count, names_index = struct.unpack_from("<HHH", data, 58)

    def header(i):  # (name offset, file offset, size) of section i
        base = section_table + i * entry_size
        return struct.unpack_from("<I", data, base)[0], *struct.unpack_from("<QQ", data, base + 24)

    _, names_at, names_size = header(names_index)
    names = data[names_at : names_at + names_size]
    sections = []
    for i in range(count):
        at = header(i)[0]
        sections.append(names[at : names.index(b"\0", at)].decode())
    return {
        "os_abi": data[7],
        "abi_version": data[8],
        "machine": machine,
        # ELF ABI version 8 (CUDA 12.8 on) keeps the SM number in bits 8-15 of e_flags.
        "sm": (flags >> 8) & 0xFF,
        "sections": sections,
    }


def ptx_isa(ptx: str) -> tuple:
    match = re.search(r"^\.version (\d+)\.(\d+)", ptx, re.M)
    assert match, "no .version directive in the PTX"
    return int(match.group(1)), int(match.group(2))


def ptxas_release(path: str) -> tuple:
    text = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"release (\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else ()


# -- the toolchain, the kernels and their recorded signatures --------------------------------
@pytest.fixture(scope="module")
def toolchain(tmp_path_factory):
    """What the child finds: compiler module, numba-cuda, libNVVM, nvJitLink, kernels."""
    tmp = tmp_path_factory.mktemp("probe")
    result = _child([CHILD, "probe"], tmp, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    report = _json_lines(result.stdout)[-1]
    if "error" in report:
        _skip(
            f"numba-cuda is not installed or fails to import ({report['error']}); "
            "pip install '.[cuda13]'"
        )
    if report["provider"] != "numba.cuda":
        _skip(f"the kernels compile with {report['provider']}, not numba-cuda")
    if "nvvm_error" in report:
        _skip(f"libNVVM is not available ({report['nvvm_error']}); pip install '.[cuda13]'")
    if report.get("nvjitlink_version", [13])[0] != 13:
        _skip(f"nvJitLink {report['nvjitlink_version']}: the CUDA 13 toolchain is checked here")
    return report


@pytest.fixture(scope="module")
def signatures(toolchain, tmp_path_factory):
    """{kernel: [signature, ...]}: kernel_resources' fresh recording plus EXTRA_LAUNCHES."""
    tmp = tmp_path_factory.mktemp("record")
    result = _child([KERNEL_RESOURCES, "--record-only"], tmp, timeout=900, simulator=True)
    assert result.returncode == 0, result.stderr[-3000:]
    recorded = json.loads(result.stdout.strip().splitlines()[-1])
    return {**recorded, **EXTRA_LAUNCHES}


def _kernel_resources_kernels() -> tuple:
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import kernel_resources
    finally:
        sys.path.remove(str(REPO / "bench"))
    return kernel_resources.KERNELS


def test_every_kernel_of_the_kernel_modules_is_checked(toolchain):
    """A kernel added to a module of kernels/cuda/ must be added to
    kernel_resources.KERNELS (or EXTRA_LAUNCHES), or it would go unchecked here."""
    covered = set(_kernel_resources_kernels()) | set(EXTRA_LAUNCHES)
    assert set(toolchain["kernels"]) == covered


def _build(jobs, tmp, *flags, timeout):
    (tmp / "jobs.json").write_text(json.dumps(jobs))
    out = tmp / "built"
    out.mkdir()
    workers = str(min(os.cpu_count() or 1, 4))
    result = _child(
        [CHILD, "build", tmp / "jobs.json", out, "--workers", workers, *flags], tmp, timeout
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return _json_lines(result.stdout), out


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_every_kernel_signature_builds_into_an_sm_90_cubin_a_cuda_13_0_driver_loads(
    toolchain, signatures, tmp_path
):
    assert all(signatures.get(name) for name in toolchain["kernels"]), signatures.keys()
    order = sorted(signatures, key=lambda n: SLOWEST.index(n) if n in SLOWEST else len(SLOWEST))
    jobs = [[name, i, signature] for name in order for i, signature in enumerate(signatures[name])]
    start = time.perf_counter()
    rows, out = _build(jobs, tmp_path, timeout=1200)
    build_s = time.perf_counter() - start
    assert len(rows) == len(jobs)
    failed = [r for r in rows if "error" in r]
    assert not failed, "\n".join(
        [f"{r['kernel']}#{r['index']}: {r['error']}" for r in failed] + [failed[0]["traceback"]]
    )

    ptxas = shutil.which("ptxas")
    assembled, too_new, lines = 0, 0, []
    for row in rows:
        stem = out / f"{row['kernel']}_{row['index']}"
        label = f"{row['kernel']}#{row['index']}"
        ptx = stem.with_suffix(".ptx").read_text()
        isa = ptx_isa(ptx)
        assert re.search(r"^\.target sm_90a?\b", ptx, re.M), label
        if row["cubin"]:  # linked in-process: the driver gets this cubin, not the PTX
            assert row["lto"], f"{label}: built without LTO although nvJitLink is there"
            facts = cubin_facts(stem.with_suffix(".cubin").read_bytes())
            assert facts["machine"] == EM_CUDA, (label, facts["machine"])
            assert (facts["os_abi"], facts["abi_version"]) == CUDA_13_0_ELF_ABI, (
                f"{label}: cubin ELF ABI {facts['os_abi']:#x}/{facts['abi_version']}, not "
                f"the {CUDA_13_0_ELF_ABI} of CUDA 13.0's cubins: a 13.0 driver may not load it"
            )
            assert facts["sm"] == 90, (label, facts["sm"])
            # The kernel's own code, not an empty link (an LTO link whose kernel was
            # dropped still makes a valid ELF file).
            assert f".text.{row['entry']}" in facts["sections"], (label, facts["sections"])
        else:  # the driver would get the PTX and compile it itself
            assert isa <= CUDA_13_0_PTX_ISA, f"{label}: PTX ISA {isa}, and no nvJitLink"
        if ptxas:
            ptxas_out = str(stem.with_suffix(".ptxas.cubin"))
            result = subprocess.run(
                [ptxas, "--gpu-name", "sm_90a", str(stem.with_suffix(".ptx")), "-o", ptxas_out],
                capture_output=True,
                text=True,
            )
            if "Unsupported .version" in result.stderr:
                too_new += 1
            else:
                assert result.returncode == 0, f"{label}: ptxas: {result.stderr[-2000:]}"
                assembled += 1
        lines.append(
            f"{label}: PTX ISA {isa[0]}.{isa[1]}, {'cubin' if row['cubin'] else 'no cubin'} "
            f"(compile {row['compile_s']} s, link {row['link_s']} s)"
        )
    linker = f"nvJitLink {toolchain.get('nvjitlink_version')}" if toolchain["nvjitlink"] else None
    release = ".".join(map(str, ptxas_release(ptxas))) if ptxas else ""
    checked = f"ptxas {release}: {assembled} assembled" if ptxas else "no ptxas"
    print(
        f"\n{len(rows)} kernel signatures built in {build_s:.0f} s, linked in-process by "
        f"{linker}; {checked}, {too_new} refused as newer PTX than it reads\n" + "\n".join(lines)
    )


def test_the_kernels_do_not_build_without_the_numpy_row_stack_shim(toolchain, tmp_path):
    """numba-cuda 0.24 to 0.30.4 needs ``numpy.row_stack``, gone in NumPy 2.5:
    gpu_tree.kernels.cuda.api puts it back. Taken away again in the child, the build
    fails, as the test above then would."""
    rows, _ = _build(
        [["probe", 0, EXTRA_LAUNCHES["probe"][0]]], tmp_path, "--drop-row-stack-shim", timeout=600
    )
    (row,) = rows
    if not row["row_stack_restored"]:
        pytest.skip("this NumPy still has row_stack: gpu_tree's shim adds nothing")
    assert "row_stack" in row.get("error", ""), row


# -- the split scan: no product fused into an addition (kernels/_split_scan.py) ------------
_UNFUSED_SCAN = r"""
import json, math, sys, types
from types import SimpleNamespace

from numba import types as nbtypes
from numba.cuda import dispatcher

# Device functions compile for the current device, which needs a driver: sm_90's here.
if hasattr(dispatcher, "get_current_device"):
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=(9, 0))
from gpu_tree.kernels.cuda.api import cuda
import gpu_tree.kernels._split_scan as scan

# libdevice's log1p (Poisson's) is built of fused multiply-adds (rounded as libdevice
# means it): a stand-in of one unfused product leaves only the scan's own code, the
# entropy criteria's log2 (kernels/log2.py, unfused products only) included.
def stand_in(x):
    return cuda.libdevice.dmul_rn(x, 0.5)

stub = types.ModuleType("math_without_logs")
stub.log2 = stub.log1p = cuda.jit(device=True)(stand_in)
stub.inf, stub.isfinite = math.inf, math.isfinite
scan.math = stub
from gpu_tree.kernels.cuda import split_scan as cuda_split_scan

sys.path.insert(0, sys.argv[1])
import kernel_resources

signature = json.loads(sys.argv[2])
sig = nbtypes.void(*[kernel_resources._numba_type(d) for d in signature])
ptx, _ = cuda.compile_ptx(cuda_split_scan.score_splits.py_func, sig, cc=(9, 0))
print(json.dumps({"fma": ptx.count("fma.rn.f64"), "unfused": ptx.count("mul.rn.f64")}))
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_split_scan_fuses_no_product_into_an_addition(toolchain, signatures, tmp_path):
    """NVVM fuses ``a * b + c`` into one fused multiply-add where the CPU rounds the
    product first; the scan's every product goes through ``product`` (libdevice's dmul_rn
    on the GPU), so score_splits' PTX holds no fused multiply-add but libdevice's own, in
    log1p, which a stand-in replaces here. (Before ``product``: 469 of them; kernels/log2.py
    with two exact products by 0.5 left to the compiler: 49.)"""
    signature = signatures["score_splits"][0]
    result = _child(
        ["-c", _UNFUSED_SCAN, REPO / "bench", json.dumps(signature)], tmp_path, timeout=850
    )
    assert result.returncode == 0, result.stderr[-3000:]
    counts = _json_lines(result.stdout)[-1]
    assert counts["fma"] == 0 and counts["unfused"] > 100, counts
