"""The ``gputree`` group: its options (-V; -v and -q, before or after the subcommand) and
the handling that turns every failure into one line on standard error and an exit
status."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import traceback
import warnings

import click

from gpu_tree._version import __version__
from gpu_tree.app.interrupts import INTERRUPTS, Interrupted, raise_interrupted
from gpu_tree.kernels.compilation import set_compile_notice
from gpu_tree.utils.progress import install_handler

_EXPECTED = (ValueError, OSError, ImportError, MemoryError)


# -- errors ------------------------------------------------------------------------------------
def one_line(text) -> str:
    return " ".join(str(text).split())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and len(exc.args) >= 2:
        where = exc.filename if exc.filename is not None else ""
        return f"{where}: {exc.strerror}" if where else exc.strerror
    if isinstance(exc, MemoryError):
        return f"not enough memory ({exc})" if str(exc) else "not enough memory"
    if isinstance(exc, click.UsageError) and exc.ctx is not None:
        return f"{exc.format_message()} (see '{exc.ctx.command_path} --help')"
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    return str(exc) or type(exc).__name__


def _fail(message, code):
    click.echo(f"gputree: error: {one_line(message)}", err=True)
    return code


@contextlib.contextmanager
def _interrupts_raise():
    """SIGINT and SIGTERM raise :class:`Interrupted` while the command runs (main thread
    only: elsewhere, as under a test runner's threads, handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, raise_interrupted) for sig in INTERRUPTS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Main(click.Group):
    """A group whose ``main`` turns every failure into one line and an exit status."""

    verbose = False

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        args = sys.argv[1:] if args is None else list(args)
        if not args:
            args = ["--help"]
        _Main.verbose = False
        with warnings.catch_warnings():
            try:
                with _interrupts_raise():
                    value = super().main(
                        args=args,
                        prog_name=prog_name,
                        complete_var=complete_var,
                        standalone_mode=False,
                        **extra,
                    )
                code = value if isinstance(value, int) else 0
            except Interrupted as exc:
                code = _fail(exc.message, exc.exit_status)
            except click.exceptions.Abort as exc:
                interrupted = isinstance(exc.__cause__, KeyboardInterrupt)
                code = _fail("interrupted", 130) if interrupted else _fail("aborted", 1)
            except KeyboardInterrupt:
                code = _fail("interrupted", 130)
            except BrokenPipeError:
                # The reader went away (gputree export ... | head): stop quietly.
                with contextlib.suppress(Exception):
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                code = 1
            except click.ClickException as exc:
                code = _fail(_describe(exc), 2)
            except _EXPECTED as exc:
                code = _fail(_describe(exc), 2)
            except Exception as exc:
                if _Main.verbose:
                    traceback.print_exc()
                    hint = "this is a bug in gputree"
                else:
                    hint = "rerun with --verbose for the traceback"
                code = _fail(f"internal error: {type(exc).__name__}: {exc} ({hint})", 1)
        if standalone_mode:
            sys.exit(code)
        return code


# -- verbosity: -v / -q before or after the subcommand -----------------------------------------
_VERBOSE_HELP = "Progress and details on stderr, even when piped; tracebacks of internal errors."
_QUIET_HELP = "No progress messages, even on a terminal."


def _verbosity(ctx) -> dict:
    """The command's -v / -q, wherever given: one record on the root context, with what
    applying them installed (undone when the command ends)."""
    root = ctx.find_root()
    state = root.meta.get("gputree.verbosity")
    if state is None:
        state = {"verbose": False, "quiet": False, "undo": [], "filters": list(warnings.filters)}
        root.meta["gputree.verbosity"] = state
        root.call_on_close(lambda: _undo_verbosity(state))
    return state


def is_verbose() -> bool:
    """Whether the running command was given -v (before or after the subcommand)."""
    return _Main.verbose


def _undo_verbosity(state):
    for undo in reversed(state["undo"]):
        undo()
    state["undo"] = []


def _apply_verbosity(ctx, flag=None):
    """Set ``flag`` ("verbose" or "quiet") and (re)install the progress handler, the
    warnings filter and the compile notice for the flags given so far."""
    state = _verbosity(ctx)
    if flag is not None:
        state[flag] = True
    verbose, quiet = state["verbose"], state["quiet"]
    if verbose and quiet:
        raise click.UsageError("--verbose and --quiet exclude each other")
    _undo_verbosity(state)
    _Main.verbose = verbose
    warnings.filters[:] = state["filters"]
    if not verbose:
        warnings.simplefilter("ignore")
    state["undo"] = [
        install_handler(sys.stderr, verbose=verbose, quiet=quiet),
        # "gputree: compiling kernels (first run only)" on a terminal, unless --quiet.
        set_compile_notice("never" if quiet else "terminal", program="gputree"),
    ]


def verbosity_options(command):
    """-v / -q on a subcommand too (``gputree train data.csv -q``), as on ``gputree``."""

    def given(flag):
        def callback(ctx, param, value):
            if value:
                _apply_verbosity(ctx, flag)

        return callback

    command = click.option(
        "-q", "--quiet", is_flag=True, expose_value=False, callback=given("quiet"), help=_QUIET_HELP
    )(command)
    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=given("verbose"),
        help=_VERBOSE_HELP,
    )(command)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="gputree")
@click.option("-v", "--verbose", is_flag=True, help=_VERBOSE_HELP)
@click.option("-q", "--quiet", is_flag=True, help=_QUIET_HELP)
@click.pass_context
def main(ctx, verbose, quiet):
    """Decision trees for large tabular data, on NVIDIA GPUs and on the CPU.

    Progress goes to stderr when it is a terminal; results to stdout. Every error is one
    line, "gputree: error: ...", with exit status 2. -v and -q go before or after the
    subcommand.
    """
    state = _verbosity(ctx)
    state["verbose"] = state["verbose"] or verbose
    state["quiet"] = state["quiet"] or quiet
    _apply_verbosity(ctx)
