#!/usr/bin/env bash
# The kernel source lives in the top-level kernels/ folder and installs as gpu_tree.kernels:
# check that a built wheel, installed into a fresh environment, and an editable install
# both import it (the CUDA kernels under the simulator: no GPU here), that the wheel holds
# every subpackage, and that its gputree command runs.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python -m pip wheel --quiet --no-deps --wheel-dir "$work/wheel" "$repo"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$work"/wheel/*.whl

check='
import importlib, pkgutil, sys, gpu_tree, gpu_tree.kernels.cpu.histograms as cpu, gpu_tree.kernels.cuda.histograms as cuda
print(cpu.__file__, cuda.__file__)
expected = sys.argv[1]
assert cpu.__file__.startswith(expected) and cuda.__file__.startswith(expected), expected
# Every module of every subpackage imports (a package left out of the wheel would fail).
names = [m.name for m in pkgutil.walk_packages(gpu_tree.__path__, "gpu_tree.")]
for name in names:
    importlib.import_module(name)
print(len(names), "modules import")
'
cd "$work"
echo "wheel install:"
NUMBA_ENABLE_CUDASIM=1 "$work/venv/bin/python" -c "$check" "$work/venv/lib"
"$work/venv/bin/gputree" --version
"$work/venv/bin/python" -m pip install --quiet --no-deps -e "$repo"
echo "editable install:"
NUMBA_ENABLE_CUDASIM=1 "$work/venv/bin/python" -c "$check" "$repo/kernels/"
