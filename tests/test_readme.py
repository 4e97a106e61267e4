"""The README's quick start stays two commands, and CI runs exactly those."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_module():
    path = ROOT / ".ci" / "quick_start_commands.py"
    if not path.is_file():
        pytest.skip("not a source checkout")
    spec = importlib.util.spec_from_file_location("quick_start_commands", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_start_has_two_commands_main_job_then_tests():
    commands = _quick_start_module().quick_start_commands((ROOT / "README.md").read_text())
    assert len(commands) == 2, commands
    install_and_run, install_and_test = commands
    assert install_and_run.startswith("pip install .") and "gputree bench" in install_and_run
    assert install_and_test.startswith('pip install ".[test]"') and install_and_test.endswith(
        "pytest"
    )


def test_ci_runs_the_readme_commands_and_ruff():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "quick_start_commands.py README.md" in ci
    assert 'bash -euo pipefail -c "${quick_start[1]}"' in ci
    assert "ruff check ." in ci


def test_extractor_reads_only_the_quick_start_section():
    extract = _quick_start_module().quick_start_commands
    text = "# T\n## Quick start\n```bash\n# comment\na && b\n```\ntext\n```\nc\n```\n## Other\n```\nd\n```\n"
    assert extract(text) == ["a && b", "c"]
    assert extract("# no section\n") == []


def test_python_examples_run(tmp_path, monkeypatch):
    """The README's Python blocks run in order, as one session (the GPU one needs CuPy and
    a GPU); files they write land in a temporary folder."""
    import re

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in blocks:
        if "import cupy" in block:
            continue
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own README
        assert "tree" in namespace


def test_command_line_example_runs(tmp_path):
    """The README's command-line block runs as written, in a temporary folder, with the
    installed ``gputree``; each command must succeed and leave its output."""
    import re
    import shutil
    import subprocess

    if shutil.which("gputree") is None:
        pytest.skip("the gputree command is not installed")
    section = re.search(r"^## Command line\n(.*?)^## ", (ROOT / "README.md").read_text(), re.M | re.S)
    assert section is not None
    block = re.search(r"```bash\n(.*?)```", section.group(1), re.S).group(1)
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    for output in ("model.json", "predictions.csv", "metrics.json", "bench.json"):
        assert (tmp_path / output).stat().st_size > 0, output
    assert "|--- " in result.stdout  # the exported tree
