"""The package's architecture, checked from its source: layers with imports pointing
down, no import cycles, no module reaching into another's private names, every
subpackage shipped. The README's "Layout" section draws the same map."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from _package_copy import run_in_a_copy

REPO = Path(__file__).resolve().parents[2]

# Top to bottom: a module may import from its own layer and from the layers below it.
LAYERS = (
    "api",
    "app",
    "dask",
    "ensemble",
    "estimators",
    "growing",
    "backends",
    "model",
    "data",
    "kernels",
    "utils",
)
# Modules directly in gpu_tree/ other than the package itself: foundations that import
# nothing else from gpu_tree (the version, the kernel locator, synthetic datasets, test
# helpers) sit with utils.
TOP_LEVEL_FOUNDATIONS = {"_version", "_kernel_source", "datasets", "testing"}


def source_modules() -> dict[str, Path]:
    """Dotted module name -> file, for gpu_tree/ and kernels/ (as gpu_tree.kernels)."""
    modules = {}
    for root, package in ((REPO / "gpu_tree", "gpu_tree"), (REPO / "kernels", "gpu_tree.kernels")):
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "api"
    if parts[1] in TOP_LEVEL_FOUNDATIONS:
        return "utils"
    if parts[1] not in LAYERS:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS or move it")
    return parts[1]


def _is_package(module: str, modules) -> bool:
    return modules[module].name == "__init__.py"


def imports_of(module: str, source: str, modules) -> list[tuple[str, str | None, int]]:
    """(imported gpu_tree module, imported name or None, line) for every import in
    ``source``, lazy ones inside functions included."""
    found = []
    package = module if _is_package(module, modules) else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [
                (a.name, None, node.lineno)
                for a in node.names
                if a.name.split(".")[0] == "gpu_tree"
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "gpu_tree":
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    found.append((submodule, None, node.lineno))
                else:
                    found.append((target, alias.name, node.lineno))
    return found


def violations(modules: dict[str, Path], read=lambda path: path.read_text()) -> list[str]:
    problems = []
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        layer = LAYERS.index(layer_of(module))
        for target, name, line in imports_of(module, read(path), modules):
            where = f"{path.relative_to(REPO)}:{line}"
            if target not in modules:
                problems.append(f"{where}: imports {target}, which does not exist")
                continue
            graph[module].add(target)
            if LAYERS.index(layer_of(target)) < layer:
                problems.append(
                    f"{where}: {module} ({layer_of(module)}) imports {target} "
                    f"({layer_of(target)}), a layer above it"
                )
            if name is not None and name.startswith("_") and not name.startswith("__"):
                problems.append(f"{where}: imports the private name {name} from {target}")
            # A private module is its package's: only modules inside that package use it.
            owner, _, leaf = target.rpartition(".")
            if leaf.startswith("_") and not (module + ".").startswith(owner + "."):
                problems.append(
                    f"{where}: imports the private module {target} from outside {owner}"
                )
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in _cycles(graph)]
    return problems


def _cycles(graph):
    """One cycle per strongly connected component of more than one module (or a self-loop)."""
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                cycles.append(sorted(component) + [sorted(component)[0]])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_imports_point_down_without_cycles_or_private_names():
    problems = violations(source_modules())
    assert not problems, "\n".join(problems)


def test_the_check_finds_planted_violations():
    # The checker can fail: an upward import, a private name, a cycle and a missing module
    # planted into copies of real modules are each reported.
    modules = source_modules()
    planted = {
        "gpu_tree.data.stats": "from gpu_tree.growing.grower import Grower\n",
        "gpu_tree.data.binning": "from gpu_tree.data.validation import _hidden\n",
        "gpu_tree.utils.compat": "import gpu_tree.utils.progress\n",
        "gpu_tree.utils.progress": "from gpu_tree.utils import compat\n",
        "gpu_tree.model.tree": "import gpu_tree.no_such\nfrom gpu_tree.kernels import _tree_walk\n",
    }
    read = lambda path: next((src for m, src in planted.items() if modules[m] == path), "")  # noqa: E731
    report = "\n".join(violations(modules, read))
    assert (
        "gpu_tree.data.stats (data) imports gpu_tree.growing.grower (growing), a layer above"
        in report
    )
    assert "imports the private name _hidden from gpu_tree.data.validation" in report
    assert (
        "import cycle: gpu_tree.utils.compat -> gpu_tree.utils.progress -> gpu_tree.utils.compat"
        in report
    )
    assert "imports gpu_tree.no_such, which does not exist" in report
    assert (
        "imports the private module gpu_tree.kernels._tree_walk from outside gpu_tree.kernels"
        in report
    )


def test_kernels_import_nothing_from_the_library():
    # The kernel source compiles for both devices on its own: nothing above it leaks in.
    modules = source_modules()
    for module in (m for m in modules if m.startswith("gpu_tree.kernels")):
        targets = {t for t, _, _ in imports_of(module, modules[module].read_text(), modules)}
        assert all(t.startswith("gpu_tree.kernels") for t in targets), (module, targets)


def test_the_code_leaves_its_history_to_git_and_the_results_file():
    # Comments say why; which issue asked and when belongs in git and bench/RESULTS.md.
    import re

    history = re.compile(r"\bissues? \d+", re.IGNORECASE)
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in source_modules().values()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if history.search(line)
    ]
    assert found == [], "\n".join(found)


def test_every_subpackage_is_shipped():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    modules = source_modules()
    packages = {m for m in modules if _is_package(m, modules)}
    assert set(config["packages"]) == packages
    assert config["package-dir"] == {"gpu_tree.kernels": "kernels"}


_FIT_AND_SCORE = (
    "X = np.arange(20.0)[:, None]; y = (X[:, 0] > 9).astype(int)\n"
    "print(gpu_tree.DecisionTreeClassifier(device='cpu').fit(X, y).score(X, y))\n"
)


@pytest.mark.parametrize("with_kernels", [True, False])
def test_a_checkout_that_is_not_installed(tmp_path, with_kernels):
    # Without an install, nothing maps kernels/ to gpu_tree.kernels: the package finds
    # the folder beside itself, or says what is wrong and how to fix it.
    code = "import numpy as np, gpu_tree, gpu_tree.kernels.cpu as k\nprint(k.__file__)\n"
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    result = run_in_a_copy(tmp_path, code + _FIT_AND_SCORE, env, with_kernels)
    if with_kernels:
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == [str(tmp_path / "kernels" / "cpu.py"), "1.0"]
    else:
        assert result.returncode != 0
        assert "gpu_tree cannot find its kernels" in result.stderr
        assert "pip install" in result.stderr
        assert "Traceback" in result.stderr and result.stderr.count("File ") < 12


def test_a_read_only_install_still_imports_and_caches_elsewhere(tmp_path):
    """Issue 15, defect 4: where kernels/__pycache__ cannot be made and the user's cache
    folder cannot either (HOME=/ on a read-only install), import raised "cannot cache
    function 'has_nan'" for every command. Simulated as root can: __pycache__ is a file."""

    def unwritable_cache(root):
        (root / "kernels" / "__pycache__").write_text("not a folder")
        (root / "home-is-a-file").write_text("")
        (root / "tmp").mkdir()

    code = "import numpy as np, gpu_tree\nfrom numba.core import config\n" + _FIT_AND_SCORE
    env = {"HOME": str(tmp_path / "home-is-a-file"), "TMPDIR": str(tmp_path / "tmp")}
    result = run_in_a_copy(
        tmp_path, code + "print(config.CACHE_DIR)\n", env, prepare=unwritable_cache
    )
    assert result.returncode == 0, result.stderr[-2000:]
    score, cache_dir = result.stdout.split()
    assert score == "1.0"
    assert cache_dir.startswith(str(tmp_path / "tmp"))
    assert any(Path(cache_dir).rglob("*.nbi"))  # the kernels were cached there
