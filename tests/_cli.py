"""Running the gputree command line in-process, for the CLI tests."""

import pytest
from click.testing import CliRunner

from gpu_tree.app.cli import main


def run_cli(*args):
    """Invoke ``gputree`` with ``args`` (converted to str), stderr kept apart from stdout."""
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(main, [str(a) for a in args])


def use_csv_reader(monkeypatch, reader):
    """Read CSV files with True: the quote-free fast path; False: the csv module's;
    "arrow": pyarrow's (skips the test where pyarrow is not installed)."""
    import gpu_tree.app.data_io as data_io

    if reader == "arrow":
        pytest.importorskip("pyarrow")
    monkeypatch.setattr(data_io, "_ARROW_CSV", reader == "arrow")
    monkeypatch.setattr(data_io, "_FAST_CSV", bool(reader))


# Quinlan's 14-day weather table (ID3's example), as an ARFF file.
TENNIS_ARFF = """@relation weather.symbolic
@attribute outlook {sunny, overcast, rainy}
@attribute temperature {hot, mild, cool}
@attribute humidity {high, normal}
@attribute windy {TRUE, FALSE}
@attribute play {no, yes}
@data
sunny,hot,high,FALSE,no
sunny,hot,high,TRUE,no
overcast,hot,high,FALSE,yes
rainy,mild,high,FALSE,yes
rainy,cool,normal,FALSE,yes
rainy,cool,normal,TRUE,no
overcast,cool,normal,TRUE,yes
sunny,mild,high,FALSE,no
sunny,cool,normal,FALSE,yes
rainy,mild,normal,FALSE,yes
sunny,mild,normal,TRUE,yes
overcast,mild,high,TRUE,yes
overcast,hot,normal,FALSE,yes
rainy,mild,high,TRUE,no
"""
