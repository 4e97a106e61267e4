"""The model-file fuzzer (tests/quality/fuzz_model_files.py, issue 15): a short run in CI
finds no defect, and the fuzzer itself tells crashes and hangs from refusals."""

import importlib.util
from pathlib import Path

import pytest

FUZZER = Path(__file__).resolve().parent / "fuzz_model_files.py"


def _fuzzer():
    spec = importlib.util.spec_from_file_location("fuzz_model_files", FUZZER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_damaged_model_files_are_refused_or_work_never_crash_or_hang(tmp_path):
    fuzzer = _fuzzer()
    result = fuzzer.run(fuzzer.make_cases(200, seed=0, folder=tmp_path), timeout=30)
    counts = result["counts"]
    assert counts["defects"] == 0, result["defects"]
    assert counts["tried"] == 200 == counts["refused"] + counts["worked"]
    assert counts["refused"] > 100 and counts["worked"] > 0  # both outcomes are exercised


_SABOTEUR = r"""
import json, os, signal, sys, time
paths = json.loads(sys.stdin.read())
for i, path in enumerate(paths):
    print(f"start {i}", flush=True)
    if path.endswith("crash"):
        os.kill(os.getpid(), signal.SIGSEGV)
    if path.endswith("hang"):
        time.sleep(600)
    if path.endswith("raise"):
        print(f"defect {i} use raised IndexError: planted", flush=True)
        continue
    print(f"refused {i}", flush=True)
"""


@pytest.mark.timeout(300)
def test_the_fuzzer_reports_crashes_hangs_and_bad_errors_by_case():
    fuzzer = _fuzzer()
    cases = [(name, name) for name in ("ok", "crash", "ok", "hang", "raise", "ok")]
    result = fuzzer.run(cases, timeout=2, child_code=_SABOTEUR)
    assert result["counts"] == {"tried": 6, "refused": 3, "worked": 0, "defects": 3}
    found = {index: outcome for index, _, outcome in result["defects"]}
    assert found[1].startswith("crash")
    assert found[3] == "hang"
    assert "IndexError" in found[4]
