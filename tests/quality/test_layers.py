"""The package's architecture, checked from its source: layers with imports pointing
down, no import cycles, no module reaching into another's private names, every
subpackage shipped, no backend probed for its methods. docs/architecture.md draws the
same map."""

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
    "training",
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


# The modules that prepare an input, and so may ask what it is (a dense host array, a
# SciPy sparse matrix, a GPU array): the data layer, the training pipeline's input stage,
# the backends, and the one home of host/device copies. Everywhere else the kind travels
# with the prepared input.
INPUT_PREPARATION = (
    "gpu_tree.data",
    "gpu_tree.training.inputs",
    "gpu_tree.backends",
    "gpu_tree.utils.device_copies",
)
INPUT_KIND_CHECKS = ("is_sparse", "is_device_array", "input_kind")


def input_kind_checks(modules) -> dict[str, int]:
    """Module -> its calls that ask an input's kind, outside input preparation."""
    import ast

    found = {}
    for module, path in modules.items():
        if module.startswith(INPUT_PREPARATION):
            continue
        calls = [
            node
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in INPUT_KIND_CHECKS
        ]
        if calls:
            found[module] = len(calls)
    return found


def test_only_input_preparation_asks_what_an_input_is():
    assert input_kind_checks(source_modules()) == {}


def test_the_input_kind_count_finds_a_planted_check(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("def f(X):\n    return is_sparse(X) or validation.is_device_array(X)\n")
    assert input_kind_checks({"gpu_tree.growing.planted": planted}) == {
        "gpu_tree.growing.planted": 2
    }
    assert input_kind_checks({"gpu_tree.data.planted": planted}) == {}


def backend_probes(modules) -> dict[str, int]:
    """Module -> its getattr/hasattr calls on a backend (``backend`` or ``x.backend``):
    a backend declares its optional methods in its capabilities instead."""
    import ast

    found = {}
    for module, path in modules.items():
        calls = [
            node
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) in ("getattr", "hasattr")
            and node.args
            and "backend"
            in (getattr(node.args[0], "id", None), getattr(node.args[0], "attr", None))
        ]
        if calls:
            found[module] = len(calls)
    return found


def test_nothing_probes_a_backend_for_its_methods():
    assert backend_probes(source_modules()) == {}


def test_the_probe_count_finds_planted_probes(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(self, backend):\n"
        "    return getattr(backend, 'row_partition', None), hasattr(self.backend, 'x')\n"
    )
    assert backend_probes({"gpu_tree.growing.planted": planted}) == {"gpu_tree.growing.planted": 2}


# Each impurity is written once for the kernels (kernels/_split_scan.py, compiled for both
# devices and shared by the fused scan, the subtree finisher and the categorical search)
# and once as the vectorised oracle (growing/criteria.py).
IMPURITY_NAME = ("impurity", "plog2p", "gini", "entropy", "misclassification")
IMPURITY_HOMES = {"gpu_tree.kernels._split_scan", "gpu_tree.growing.criteria"}


def impurity_definitions(modules) -> dict[str, list[str]]:
    """Function name -> the modules defining it, for the functions named as impurities in
    the kernels and the search (the model's bookkeeping of stored impurities aside)."""
    import ast

    found: dict[str, list[str]] = {}
    for module, path in modules.items():
        if not module.startswith(("gpu_tree.kernels", "gpu_tree.growing", "gpu_tree.backends")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                word in node.name.lower() for word in IMPURITY_NAME
            ):
                found.setdefault(node.name, []).append(module)
    return found


def test_each_impurity_is_written_once_for_the_kernels_and_once_as_the_oracle():
    definitions = impurity_definitions(source_modules())
    assert {"weighted_impurity", "class_impurity", "plog2p"} <= set(definitions)
    elsewhere = {
        name: homes
        for name, homes in definitions.items()
        if not set(homes) <= IMPURITY_HOMES or len(homes) != len(set(homes))
    }
    # The grower's node bookkeeping names impurities it stores, measured by the above.
    bookkeeping = ["gpu_tree.growing.node_table"]
    allowed = {"measure_impurity": bookkeeping, "set_impurity": bookkeeping}
    allowed["pure_impurity"] = bookkeeping
    assert all(allowed.get(name) == homes for name, homes in elsewhere.items()), elsewhere
    kernel_homes = {m for homes in definitions.values() for m in homes if "kernels" in m}
    assert kernel_homes == {"gpu_tree.kernels._split_scan"}


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
        assert result.stdout.split() == [str(tmp_path / "kernels" / "cpu" / "__init__.py"), "1.0"]
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


def test_copies_and_the_array_module_each_have_one_home():
    # Host/device copies are counted in a CUDA fit's statistics: every one goes through
    # utils/device_copies.py; the CUDA backend's array module is cuda_array_module().
    import re

    copy = re.compile(r"def (to_host|device_to_host|host_to_device)\(")
    homes = {module for module, path in source_modules().items() if copy.search(path.read_text())}
    assert homes == {"gpu_tree.utils.device_copies"}
    indexed = [
        module for module, path in source_modules().items() if "cuda_status()[" in path.read_text()
    ]
    assert indexed == []
