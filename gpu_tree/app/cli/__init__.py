"""The ``gputree`` command line: train, predict, evaluate, export, info and bench.

A model file holds a tree or a random forest (``train --forest N``); every command that
reads one takes either, and those that show one tree (``export``, ``info``) choose a
forest's with ``--tree N``.

Every expected failure (a missing or malformed file, an unknown column, a bad value, a
damaged model file, a missing optional dependency, a bad option) ends the command with
one line on standard error, ``gputree: error: ...``, and exit status 2; an unexpected one
with one line and status 1 (its traceback with ``--verbose``). Outputs are written
atomically (a temporary file in the same folder, then a rename): a failed command leaves
no output file behind and an existing one untouched.

The group and its error handling are in ``group``, the commands each in its own
``*_command`` module, added to the group in ``commands``.
"""

from gpu_tree.app.cli.commands import main
from gpu_tree.app.cli.targets import auto_task

__all__ = ["auto_task", "main"]
