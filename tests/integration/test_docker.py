"""The Docker image (issue 18), checked without Docker (CI has no engine).

- docker/constraints.txt pins every package the image installs; here, that each package
  pyproject.toml names for the image is pinned at a version its lower bound allows (the
  build itself fails where pip installed a package the file does not pin).
- ``docker run -u UID:GID`` runs gputree as a user the image does not know, with HOME
  ``/``, on a package it cannot write. Simulated with uid and gid 65534 on a read-only
  copy of the package laid out as installed (``kernels/`` as ``gpu_tree/kernels/``), the
  install page's own Docker command included; and the image's kernel cache, made by root at
  build time, serves that user.

Switching users needs root (CI runs as root), and an interpreter that the other user may
run with this environment's packages: where the test's own is out of its reach (under
``/root``), a system Python of the same version is used, which loads the same compiled
modules.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from _package_copy import site_packages as _site_packages
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from gpu_tree.model import saved

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
# The Docker commands are on the install page; the days.csv they train on, on the command
# line's page.
INSTALL_PAGE = REPO / "docs" / "install.md"
CLI_PAGE = REPO / "docs" / "guide" / "export_cli.md"

# The image's Python: Ubuntu 24.04's python3 (the Dockerfile's FROM), on x86-64.
IMAGE_ENVIRONMENT = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


# -- the pinned versions ----------------------------------------------------------------------
def _image_install() -> tuple[str, list[str]]:
    """(constraints file, extras) of the Dockerfile's pip install."""
    text = DOCKERFILE.read_text()
    found = re.findall(r'pip install [^\n]*?-c (\S+) "\.\[([\w,-]+)\]"', text)
    assert len(found) == 1, "the Dockerfile's pip install changed: update this test"
    constraints, extras = found[0]
    assert f"COPY {constraints} " in text, f"the Dockerfile does not copy {constraints}"
    assert text.index(f"COPY {constraints} ") < text.index("pip install")
    return constraints, extras.split(",")


def _pins(text: str) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        # Exactly what `pip freeze` prints: the build compares the two.
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.+!-]*)", line)
        assert match, f"line {number} is not name==version: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"line {number}: {name} is pinned twice"
        pins[name] = Version(match.group(2))
    return pins


def test_the_pins_are_one_name_and_version_a_line():
    assert _pins("# note\n\nnumpy==2.5.5\nnumba-cuda==0.30.4\n") == {
        "numpy": Version("2.5.5"),
        "numba-cuda": Version("0.30.4"),
    }
    for wrong in ("numpy>=2", "numpy==2.5 # why", "numpy", "numba-cuda[cu13]==0.30.4"):
        with pytest.raises(AssertionError, match="not name==version"):
            _pins(wrong + "\n")
    with pytest.raises(AssertionError, match="pinned twice"):
        _pins("Pillow==13.0.0\npillow==13.0.0\n")


def test_the_image_pins_every_package_pyproject_names_for_it():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    constraints, extras = _image_install()
    assert {"cuda13", "bench", "plot", "parquet"} <= set(extras)
    pins = _pins((REPO / constraints).read_text())
    named = [*project["dependencies"]]
    for extra in extras:
        named += project["optional-dependencies"][extra]
    problems = []
    for text in named:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate(IMAGE_ENVIRONMENT):
            continue  # not installed in the image: a pin would fail the build's comparison
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{text}: not pinned in {constraints}")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{text}: {constraints} pins {pins[name]}")
    assert not problems, problems
    # The bench extra's XGBoost is the CPU build: the CUDA one ("xgboost", bench-cuda's)
    # installs the same module, and the two together break each other.
    assert "xgboost-cpu" in pins and "xgboost" not in pins


# -- the documentation's Docker commands -------------------------------------------------------
def _docker_section() -> str:
    text = INSTALL_PAGE.read_text()
    return text[text.index("## Docker") :].split("\n## ", 1)[0]


def _readme_docker_train() -> list[str]:
    """gputree's arguments in the install page's `docker run ... train` command, checked against
    the Dockerfile: the image the build tags, the working folder the volume lands on."""
    commands = re.findall(r"^docker .*$", _docker_section(), re.M)
    build = [shlex.split(c) for c in commands if c.startswith("docker build")]
    assert len(build) == 1, commands
    tag = build[0][build[0].index("-t") + 1]
    train = [shlex.split(c.split("#")[0]) for c in commands if " train " in c]
    assert len(train) == 1, commands
    words = train[0]
    dockerfile = DOCKERFILE.read_text()
    assert re.findall(r"^WORKDIR (\S+)", dockerfile, re.M)[-1] == "/work"
    assert "$PWD:/work" in words and "-u" in words
    assert 'ENTRYPOINT ["gputree"]' in dockerfile
    return words[words.index(tag) + 1 :]


def _readme_days_csv() -> str:
    match = re.search(r"cat > days\.csv <<'CSV'\n(.*?\n)CSV\n", CLI_PAGE.read_text(), re.S)
    assert match, "the command line page's days.csv example changed: update this test"
    return match.group(1)


def test_the_readme_runs_the_image_it_builds():
    arguments = _readme_docker_train()
    assert arguments[:2] == ["train", "days.csv"]
    assert "--target" in arguments  # days.csv's text columns are categorical by themselves
    bench = [c for c in re.findall(r"^docker run .*$", _docker_section(), re.M) if "bench" in c]
    assert bench and shlex.split(bench[0].split("#")[0])[-1] == "bench"


# -- gputree as an unknown user ----------------------------------------------------------------
NOBODY = 65534
LAUNCH = "import sys; sys.argv[0] = 'gputree'; from gpu_tree.app.launch import main; main()"


def _interpreter_for(uid: int, site_packages: str) -> tuple[str | None, list[str]]:
    """An interpreter ``uid`` can run with ``site_packages`` (numpy, numba, click), and
    why each other candidate could not."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable]
    for folder in ("/usr/local/bin", "/usr/bin"):
        candidates.append(f"{folder}/python{version}")
    why_not = []
    for python in dict.fromkeys(candidates):
        if not os.path.exists(python):
            continue
        try:
            probe = subprocess.run(
                [python, "-S", "-c", "import numpy, numba, click"],
                user=uid,
                group=uid,
                extra_groups=[],
                env={"PATH": "/usr/bin:/bin", "HOME": "/", "PYTHONPATH": site_packages},
                cwd="/",
                capture_output=True,
                text=True,
                timeout=120,
            )
        except OSError as exc:
            why_not.append(f"{python}: {exc}")
            continue
        if probe.returncode == 0:
            return python, why_not
        why_not.append(f"{python}: {probe.stderr.strip().splitlines()[-1:]}")
    return None, why_not


def _make_read_only(folder: Path):
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)


def _roots_copy(source: Path, copy: Path) -> Path:
    """``source`` copied as root's build leaves a folder: root's, readable by all."""
    shutil.copytree(source, copy)
    for path in [copy, *copy.rglob("*")]:
        os.chown(path, 0, 0)
        path.chmod(0o755 if path.is_dir() else 0o644)
    return copy


def _snapshot(folder: Path) -> dict[str, tuple]:
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in [folder, *folder.rglob("*")]
    }


@dataclass
class Nobody:
    root: Path  # a fresh folder; everything below it is the test's
    package: Path  # the read-only install: root/site-packages/gpu_tree
    python: str
    site_packages: str

    def folder(self, name: str, mode: int = 0o755, owner: int = 0) -> Path:
        path = self.root / name
        path.mkdir()
        path.chmod(mode)
        os.chown(path, owner, owner)
        return path

    def gputree(self, *args: str, cwd: Path, tmp: Path, **env: str):
        """`gputree ARGS` as uid/gid 65534 with HOME /, as `docker run -u` runs it (the
        image sets nothing else that numba or CuPy read, unless ``env`` says so)."""
        return subprocess.run(
            [self.python, "-S", "-c", LAUNCH, *args],
            user=NOBODY,
            group=NOBODY,
            extra_groups=[],
            cwd=cwd,
            env={
                "PATH": "/usr/bin:/bin",
                "HOME": "/",
                "TMPDIR": str(tmp),
                "PYTHONPATH": f"{self.package.parent}:{self.site_packages}",
                # Compiled whatever the data's size, as conftest.py asks of every test.
                "GPU_TREE_PYTHON_KERNELS": os.environ["GPU_TREE_PYTHON_KERNELS"],
                **env,
            },
            capture_output=True,
            text=True,
            timeout=900,
        )


@pytest.fixture(scope="module")
def nobody():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("running gputree as another user (uid 65534) needs root")
    site_packages = _site_packages()
    python, why_not = _interpreter_for(NOBODY, site_packages)
    if python is None:
        pytest.skip(f"uid {NOBODY} can run no Python with {site_packages}: {why_not}")
    root = Path(tempfile.mkdtemp(prefix="gputree-as-nobody-"))  # not pytest's: root's alone
    try:
        root.chmod(0o755)
        package = root / "site-packages" / "gpu_tree"

        def not_the_checkouts(folder, names):
            beside = Path(folder) == REPO / "gpu_tree"  # a worktree's link to kernels/
            return [n for n in names if n == "__pycache__" or (beside and n == "kernels")]

        shutil.copytree(REPO / "gpu_tree", package, ignore=not_the_checkouts)
        shutil.copytree(
            REPO / "kernels", package / "kernels", ignore=shutil.ignore_patterns("__pycache__")
        )
        _make_read_only(package.parent)
        yield Nobody(root, package, python, site_packages)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def readme_train(nobody):
    """The install page's `docker run -u ... gputree train ...` as the unknown user, in a
    working folder of theirs (the volume), NUMBA_CACHE_DIR unset: the kernels compile and
    are cached in the temporary directory. Its tests share this one compile."""
    work = nobody.folder("work", owner=NOBODY)
    tmp = nobody.folder("tmp", mode=0o1777)
    (work / "days.csv").write_text(_readme_days_csv())
    before = _snapshot(nobody.package.parent)
    result = nobody.gputree(*_readme_docker_train(), cwd=work, tmp=tmp)
    return result, work, tmp, before


def _no_traceback(result):
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


def test_gputree_help_runs_as_an_unknown_user(nobody):
    tmp = nobody.folder("tmp-help", mode=0o1777)
    result = nobody.gputree("--help", cwd=Path("/"), tmp=tmp)
    _no_traceback(result)
    assert "Usage: gputree" in result.stdout and " train " in result.stdout


@pytest.mark.slow
def test_the_readmes_docker_train_runs_as_an_unknown_user(nobody, readme_train):
    result, work, tmp, before = readme_train
    _no_traceback(result)
    assert "model saved to" in result.stdout
    model = work / "model.json"
    assert model.stat().st_uid == NOBODY and json.loads(model.read_text())
    assert _snapshot(nobody.package.parent) == before  # nothing written into the install
    assert not list(nobody.package.rglob("__pycache__"))
    # numba could write neither beside the kernels nor in HOME (/): this user's own
    # folder in the temporary directory took the kernels.
    cache = tmp / f"gpu_tree-numba-cache-{NOBODY}"
    # numba's cache has a folder per source folder, named after it: the CPU kernels'
    # files sit in cpu_<hash of its path>/.
    assert any(index.parent.name.split("_")[0] == "cpu" for index in cache.rglob("*.nbi"))
    info = cache.stat()
    assert info.st_uid == NOBODY and not info.st_mode & 0o077


@pytest.mark.slow
def test_the_images_kernel_cache_serves_and_takes_kernels_from_any_user(nobody, readme_train):
    """The Dockerfile's warm-up: root compiles into NUMBA_CACHE_DIR, then `chmod -R
    a+rwX`. Another user then loads the kernels from it (nothing compiles, nothing goes to
    the temporary directory) and adds the kernels it compiles itself to it."""
    _, work, trained_tmp, _ = readme_train
    assert 'chmod -R a+rwX "$NUMBA_CACHE_DIR"' in DOCKERFILE.read_text()
    # root's cache, as the warm-up leaves it: the same kernels, for the same source files.
    compiled = trained_tmp / f"gpu_tree-numba-cache-{NOBODY}"
    image_cache = _roots_copy(compiled, nobody.root / "image-numba-cache")
    subprocess.run(["chmod", "-R", "a+rwX", str(image_cache)], check=True)
    before = _snapshot(image_cache)

    tmp = nobody.folder("tmp-image", mode=0o1777)
    env = {"NUMBA_CACHE_DIR": str(image_cache)}
    result = nobody.gputree(*_readme_docker_train(), cwd=work, tmp=tmp, **env)
    _no_traceback(result)
    assert _snapshot(image_cache) == before  # every kernel loaded, none compiled
    assert not list(tmp.glob("gpu_tree-numba-cache-*"))

    # Enough rows that predict walks the trees with the compiled kernels, which the train
    # above did not load (a small batch is walked in Python: gpu_tree.model.saved).
    header, *rows = _readme_days_csv().splitlines()
    many = [header, *(rows * (1 + saved.PYTHON_WALK_MAX_STEPS // len(rows)))]
    (work / "many_days.csv").write_text("\n".join(many) + "\n")
    predicted = nobody.gputree(
        "predict", "model.json", "many_days.csv", "-o", "predictions.csv", cwd=work, tmp=tmp, **env
    )
    _no_traceback(predicted)
    added = set(_snapshot(image_cache)) - set(before)
    assert any(name.endswith(".nbi") for name in added), "predict's kernels were not cached"
    assert not list(tmp.glob("gpu_tree-numba-cache-*"))


@pytest.mark.slow
def test_a_kernel_cache_the_user_cannot_write_falls_back(nobody, readme_train):
    """An image cache this user cannot write (`docker run --read-only`, or one left
    root's): numba passes over it, and the kernels go to the temporary directory."""
    _, work, tmp, _ = readme_train
    compiled = tmp / f"gpu_tree-numba-cache-{NOBODY}"
    read_only = _roots_copy(compiled, nobody.root / "read-only-numba-cache")
    before = _snapshot(read_only)
    result = nobody.gputree(
        *_readme_docker_train(), cwd=work, tmp=tmp, NUMBA_CACHE_DIR=str(read_only)
    )
    _no_traceback(result)
    assert "model saved to" in result.stdout
    assert _snapshot(read_only) == before


def test_cupy_imports_for_an_unknown_user(nobody):
    """CuPy makes its kernel cache folder when it is imported, ~/.cupy/kernel_cache, and
    fails where it cannot: `gputree train` with the default --device auto stopped with
    "Permission denied: '/.cupy'" under `docker run -u`. A stand-in for CuPy (where it is
    not installed) does what CuPy 14's import does (cupy/cuda/_compiler_cache.py)."""
    stand_in = nobody.root / "cupy-stand-in" / "cupy"
    stand_in.mkdir(parents=True)
    (stand_in / "__init__.py").write_text(
        "import os\n"
        "cache_dir = os.environ.get('CUPY_CACHE_DIR', os.path.expanduser('~/.cupy/kernel_cache'))\n"
        "if not os.path.isdir(cache_dir):\n"
        "    os.makedirs(cache_dir, exist_ok=True)\n"
    )
    _make_read_only(stand_in.parent)
    tmp = nobody.folder("tmp-cupy", mode=0o1777)
    code = (
        "import json, sys\n"
        "from gpu_tree.backends.cuda import cuda_status\n"
        "from gpu_tree.kernels import compilation\n"
        "usable, reason, _ = cuda_status()\n"
        "print(json.dumps([compilation.CUPY_CACHE_MODE, sys.modules['cupy'].cache_dir]))\n"
    )
    result = subprocess.run(
        [nobody.python, "-S", "-c", code],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": "/",
            "TMPDIR": str(tmp),
            "PYTHONPATH": f"{nobody.package.parent}:{stand_in.parent}:{nobody.site_packages}",
            "GPU_TREE_PYTHON_KERNELS": os.environ["GPU_TREE_PYTHON_KERNELS"],
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    _no_traceback(result)
    mode, folder = json.loads(result.stdout.strip().splitlines()[-1])
    assert (mode, folder) == ("temporary", str(tmp / f"gpu_tree-cupy-cache-{NOBODY}"))
    info = Path(folder).stat()
    assert info.st_uid == NOBODY and stat.S_IMODE(info.st_mode) == 0o700
