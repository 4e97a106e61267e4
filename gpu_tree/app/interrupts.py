"""What the ``gputree`` command does on SIGINT and SIGTERM: stop, run the cleanup, say so
in one line and exit with 128 + the signal's number. Light to import: the entry point
(``gpu_tree.app.launch``) sets these handlers before anything heavy loads."""

from __future__ import annotations

import signal

# The signals a command stops on, running its cleanup first.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """SIGINT or SIGTERM: raised from the signal handler so that every ``finally`` (the
    temporary file of an output being written) runs on the way out. Not a
    KeyboardInterrupt, which click would turn into an "Abort" of exit status 1."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum

    @property
    def message(self) -> str:
        return "interrupted" if self.signum == signal.SIGINT else "terminated"

    @property
    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports it: 130 for Ctrl-C."""
        return 128 + int(self.signum)


def raise_interrupted(signum, frame):
    raise Interrupted(signum)
