"""The gputree command line."""

import re

from click.testing import CliRunner

from gpu_tree import __version__
from gpu_tree.cli import main


def test_bench_trains_and_reports():
    result = CliRunner().invoke(main, ["bench", "--rows", "3000", "--depth", "4", "--bins", "32"])
    assert result.exit_code == 0, result.output
    assert "2,400 train / 600 test rows x 28 features, depth 4, 32 bins" in result.output
    line = next(row for row in result.output.splitlines() if row.startswith("gpu_tree "))
    fit_seconds, predict_seconds, accuracy, ratio = map(float, line.split()[1:])
    assert fit_seconds > 0 and predict_seconds > 0 and ratio == 1.0
    assert 0.55 < accuracy <= 1.0
    depth, leaves = map(int, re.search(r"depth (\d+), (\d+) leaves", result.output).groups())
    assert depth <= 4 and 2 <= leaves <= 16


def test_bench_with_peers_reports_ratios():
    result = CliRunner().invoke(main, ["bench", "--rows", "2000", "--depth", "3", "--peers"])
    assert result.exit_code == 0, result.output
    assert "scikit-learn DecisionTreeClassifier" in result.output


def test_bench_rejects_bad_options_in_one_line(monkeypatch):
    import gpu_tree.estimators as estimators

    monkeypatch.setattr(estimators, "cuda_status", lambda: (False, "no usable NVIDIA GPU", None))
    runner = CliRunner()
    cuda = runner.invoke(main, ["bench", "--rows", "1000", "--device", "cuda"])
    assert cuda.exit_code == 2
    assert "device='cuda' is not usable here" in cuda.output
    assert "Traceback" not in cuda.output
    criterion = runner.invoke(main, ["bench", "--rows", "1000", "--criterion", "nope"])
    assert criterion.exit_code == 2 and "Unknown criterion='nope'" in criterion.output
    bins = runner.invoke(main, ["bench", "--bins", "1"])
    assert bins.exit_code == 2 and "--bins" in bins.output


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output
