"""Where the command line writes (issue 15, defect 3 and 8): never over an input, never
replacing a FIFO, device or link, no temporary file left by an interrupt, and one line
with exit status 128 + the signal for SIGINT and SIGTERM.

Every file, FIFO and link is made inside the test's temporary folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from _cli import run_cli

DATA = "x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(40))


@pytest.fixture
def trained(tmp_path):
    """A data file and a model trained on it."""
    data = tmp_path / "data.csv"
    data.write_text(DATA)
    model = tmp_path / "model.json"
    result = run_cli("train", data, "-t", "y", "-o", model, "--device", "cpu")
    assert result.exit_code == 0, result.stderr
    return data, model


def _refused_and_unchanged(result, path, before):
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "it is the input" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert path.read_bytes() == before


def test_train_refuses_to_write_the_model_over_its_data(trained):
    data, _ = trained
    before = data.read_bytes()
    result = run_cli("train", data, "-t", "y", "-o", data, "--device", "cpu")
    _refused_and_unchanged(result, data, before)


@pytest.mark.parametrize("over", ["model", "data"])
def test_predict_refuses_to_write_over_its_inputs(trained, over):
    data, model = trained
    target = model if over == "model" else data
    before = target.read_bytes()
    _refused_and_unchanged(run_cli("predict", model, data, "-o", target), target, before)


def test_evaluate_and_export_refuse_to_write_over_the_model(trained):
    data, model = trained
    before = model.read_bytes()
    result = run_cli("evaluate", model, data, "-t", "y", "--json", model)
    _refused_and_unchanged(result, model, before)
    _refused_and_unchanged(run_cli("export", model, "-o", model), model, before)


def test_a_link_to_the_input_is_the_input(trained, tmp_path):
    data, model = trained
    link = tmp_path / "link-to-model.json"
    link.symlink_to(model)
    before = model.read_bytes()
    _refused_and_unchanged(run_cli("export", model, "-o", link), model, before)
    assert link.is_symlink()


def test_an_output_link_is_followed_and_kept(trained, tmp_path):
    _, model = trained
    target = tmp_path / "tree.txt"
    target.write_text("old")
    link = tmp_path / "tree-link.txt"
    link.symlink_to(target)
    result = run_cli("export", model, "-o", link)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink()  # the link stays a link ...
    assert "|---" in target.read_text()  # ... and the file it names holds the tree


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_an_output_fifo_is_written_through_not_replaced(trained, tmp_path):
    _, model = trained
    fifo = tmp_path / "tree.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    result = run_cli("export", model, "-o", fifo)
    reader.join(timeout=60)
    assert result.exit_code == 0, result.stderr
    assert fifo.is_fifo()  # still a FIFO: before, a regular file replaced it
    assert received and "|---" in received[0]


# -- interrupts: run gputree in a child process, stopped while it writes its output -------
_SLOW_WRITER = """
import sys, time
import gpu_tree.app.cli.export_command as export_command
from gpu_tree.app.cli import main
real = export_command.atomic_text
class Slow:
    def __init__(self, *args, **kwargs):
        self.inner = real(*args, **kwargs)
    def __enter__(self):
        out = self.inner.__enter__()
        out.write("partial")
        print("writing", flush=True)
        time.sleep(60)
        return out
    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)
export_command.atomic_text = Slow
sys.argv = ["gputree"] + sys.argv[1:]
main()
"""


@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
def test_an_interrupt_while_writing_leaves_no_temporary_file(trained, tmp_path, sig, code, word):
    _, model = trained
    output = tmp_path / "out" / "tree.txt"
    output.parent.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", _SLOW_WRITER, "export", str(model), "-o", str(output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "writing"
        time.sleep(0.2)
        child.send_signal(sig)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()  # only the process this test started
    assert child.returncode == code, stderr
    assert stderr.strip().splitlines() == [f"gputree: error: {word}"]
    assert list(output.parent.iterdir()) == []  # no output, no temporary file


# Records, at the first import of each heavy module, whether the command's SIGINT handler
# was already set; then runs the command as its console script does.
_HANDLERS_AT_IMPORT = """
import signal, sys
HEAVY = ("numpy", "numba", "click", "sklearn")
seen = {}
def hook(event, args):
    if event == "import" and args[0] in HEAVY and args[0] not in seen:
        handler = signal.getsignal(signal.SIGINT)
        seen[args[0]] = getattr(handler, "__qualname__", repr(handler))
sys.addaudithook(hook)
from gpu_tree.app.launch import main
sys.argv = ["gputree"] + sys.argv[1:]
try:
    main()
finally:
    print(sorted(seen.items()), file=sys.stderr)
"""


def test_interrupt_handlers_are_set_before_any_heavy_import(trained):
    _, model = trained
    result = subprocess.run(
        [sys.executable, "-c", _HANDLERS_AT_IMPORT, "info", str(model)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = dict(eval(result.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own repr
    assert {"numpy", "click"} <= set(seen)
    assert set(seen.values()) == {"raise_interrupted"}, seen


@pytest.mark.parametrize("delay", [0.3, 0.8])
def test_ctrl_c_while_the_command_loads_is_one_line(trained, tmp_path, delay):
    """SIGINT while numpy, numba and the estimators are still being imported (the import
    takes over a second): one line and 130, no traceback, no output."""
    data, _ = trained
    output = tmp_path / "early.json"
    child = subprocess.Popen(
        [sys.executable, "-c", "from gpu_tree.app.launch import main; main()", "train"]
        + [str(data), "-t", "y", "-o", str(output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()  # only the process this test started
    if child.returncode == 0:
        pytest.skip(f"the command finished within {delay} s: nothing left to interrupt")
    assert child.returncode == 130, stderr
    assert stderr.strip().splitlines() == ["gputree: error: interrupted"]
    assert not output.exists()
