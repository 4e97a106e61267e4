"""Running the gputree command line in-process, for the CLI tests."""

from click.testing import CliRunner

from gpu_tree.app.cli import main


def run_cli(*args):
    """Invoke ``gputree`` with ``args`` (converted to str), stderr kept apart from stdout."""
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    return runner.invoke(main, [str(a) for a in args])
