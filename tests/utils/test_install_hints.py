"""Install hints name packages pip finds anywhere and the checkout's extra that pins them
(gpu_tree is not on a package index: "gpu-tree[parquet]" would fail for everyone)."""

import re
from pathlib import Path

import pytest

from gpu_tree.utils.install_hints import EXTRA_PACKAGES, install_hint

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
pytestmark = pytest.mark.skipif(not PYPROJECT.is_file(), reason="not a source checkout")


def _requirement_name(requirement: str) -> str:
    """'numba-cuda[cu12]>=0.20' -> 'numba-cuda[cu12]': the name and extras, no version."""
    return re.split(r"[<>=!~;\s]", requirement, maxsplit=1)[0]


@pytest.mark.parametrize("extra", sorted(EXTRA_PACKAGES))
def test_each_hint_names_its_extras_packages(extra):
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    hinted = [name.strip('"') for name in EXTRA_PACKAGES[extra].split()]
    assert hinted == [_requirement_name(r) for r in extras[extra]]
    hint = install_hint(extra)
    assert hint.startswith(f"pip install {EXTRA_PACKAGES[extra]} (")
    assert f'pip install ".[{extra}]"' in hint


def test_no_message_points_to_a_package_index_name():
    package = Path(__file__).resolve().parents[2] / "gpu_tree"
    readme = PYPROJECT.with_name("README.md")
    for path in [readme, *package.rglob("*.py")]:
        assert "gpu-tree[" not in path.read_text(encoding="utf-8"), path
