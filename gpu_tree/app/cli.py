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
"""

from __future__ import annotations

import contextlib
import csv
import functools
import json
import logging
import numbers
import os
import shlex
import signal
import sys
import threading
import time
import traceback
import warnings

import click
import numpy as np

from gpu_tree._version import __version__
from gpu_tree.app.data_io import (
    CATEGORY,
    FEATURE,
    NUMBER,
    SKIP,
    TEXT,
    Column,
    extension,
    feature_matrix,
    read_table,
    resolve_column,
    split_specs,
)
from gpu_tree.app.interrupts import INTERRUPTS, Interrupted, raise_interrupted
from gpu_tree.kernels.compilation import set_compile_notice
from gpu_tree.utils.atomic_files import atomic_text, check_writable
from gpu_tree.utils.install_hints import install_hint
from gpu_tree.utils.progress import (
    binning_logger,
    grower_logger,
    install_handler,
    quieter,
    step,
)

logger = logging.getLogger("gpu_tree.app.cli")

# Task "auto": a numeric target is a classification target when its values are whole
# numbers with at most this many distinct values, and (beyond 2 of them) at least
# MIN_ROWS_PER_CLASS rows per value on average; text or categorical targets always are.
MAX_AUTO_CLASSES = 20
MIN_ROWS_PER_CLASS = 5
PLOT_HINT = install_hint("plot")
_EXPECTED = (ValueError, OSError, ImportError, MemoryError)


# -- errors ------------------------------------------------------------------------------------
def _one_line(text) -> str:
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
    click.echo(f"gputree: error: {_one_line(message)}", err=True)
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


def _verbosity_options(command):
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


# -- shared helpers ----------------------------------------------------------------------------
_DATA = click.Path(exists=True, dir_okay=False)
_TEXT_FORMAT_OPTIONS = (
    click.option(
        "--no-header",
        is_flag=True,
        help="CSV/TSV: the first row is data, not column names; the columns are x0, x1, "
        "... and options name them by index (--target 0) or as x0.",
    ),
    click.option(
        "--sep",
        metavar="CHAR",
        default=None,
        help="CSV/TSV: the field separator (default: ',' for .csv, tab for .tsv); '\\t' is a tab.",
    ),
    click.option(
        "--na-values",
        metavar="TOKENS",
        multiple=True,
        help="CSV/TSV: more missing-value tokens, comma-separated (besides empty, ?, NA, "
        "N/A, nan); a number token (-999) marks every field of that value (not an "
        "infinite one, such as inf: infinite values are not allowed in data).",
    ),
    click.option(
        "--encoding",
        default="utf-8",
        show_default=True,
        help="CSV/TSV: the text encoding (latin-1, cp1252, utf-16, ...).",
    ),
)


def _text_format_options(command):
    """The text-file options (--no-header, --sep, --na-values, --encoding), handed to the
    command as one ``text_format`` dict of read_table's keyword arguments."""

    @functools.wraps(command)
    def with_text_format(*args, no_header, sep, na_values, encoding, **kwargs):
        if sep is not None:
            sep = {"\\t": "\t", "tab": "\t"}.get(sep, sep)
        text_format = {
            "header": not no_header,
            "sep": sep,
            "na_values": tuple(split_specs(na_values)),
            "encoding": encoding,
        }
        return command(*args, text_format=text_format, **kwargs)

    for option in reversed(_TEXT_FORMAT_OPTIONS):
        with_text_format = option(with_text_format)
    return with_text_format


def _load(path):
    """The model in a model file, as a saved model (gpu_tree.model.saved: the estimator's
    fitted attributes and host prediction, checked as gpu_tree.load checks the file),
    not as its estimator, whose import (scikit-learn, SciPy, pandas, the training code
    and kernels) took seconds of each command's start."""
    from gpu_tree.model.saved import load_saved_model

    start = time.perf_counter()
    model = load_saved_model(path)
    logger.info("loaded %s (%.2f s)", path, time.perf_counter() - start)
    return model


def _read(path, plan, hint=None, text_format=None):
    start = time.perf_counter()
    size = os.path.getsize(path)
    logger.info("reading %s (%.1f MB)", path, size / 1e6, extra=step("reading", 0, size, unit="B"))
    table = read_table(path, plan, hint, **(text_format or {}))
    logger.info(
        "read %s: %s rows, %d of %d columns used (%.2f s)",
        path,
        f"{table.n_rows:,}",
        len(table.columns),
        len(table.names),
        time.perf_counter() - start,
        extra=step("reading", size, size, unit="B", done=True),
    )
    return table


def _shown(values, limit=10) -> str:
    values = [str(v) for v in values]
    return ", ".join(values[:limit]) + (
        f", ... ({len(values)} in all)" if len(values) > limit else ""
    )


def _is_classifier(model) -> bool:
    return hasattr(model, "classes_")


def _is_forest(model) -> bool:
    return hasattr(model, "estimators_")


def _learned(model):
    """The estimator holding what the model learned of its input (categories): a
    forest's first tree (every tree shares it), or the tree itself."""
    return model.estimators_[0] if _is_forest(model) else model


def _chosen_tree(model, tree, path):
    """The tree estimator ``export`` and ``info`` show: a forest's tree ``--tree N``
    (required), or the model itself when it is a single tree (``--tree`` refused)."""
    if not _is_forest(model):
        if tree is not None:
            raise click.UsageError(
                f"--tree picks one of a forest's trees, but {path} holds a single tree "
                f"({type(model).__name__}); leave --tree out"
            )
        return model
    n_trees = len(model.estimators_)
    if tree is None:
        raise click.UsageError(
            f"{path} holds a forest of {n_trees} trees ({type(model).__name__}): choose "
            f"the tree to show with --tree 0 to {n_trees - 1}"
        )
    if tree >= n_trees:
        raise click.UsageError(
            f"--tree {tree} is out of range: the forest in {path} has {n_trees} trees "
            f"(--tree 0 to {n_trees - 1})"
        )
    return model.estimators_[tree]


def _check_target_present(table, column):
    missing = column.missing()
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{table.source}: the target column {column.name!r} has {int(missing.sum())} "
            f"missing value(s), the first at {table.where(first)}; remove those rows"
        )


def _sample_weights(table, column) -> np.ndarray:
    """The --weight column's values, checked by the estimators' rule (finite,
    non-negative, not all zero), its errors naming the column and the line."""
    from gpu_tree.data.validation import ALL_ZERO, weight_problem

    values = np.asarray(column.values, dtype=np.float64)
    problem, row = weight_problem(values)
    if problem == ALL_ZERO:
        raise ValueError(f"{table.source}: every weight in the column {column.name!r} is 0")
    if problem is not None:
        value = float(values[row])
        shown = "a missing value" if np.isnan(value) else repr(value)
        raise ValueError(
            f"{table.source}, {table.where(row)}: the weight column {column.name!r} holds "
            f"{shown}; weights must be finite, non-negative numbers"
        )
    return values


def _as_numbers(column, table, why):
    """A text column's values as float64, or a ValueError naming the first bad value."""
    values = column.values
    if not column.is_text:
        return values
    try:  # numpy converts the whole column at C speed; the loop only finds a bad value
        return np.array(values.tolist(), dtype=np.float64)
    except (TypeError, ValueError):
        pass
    out = np.empty(values.shape[0])
    for i, value in enumerate(values.tolist()):
        try:
            out[i] = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"{table.source}, {table.where(i)}: the target column {column.name!r} holds "
                f"{value!r}; {why}"
            ) from None
    return out


def _numeric_or_none(column):
    if not column.is_text:
        return column.values
    try:
        values = np.array(column.values.tolist(), dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return values if np.isfinite(values).all() else None


def auto_task(numeric, categorical: bool) -> str:
    """The task "auto" picks for a target (see MAX_AUTO_CLASSES)."""
    if numeric is None or categorical:
        return "classification"
    whole = bool(np.all(numeric == np.round(numeric)))
    return auto_task_of_numbers(whole, np.unique(numeric).size if whole else 0, numeric.size)


def auto_task_of_numbers(whole: bool, n_distinct: int, n_rows: int) -> str:
    """The task "auto" picks for a target of finite numbers: ``whole`` when each is a whole
    number, of ``n_distinct`` distinct values (any number above MAX_AUTO_CLASSES reads
    the same) over ``n_rows`` rows."""
    if not whole:
        return "regression"
    k = n_distinct
    if k <= 2 or (k <= MAX_AUTO_CLASSES and n_rows >= MIN_ROWS_PER_CLASS * k):
        return "classification"
    return "regression"


def _target_values(table, column, task):
    """(y, task) for training."""
    _check_target_present(table, column)
    numeric = _numeric_or_none(column)
    if task == "auto":
        task = auto_task(numeric, column.categorical)
    if task == "regression":
        if numeric is not None:
            return numeric, task
        return _as_numbers(column, table, "--task regression needs numbers"), task
    if numeric is None or column.categorical and column.is_text:
        return np.asarray(column.values.tolist()), task  # string labels
    fractional = numeric != np.round(numeric)
    if fractional.any():  # the estimator's refusal would name its Python class
        row = int(np.argmax(fractional))
        value = column.values[row] if column.is_text else repr(float(numeric[row]))
        raise ValueError(
            f"{table.source}, {table.where(row)}: the target column {column.name!r} holds "
            f"{value}, a number that is not whole, and --task classification needs class "
            "labels: to predict a number, pass --task regression (or --task auto)"
        )
    if np.abs(numeric).max() < 2**53:
        return numeric.astype(np.int64), task
    return numeric, task


def _model_plan(model, target=None, target_kind=TEXT, role="target"):
    """A read plan for a model's features (by name; by position for files with no names
    or a model without them), plus ``target``: the column of true values (a list of
    them, one per output, for a multi-output model), or with ``role="id"`` the column of
    row ids. Fills ``chosen`` once the file's columns are known: ``features``, the
    feature columns' names in the model's order; ``targets``, the target (or id)
    columns' names, and ``target`` the first of them."""
    specs = [] if target is None else [target] if isinstance(target, str) else list(target)
    names_in = getattr(model, "feature_names_in_", None)
    names_in = None if names_in is None else [str(n) for n in names_in]
    n_features = model.n_features_in_
    categories = getattr(_learned(model), "categories_", None) or [None] * n_features
    feature_kinds = [
        NUMBER if c is None or np.asarray(c).dtype != object else CATEGORY for c in categories
    ]
    chosen = {}

    def plan(names, generated):
        kinds = [SKIP] * len(names)
        target_indices = []
        for spec in specs:
            index = resolve_column(spec, names, f"{role} column")
            if index in target_indices:
                raise ValueError(
                    f"the {role} column {names[index]!r} is given twice (-t names one "
                    "column per output of the model)"
                )
            target_indices.append(index)
            kinds[index] = target_kind
        if target_indices:
            chosen["targets"] = [names[j] for j in target_indices]
            chosen["target"] = chosen["targets"][0]
        if names_in is not None and all(name in names for name in names_in):
            columns = [names.index(name) for name in names_in]
            clash = next((j for j in target_indices if j in columns), None)
            if clash is not None:
                raise ValueError(f"the {role} column {names[clash]!r} is a feature of the model")
        elif names_in is None or generated:
            columns = [j for j in range(len(names)) if j not in target_indices]
            if len(columns) == n_features + 1 and names[columns[-1]] == "y" and generated:
                columns = columns[:-1]  # an .npz file's y
            if len(columns) != n_features:
                raise ValueError(
                    f"the data has {len(columns)} feature columns, but the model expects "
                    f"{n_features}" + (f" ({_shown(names_in)})" if names_in else "")
                )
        else:
            missing = next(name for name in names_in if name not in names)
            raise ValueError(
                f"no column {missing!r}, which the model needs (its features: {_shown(names_in)})"
            )
        for k, j in enumerate(columns):
            kinds[j] = feature_kinds[k]
        chosen["features"] = [names[j] for j in columns]
        return kinds

    return plan, chosen


def _standard_output(what: str):
    """The text stream of standard output, refused with the way out where the process
    was started with it closed (``gputree predict ... >&-``: Python then has none)."""
    stream = click.get_text_stream("stdout")
    if stream is None:
        raise click.UsageError(f"standard output is closed: write {what} to a file with -o PATH")
    return stream


def _read_for_model(model, data, target=None, target_kind=TEXT, text_format=None, role="target"):
    plan, chosen = _model_plan(model, target, target_kind, role)
    text_format = text_format or {}
    no_header = not text_format.get("header", True)

    def plan_with_names(names):
        return plan(names, no_header or _generated_names(data, names))

    hint = "the model was trained with this column numeric"
    table = _read(data, plan_with_names, hint, text_format)
    columns = [table.column(name) for name in chosen["features"]]
    categories = getattr(_learned(model), "categories_", None) or [None] * len(columns)
    columns = [
        column if known is None else _matched_categories(column, known, table.source)
        for column, known in zip(columns, categories, strict=True)
    ]
    X = feature_matrix(columns)
    return table, X, chosen


def _number_or_none(value):
    """The number a category label stands for: a number's value, or a text's that reads as
    a finite number ("1", "1.0", " 2e3"); None otherwise."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if np.isfinite(number) else None
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _label_kind(values) -> str:
    kinds = {"text" if isinstance(v, str) else "numbers" for v in values}
    return kinds.pop() if len(kinds) == 1 else "numbers and text"


def _matched_categories(column, known, source):
    """``column`` (a categorical feature of the model) ready to predict with.

    A value the model knows is kept. A value it does not know is matched across text and
    numbers by its numeric value: the text "1" is the model's number category 1.0, and the
    number 1.0 is the model's text category "1" (when exactly one of its text categories
    reads as 1.0; "1" and "1.0" stay distinct between texts). Other values are unseen
    categories (they follow the missing-value rule), unless none of the column's
    non-missing values matches a known category: that is an error (a column whose type
    changed since training, say), not a column to predict as if it were all missing.
    """
    from gpu_tree.data.categorical import label_key

    present = column.values[~column.missing()]
    if present.size == 0:
        return column
    known_values = known.tolist()
    known_keys = {label_key(v) for v in known_values}
    distinct = np.unique(present).tolist() if not column.is_text else list(set(present.tolist()))
    unknown = [v for v in distinct if label_key(v) not in known_keys]
    if not unknown:
        return column
    texts_of = {}
    for label in known_values:
        number = _number_or_none(label) if isinstance(label, str) else None
        if number is not None:
            texts_of.setdefault(number, []).append(label)
    translation = {}
    for value in unknown:
        number = _number_or_none(value)
        if number is None:
            continue
        if isinstance(value, str):
            if ("number", number) in known_keys:
                translation[value] = number
        elif len(texts_of.get(number, ())) == 1:
            translation[value] = texts_of[number][0]
    if len(unknown) == len(distinct) and not translation:
        first = present[0].item() if isinstance(present[0], np.generic) else present[0]
        have, want = _label_kind([first]), _label_kind(known_values)
        message = (
            f"{source}: the categorical column {column.name!r} shares no value with the "
            f"model's categories: it holds {first!r}, the model knows "
            f"{_shown([repr(v) for v in known_values], 5) or 'no category'}"
        )
        if known_values and have not in want:
            message += f" (a type mismatch: {have} here, {want} in training)"
        raise ValueError(message)
    if not translation:
        return column
    values = [
        None if v is None or v != v else translation.get(v, v) for v in column.values.tolist()
    ]
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return Column(column.name, out, categorical=True)


def _generated_names(data, names) -> bool:
    """Whether a file's column names are made up (x0, x1, ...): .npy, .npz without names
    (CSV files read with --no-header too)."""
    ext = extension(data)
    if ext == ".npy":
        return True
    if ext == ".npz":
        features = [n for n in names if n != "y"]
        return features == [f"x{j}" for j in range(len(features))]
    return False


def _predict(model, X, proba=False):
    with warnings.catch_warnings():
        # The command line matched the columns by name itself.
        warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
        start = time.perf_counter()
        out = model.predict_proba(X) if proba else model.predict(X)
        logger.info("predicted %s rows (%.2f s)", f"{X.shape[0]:,}", time.perf_counter() - start)
        if isinstance(out, list):  # a multi-output model's probabilities, one per output
            return [np.asarray(p) for p in out]
        return np.asarray(out)


def _n_outputs(model) -> int:
    """The model's outputs: 1, or for a model fitted (in Python) on a 2-D y its columns."""
    return int(getattr(model, "n_outputs_", 1))


def _output_names(model) -> list[str]:
    """The names a multi-output model's outputs go by in the command line's columns
    (prediction_NAME, proba_NAME_CLASS) and messages: a fit on a 2-D y keeps no names of
    its columns (a DataFrame's included), so the model file records none; their
    numbers, 0, 1, ..."""
    return [str(k) for k in range(_n_outputs(model))]


def _classes_per_output(model) -> list[np.ndarray]:
    """A classifier's labels, one array per output (a multi-output one keeps a list)."""
    if _n_outputs(model) > 1:
        return [np.asarray(classes) for classes in model.classes_]
    return [np.asarray(model.classes_)]


def _estimator_classes(forest=False):
    """(classifier, regressor) classes: trees, or with ``forest`` random forests."""
    if forest:
        from gpu_tree.ensemble import RandomForestClassifier, RandomForestRegressor

        return RandomForestClassifier, RandomForestRegressor
    from gpu_tree.estimators.tree import DecisionTreeClassifier, DecisionTreeRegressor

    return DecisionTreeClassifier, DecisionTreeRegressor


class _MaxFeatures(click.ParamType):
    """--max-features: sqrt, log2, a count (an int >= 1) or a fraction (a float in (0, 1])."""

    name = "max_features"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return value
        text = value.strip().lower()
        if text in ("sqrt", "log2"):
            return text
        try:
            count = int(text)
        except ValueError:
            count = None
        if count is not None:
            if count < 1:
                self.fail(f"{value!r} is not a count >= 1 (or a fraction, sqrt, log2)", param, ctx)
            return count
        try:
            fraction = float(text)
        except ValueError:
            fraction = None
        if fraction is None or not 0.0 < fraction <= 1.0:
            self.fail(
                f"{value!r} is neither sqrt, log2, a count (3) nor a fraction in (0, 1] (0.5)",
                param,
                ctx,
            )
        return fraction


def _forest_params(forest, *, max_features, bootstrap, oob_score, scheduler, workers):
    """The forest's own parameters from train's options (None without --forest), or a
    one-line refusal of options that do not go together."""
    if forest is None:
        given = [
            option
            for option, on in (
                ("--max-features", max_features is not None),
                ("--bootstrap" if bootstrap else "--no-bootstrap", bootstrap is not None),
                ("--oob-score", oob_score),
            )
            if on
        ]
        if given:
            raise click.UsageError(
                f"{given[0]} is an option of random forests: add --forest N (the number of trees)"
            )
        return None
    if scheduler is not None or workers is not None:
        option = "--scheduler" if scheduler is not None else "--workers"
        raise click.UsageError(
            f"--forest cannot be combined with {option}: distributed training grows single "
            "trees only (for now); train the forest on one data file without it"
        )
    if oob_score and bootstrap is False:
        raise click.UsageError(
            "--oob-score needs bootstrap samples (each row is scored by the trees that did "
            "not draw it); leave out --no-bootstrap"
        )
    params = {"n_estimators": forest}
    if max_features is not None:
        params["max_features"] = max_features
    if bootstrap is not None:
        params["bootstrap"] = bootstrap
    if oob_score:
        params["oob_score"] = True
    return params


# -- train -------------------------------------------------------------------------------------
@main.command(short_help="Train a tree on a data file and save the model.")
@_verbosity_options
@click.argument("data", nargs=-1, required=True, type=click.Path())
@click.option(
    "-t",
    "--target",
    metavar="COL",
    help="The target column: a name, or an index. Default for .npz files: y.",
)
@click.option(
    "-c",
    "--categorical",
    metavar="COLS",
    multiple=True,
    help="Columns of numbers to take as categories (codes), comma-separated names or "
    "indices. Columns holding text (CSV, ARFF string), ARFF nominal and Parquet string "
    "columns are categorical anyway.",
)
@click.option(
    "--ignore",
    metavar="COLS",
    multiple=True,
    help="Columns not to use, comma-separated names or indices (ids, free text).",
)
@click.option(
    "--weight",
    metavar="COL",
    help="A column of sample weights (finite, non-negative numbers; not a feature): a "
    "row of weight 2 counts as two rows.",
)
@click.option(
    "--task",
    type=click.Choice(["auto", "classification", "regression"]),
    default="auto",
    show_default=True,
    help="auto: classification for a text or categorical target, or for whole "
    f"numbers with at most {MAX_AUTO_CLASSES} distinct values (and "
    f"{MIN_ROWS_PER_CLASS}+ rows per value beyond 2); else regression.",
)
@click.option(
    "--criterion",
    default=None,
    help="gini, entropy, gain_ratio, cart, misclassification (classification; "
    "default gini) or squared_error, poisson, absolute_error (regression).",
)
@click.option("--max-depth", type=click.IntRange(min=1), default=None, help="Default: no limit.")
@click.option("--max-bins", type=click.IntRange(2, 65535), default=256, show_default=True)
@click.option("--min-samples-leaf", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--min-samples-split", type=click.IntRange(min=2), default=2, show_default=True)
@click.option(
    "--max-leaf-nodes",
    type=click.IntRange(min=2),
    default=None,
    help="Grow best-first up to this many leaves.",
)
@click.option(
    "--categorical-split",
    type=click.Choice(["binary", "multiway"]),
    default="binary",
    show_default=True,
    help="multiway: one branch per category (ID3).",
)
@click.option(
    "--ccp-alpha",
    type=click.FloatRange(min=0.0),
    default=None,
    help="Minimal cost-complexity pruning: collapse every weakest link whose effective alpha is at most A.",
)
@click.option(
    "--forest",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Train a random forest of N trees instead of one tree (RandomForestClassifier or "
    "RandomForestRegressor, as the task): each tree grows on a bootstrap sample of the "
    "rows and draws the features of each node's search at random; the forest averages "
    "their predictions.",
)
@click.option(
    "--max-features",
    type=_MaxFeatures(),
    default=None,
    metavar="K",
    help="With --forest: the features each node's search draws: sqrt, log2, a count (3) "
    "or a fraction (0.5). Default: sqrt for classification, all for regression.",
)
@click.option(
    "--bootstrap/--no-bootstrap",
    default=None,
    help="With --forest: each tree on a bootstrap sample of the rows (the default), or "
    "every tree on every row.",
)
@click.option(
    "--oob-score",
    is_flag=True,
    help="With --forest: score the forest on its out-of-bag rows (each row by the trees "
    "that did not draw it): accuracy, or R^2; reported and saved in the model.",
)
@click.option(
    "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True
)
@click.option("--random-state", type=int, default=0, show_default=True)
@_text_format_options
@click.option(
    "-o", "--output", required=True, metavar="MODEL.json", help="Where to save the model (JSON)."
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Train on the workers of the Dask scheduler at ADDRESS (tcp://host:8786): they "
    "read DATA (files, globs, folders of Parquet files; paths they can open) and the tree "
    "is the one a single-file train would grow on the same rows. Needs Dask.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="As --scheduler, on a local Dask cluster of N worker processes (one thread "
    "each), started for this command and closed after it.",
)
@click.option(
    "--connect-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="With --scheduler: how long to try to reach the scheduler.",
)
def train(
    data,
    target,
    categorical,
    ignore,
    weight,
    task,
    criterion,
    max_depth,
    max_bins,
    min_samples_leaf,
    min_samples_split,
    max_leaf_nodes,
    categorical_split,
    ccp_alpha,
    forest,
    max_features,
    bootstrap,
    oob_score,
    device,
    random_state,
    text_format,
    output,
    scheduler,
    workers,
    connect_timeout,
):
    """Train a tree on DATA (.csv, .tsv, .parquet, .arff, .npz, .npy) and save it.

    With --forest N, a random forest of N trees (--max-features, --bootstrap/--no-bootstrap
    and --oob-score set it up), saved as one model file that predict, evaluate, export
    and info read as they read a tree's.

    CSV: the header names the columns (with --no-header they are x0, x1, ...); empty
    fields and ?, NA, N/A, nan are missing values (--na-values adds more); a column
    holding any text is categorical, each distinct text a category. .npz: arrays X, y
    and optionally feature_names. .npy: a 2-D array with --target a column index.

    With --scheduler or --workers, DATA is one or more CSV, TSV or Parquet files, globs
    (quoted: 'data/*.parquet') or folders of Parquet files, read by the Dask workers.
    """
    params = _tree_params(
        criterion,
        max_depth=max_depth,
        max_bins=max_bins,
        min_samples_leaf=min_samples_leaf,
        min_samples_split=min_samples_split,
        max_leaf_nodes=max_leaf_nodes,
        categorical_split=categorical_split,
        ccp_alpha=ccp_alpha,
        device=device,
        random_state=random_state,
    )
    forest_params = _forest_params(
        forest,
        max_features=max_features,
        bootstrap=bootstrap,
        oob_score=oob_score,
        scheduler=scheduler,
        workers=workers,
    )
    if scheduler is not None or workers is not None:
        return _train_distributed(
            data,
            target=target,
            categorical=categorical,
            ignore=ignore,
            weight=weight,
            task=task,
            params=params,
            text_format=text_format,
            output=output,
            scheduler=scheduler,
            workers=workers,
            connect_timeout=connect_timeout,
        )
    data = _one_data_file(data)
    check_writable(output, inputs=(data,))
    if target is None:
        if extension(data) != ".npz":
            raise click.UsageError("Missing option '--target' (the column to predict).")
        target = "y"
    categorical_specs, ignore_specs = split_specs(categorical), split_specs(ignore)
    found = {}

    def plan(names):
        kinds = [FEATURE] * len(names)  # text columns become categorical by themselves
        for spec in ignore_specs:
            kinds[resolve_column(spec, names, "column in --ignore")] = SKIP
        for spec in categorical_specs:
            kinds[resolve_column(spec, names, "column in --categorical")] = CATEGORY
        found["declared"] = {
            name for name, kind in zip(names, kinds, strict=True) if kind == CATEGORY
        }
        t = resolve_column(target, names, "target column")
        if kinds[t] == SKIP:
            raise ValueError(f"the target column {names[t]!r} is also in --ignore")
        if weight is not None:
            w = resolve_column(weight, names, "weight column")
            if w == t:
                raise ValueError(f"the weight column {names[w]!r} is also the target")
            if kinds[w] != FEATURE:
                option = "--ignore" if kinds[w] == SKIP else "--categorical"
                raise ValueError(f"the weight column {names[w]!r} is also in {option}")
            kinds[w] = NUMBER
            found["weight"] = names[w]
        if kinds[t] != CATEGORY:
            kinds[t] = TEXT
        found["target"] = names[t]
        return kinds

    table = _read(data, plan, "a weight column holds numbers only", text_format)
    target_column = table.column(found["target"])
    not_features = {found["target"], found.get("weight")}
    features = [c for c in table.columns if c.name not in not_features]
    if not features:
        raise ValueError(f"{data}: no feature columns besides the target {found['target']!r}")
    _check_text_of_numbers(table, features, found["declared"])
    y, task = _target_values(table, target_column, task)
    sample_weight = None
    if weight is not None:
        sample_weight = _sample_weights(table, table.column(found["weight"]))

    classifier_class, regressor_class = _estimator_classes(forest=forest_params is not None)
    estimator_class = classifier_class if task == "classification" else regressor_class
    categorical_features = [j for j, c in enumerate(features) if c.categorical]
    if categorical_features:
        # The columns found as the file was read (text, plus --categorical), by index, as
        # model files have always saved them (tests/test_model_snapshots.py).
        params["categorical_features"] = categorical_features
    X = feature_matrix(features)
    estimator = estimator_class(**params, **(forest_params or {}))
    name, (n_rows, n_columns) = estimator_class.__name__, X.shape
    logger.info("fitting %s on %s rows x %d features", name, f"{n_rows:,}", n_columns)
    start = time.perf_counter()
    _fit_on_columns(estimator, X, y, sample_weight, features, found["declared"])
    fit_seconds = time.perf_counter() - start
    # The command line knows the column names; the model file keeps them (a forest's
    # trees share them, as they would after a fit on a DataFrame).
    names = np.asarray([c.name for c in features], dtype=object)
    for fitted in (estimator, *getattr(estimator, "estimators_", ())):
        fitted.feature_names_in_ = names
    estimator.save(output)

    _report_training(
        estimator,
        source=data,
        n_rows=table.n_rows,
        n_features=len(features),
        n_categorical=len(categorical_features),
        target=found["target"],
        weight=found["weight"] if weight is not None else None,
        fitted_on=f"{fit_seconds:.3f} s on {estimator.device_}",
        output=output,
    )


def _check_text_of_numbers(table, features, declared):
    """Refuse a feature column found categorical because it held text (not one declared
    with --categorical, nor an ARFF nominal attribute) whose values are numbers but for a
    few (data.categorical.stray_text's rule): typos, far more likely than a categorical
    feature, which would silently have had a category for each of its numbers."""
    from gpu_tree.data.categorical import shown_values, stray_text

    for column in features:
        if not column.categorical or not column.is_text or column.nominal:
            continue
        if column.name in declared:
            continue
        distinct = [v for v in dict.fromkeys(column.values.tolist()) if v is not None]
        found = stray_text(column.values, distinct)
        if found is None:
            continue
        rows, words, n_present = found
        where = ", ".join(table.where(int(i)) for i in rows[:5]) + (" ..." if rows.size > 5 else "")
        raise ValueError(
            f"{table.source}: column {column.name!r} holds numbers but for {rows.size} of its "
            f"{n_present:,} values: {shown_values(words)} ({where}). Typos? Read as text, "
            f"each number would be a category of its own ({len(distinct):,} categories). "
            "Correct those values, mark them missing (--na-values "
            f"{shlex.quote(','.join(words))}), or declare the column categorical "
            f"(--categorical {shlex.quote(column.name)}) to keep every value as a category"
        )


def _fit_on_columns(estimator, X, y, sample_weight, features, declared):
    """Fit ``estimator`` on X, the array of the file's ``features`` columns: its messages
    name them (not by their position in X), and its warning of an identifier-like
    categorical column is shown as the command line's warnings are, with the option that
    leaves the column out, whatever -q or -v (the fit's other warnings: with -v only)."""
    from gpu_tree.data.categorical import IdLikeColumnWarning
    from gpu_tree.data.validation import columns_named

    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", IdLikeColumnWarning)
            with columns_named([c.name for c in features]):
                estimator.fit(X, y, sample_weight=sample_weight)
    finally:
        for warning in caught:
            if not isinstance(warning.message, IdLikeColumnWarning):
                warnings.showwarning(
                    warning.message, warning.category, warning.filename, warning.lineno
                )
                continue
            found = warning.message
            name = features[found.feature].name
            also = (
                ", or take it out of --categorical to use its numbers" if name in declared else ""
            )
            click.echo(
                f"gputree: warning: the categorical column {name!r} has "
                f"{found.n_categories:,} categories in {found.n_rows:,} rows: is it an "
                "identifier (an id, a name, free text)? Its splits would learn the training "
                "rows by heart and send new values down the missing-value path; leave it out "
                f"with --ignore {shlex.quote(name)}{also}",
                err=True,
            )


def _report_training(
    estimator, *, source, n_rows, n_features, n_categorical, target, weight, fitted_on, output
):
    """train's three lines: what was fitted on what, the tree (or the forest, and its
    out-of-bag score), where it was saved (and the fit's statistics with -v)."""
    what = "classification" if hasattr(estimator, "classes_") else "regression"
    if hasattr(estimator, "classes_"):
        what += f", {len(estimator.classes_)} classes ({_shown(estimator.classes_.tolist())})"
    weighted = f", weights from {weight!r}" if weight is not None else ""
    click.echo(
        f"trained {type(estimator).__name__} on {source}: {n_rows:,} rows, {n_features} "
        f"features ({n_categorical} categorical), target {target!r}{weighted}: {what}"
    )
    if _is_forest(estimator):
        sampled = "bootstrap samples" if estimator.bootstrap else "every row"
        click.echo(
            f"forest: {_forest_size(estimator)}; trees on {sampled}, max_features "
            f"{estimator.max_features!r}; fit {fitted_on}"
        )
        if hasattr(estimator, "oob_score_"):
            click.echo(f"out-of-bag score: {_oob_score(estimator)}")
    else:
        click.echo(
            f"tree: depth {estimator.get_depth()}, {estimator.get_n_leaves()} leaves, "
            f"{estimator.tree_.node_count} nodes; fit {fitted_on}"
        )
    click.echo(f"model saved to {output}")
    if _Main.verbose and hasattr(estimator, "fit_stats_"):  # a forest's trees keep none
        click.echo(_fit_stats_table(estimator), err=True)


def _forest_size(forest) -> str:
    """A forest's trees, their depths and sizes, in words."""
    trees = [e.tree_ for e in forest.estimators_]
    low, high = min(t.max_depth for t in trees), max(t.max_depth for t in trees)
    depth = f"depth {low}" if low == high else f"depths {low} to {high}"
    leaves, nodes = sum(t.n_leaves for t in trees), sum(t.node_count for t in trees)
    return f"{len(trees)} trees, {depth}, {leaves:,} leaves and {nodes:,} nodes in all"


def _oob_score(forest) -> str:
    """The out-of-bag score and its measure ("n/a": R^2 of a target without spread)."""
    score = float(forest.oob_score_)
    measure = "accuracy" if _is_classifier(forest) else "R^2"
    return f"{'n/a' if np.isnan(score) else f'{score:.4f}'} ({measure})"


def _train_distributed(
    data,
    *,
    target,
    categorical,
    ignore,
    weight,
    task,
    params,
    text_format,
    output,
    scheduler,
    workers,
    connect_timeout,
):
    """train --scheduler / --workers: the same columns, rules, model file and report as a
    single-file train, on rows the Dask workers read (gpu_tree.app.distributed)."""
    from gpu_tree.app import distributed

    if scheduler is not None and workers is not None:
        raise click.UsageError(
            "--scheduler and --workers exclude each other: --scheduler uses a running "
            "cluster, --workers starts one"
        )
    if target is None:
        raise click.UsageError("Missing option '--target' (the column to predict).")
    distributed.require_dask()
    if scheduler is not None:
        distributed.check_scheduler_address(scheduler)
    files = distributed.find_data_files(data)
    check_writable(output, inputs=files.files)
    table = distributed.read_files(files, **text_format)
    source, names = table.source, table.names

    def resolved(spec, what):
        try:
            return names[resolve_column(spec, names, what)]
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None

    ignored = {resolved(spec, "column in --ignore") for spec in split_specs(ignore)}
    declared = {resolved(spec, "column in --categorical") for spec in split_specs(categorical)}
    target_name = resolved(target, "target column")
    if target_name in ignored:
        raise ValueError(f"{source}: the target column {target_name!r} is also in --ignore")
    weight_name = None
    if weight is not None:
        weight_name = resolved(weight, "weight column")
        if weight_name == target_name:
            raise ValueError(f"{source}: the weight column {weight_name!r} is also the target")
        for option, columns in (("--ignore", ignored), ("--categorical", declared)):
            if weight_name in columns:
                raise ValueError(f"{source}: the weight column {weight_name!r} is also in {option}")
    features = [n for n in names if n not in ignored | {target_name, weight_name}]
    if not features:
        raise ValueError(f"{source}: no feature columns besides the target {target_name!r}")
    distributed.check_column_types(table, [*features, target_name, weight_name or target_name])

    try:
        local, fitted = _fit_on_workers(
            distributed,
            table,
            scheduler=scheduler,
            workers=workers,
            connect_timeout=connect_timeout,
            features=features,
            declared=declared,
            target_name=target_name,
            weight_name=weight_name,
            task=task,
            params=params,
        )
    except distributed.lost_worker_errors() as exc:
        raise click.ClickException(
            f"a Dask worker was lost during training ({_one_line(exc)}); train again"
        ) from None
    task, where, target_summary, fit_seconds, n_workers, categorical_features = fitted
    classes = getattr(local, "classes_", None)
    if classes is not None and classes.dtype == object:
        if all(isinstance(label, str) for label in classes.tolist()):
            # Text labels reach the workers in pandas (object); a single-file train gives
            # them as a numpy str array, which the model file records: the same file.
            local.classes_ = np.asarray(classes.tolist(), dtype=str)
    local.save(output)

    _report_training(
        local,
        source=f"{source} with {where}",
        n_rows=target_summary.rows,
        n_features=len(features),
        n_categorical=len(categorical_features),
        target=target_name,
        weight=weight_name,
        fitted_on=f"{fit_seconds:.3f} s on {n_workers} worker(s)",
        output=output,
    )


def _fit_on_workers(
    distributed,
    table,
    *,
    scheduler,
    workers,
    connect_timeout,
    features,
    declared,
    target_name,
    weight_name,
    task,
    params,
):
    """Connect (or start the cluster), type and check the columns on the workers, fit.
    Returns the in-memory estimator and what train reports: (task, the cluster in words,
    the target's ColumnSummary, fit seconds, workers used, categorical feature indices)."""
    source = table.source
    with distributed.dask_client(scheduler, workers, connect_timeout, _Main.verbose) as (
        client,
        where,
    ):
        logger.info("reading %s on %s", source, where)
        start = time.perf_counter()
        # CSV: the columns that hold text are categorical, as in a single-file train; a
        # column given to --categorical is taken as text (its values' spelling) there too.
        numbers_read_as_text = table.text_file
        undecided = [n for n in features if not (numbers_read_as_text and n in declared)]
        text_features = distributed.typed_columns(client, table, undecided)
        if numbers_read_as_text:
            text_features |= declared & set(features)
        summaries = distributed.summarize_columns(
            client, table, [target_name] + ([weight_name] if weight_name else [])
        )
        logger.info("summarised the columns (%.2f s)", time.perf_counter() - start)
        target_summary = summaries[0]
        target_is_category = target_name in table.text_columns or target_name in declared
        task, target_kind = _distributed_target(
            source, target_name, target_summary, task, target_is_category, numbers_read_as_text
        )
        if weight_name is not None:
            _check_distributed_weights(source, weight_name, summaries[1])
        categorical_features = [
            j for j, n in enumerate(features) if n in text_features or n in declared
        ]
        if categorical_features:
            params["categorical_features"] = categorical_features
        plan = distributed.PartitionPlan(
            features=tuple(features),
            text_features=frozenset(text_features),
            target=target_name,
            target_kind=target_kind,
            weight=weight_name,
            text_file=table.text_file,
            missing=table.missing,
        )
        frame = distributed.prepared_frame(table, plan)
        estimator = _distributed_estimator(task)(**params)
        logger.info("fitting %s on %s", type(estimator).__name__, where)
        start = time.perf_counter()
        try:
            estimator.fit(
                frame[features],
                frame[target_name],
                None if weight_name is None else frame[weight_name],
                client=client,
            )
        except NotImplementedError as exc:
            raise click.UsageError(
                _not_distributable(exc, features, categorical_features)
            ) from None
        fit_seconds = time.perf_counter() - start
        n_workers = estimator.distributed_stats_["n_workers"]
    fitted = (task, where, target_summary, fit_seconds, n_workers, categorical_features)
    return estimator.to_local(), fitted


def _distributed_estimator(task):
    from gpu_tree.dask import DecisionTreeClassifier, DecisionTreeRegressor

    return DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor


def _distributed_target(source, name, summary, task, is_category, read_as_text):
    """(task, how the target's values are given to the estimator: "int", "float" or
    "label") by _target_values' rules, from a summary of the column."""
    if summary.missing:
        raise ValueError(
            f"{source}: the target column {name!r} has {summary.missing} missing value(s); "
            "remove those rows"
        )
    if task == "auto":
        if not summary.numeric or is_category:
            task = "classification"
        else:
            n_distinct = MAX_AUTO_CLASSES + 1 if summary.distinct is None else len(summary.distinct)
            task = auto_task_of_numbers(summary.whole, n_distinct, summary.rows)
    if task == "regression":
        if summary.text_value is not None:
            raise ValueError(
                f"{source}: the target column {name!r} holds {summary.text_value!r}; "
                "--task regression needs numbers"
            )
        return task, "float"
    if not summary.numeric or is_category and read_as_text:
        return task, "label"
    if summary.whole and summary.max_abs < 2**53:
        return task, "int"
    return task, "float"


def _check_distributed_weights(source, name, summary):
    """The weight column's values by the estimators' rule (finite, non-negative, not all
    zero), as _sample_weights checks them in a single-file train."""
    if summary.text_value is not None:
        raise ValueError(
            f"{source}: the weight column {name!r} holds {summary.text_value!r}; a weight "
            "column holds numbers only"
        )
    shown = None
    if summary.missing:
        shown = "a missing value"
    elif summary.non_finite:
        shown = "an infinite value"
    elif summary.negative is not None:
        shown = repr(summary.negative)
    if shown is not None:
        raise ValueError(
            f"{source}: the weight column {name!r} holds {shown}; weights must be finite, "
            "non-negative numbers"
        )
    if not summary.any_positive:
        raise ValueError(f"{source}: every weight in the column {name!r} is 0")


def _not_distributable(exc, features, categorical_features) -> str:
    """What a NotImplementedError of gpu_tree.dask means in train's options."""
    reason = _one_line(exc)
    if categorical_features:
        shown = _shown([repr(features[j]) for j in categorical_features], 5)
        return (
            f"--scheduler/--workers: categorical features ({shown}: columns of text, or in "
            f"--categorical) cannot be trained on distributed yet ({reason}); leave them out "
            "with --ignore, or train without --scheduler/--workers"
        )
    return f"--scheduler/--workers: distributed training cannot do this yet: {reason}"


def _tree_params(criterion, *, ccp_alpha, **given) -> dict:
    """The estimator's parameters from train's options (criterion and ccp_alpha only
    when given, so that the estimator's defaults apply)."""
    params = dict(given)
    if criterion is not None:
        params["criterion"] = criterion
    if ccp_alpha is not None:
        params["ccp_alpha"] = ccp_alpha
    return params


def _one_data_file(data) -> str:
    """Without --scheduler or --workers, train reads one existing file, as it always has."""
    if len(data) != 1:
        raise click.UsageError(
            f"train reads one data file (got {len(data)}: {_shown(data, 3)}); several "
            "files, globs and folders are for --workers N or --scheduler ADDRESS"
        )
    try:
        return _DATA.convert(data[0], None, click.get_current_context())
    except click.BadParameter as exc:
        exc.param_hint = "'DATA'"
        raise


def _fit_stats_table(estimator) -> str:
    """``fit_stats_`` as a table: per level (and the set-up before level 0), what the
    device was asked to do."""
    from gpu_tree.utils.fit_stats import COUNTS

    # The short names of the counts, in COUNTS' order.
    header = ("level", "nodes", "launches", "d2h", "d2h bytes", "h2d", "h2d bytes", "rows read")
    # A distributed fit has no set-up entry: its work before level 0 runs on the workers.
    setup = getattr(estimator, "fit_setup_stats_", None)
    entries = [("set-up", setup)] if setup is not None else []
    entries += [(str(entry["level"]), entry) for entry in estimator.fit_stats_]
    rows = [header]
    for name, entry in entries:
        seconds = ", ".join(f"{phase} {s * 1e3:.1f} ms" for phase, s in entry["seconds"].items())
        rows.append((name, *(f"{entry[key]:,}" for key in COUNTS), seconds))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["fit statistics (per level; copies count on the GPU only):"]
    for row in rows:
        cells = [cell.rjust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  " + "  ".join(cells) + ("  " + row[-1] if len(row) > len(header) else ""))
    return "\n".join(lines)


# -- predict -----------------------------------------------------------------------------------
@main.command(short_help="Predict a data file's rows with a model.")
@_verbosity_options
@click.argument("model", type=_DATA)
@click.argument("data", type=_DATA)
@click.option(
    "-o",
    "--output",
    default="-",
    metavar="PREDICTIONS.csv",
    help="Where to write the predictions (CSV); - or none: standard output.",
)
@click.option(
    "--proba",
    is_flag=True,
    help="Also write each class's probability (proba_CLASS; a multi-output model's, "
    "proba_OUTPUT_CLASS for each output and class).",
)
@click.option(
    "--id",
    "id_column",
    metavar="COL",
    help="A column of row ids, copied as the predictions' first column (not a feature).",
)
@_text_format_options
def predict(model, data, output, proba, id_column, text_format):
    """Predict DATA's rows with MODEL (a model file from gputree train).

    Columns are matched to the model's features by name (files without names, by
    position); other columns, the target among them, are ignored. The predictions go
    to standard output unless -o names a file. A multi-output model (fitted in Python
    on a 2-D y) gets a column per output, prediction_0, prediction_1, ...
    """
    if output != "-":
        check_writable(output, inputs=(model, data))
    estimator = _load(model)
    if proba and not _is_classifier(estimator):
        raise click.UsageError("--proba needs a classification model; this one is a regressor")
    table, X, chosen = _read_for_model(
        estimator, data, id_column, TEXT, text_format=text_format, role="id"
    )
    predicted = _predict(estimator, X)
    several = _n_outputs(estimator) > 1
    if several:  # (n_rows, n_outputs): a column per output
        outputs = _output_names(estimator)
        header = [f"prediction_{name}" for name in outputs]
        columns = [predicted[:, k].tolist() for k in range(len(outputs))]
    else:
        header = ["prediction"]
        columns = [predicted.tolist()]
    if id_column is not None:  # missing ids are written as empty fields
        header.insert(0, chosen["target"])
        columns.insert(0, table.column(chosen["target"]).values.tolist())
    if proba:
        probabilities = _predict(estimator, X, proba=True)
        if not several:
            probabilities, outputs = [probabilities], [None]
        for name, labels, values in zip(
            outputs, _classes_per_output(estimator), probabilities, strict=True
        ):
            prefix = "proba_" if name is None else f"proba_{name}_"
            header += [f"{prefix}{label}" for label in labels.tolist()]
            columns += [values[:, k].tolist() for k in range(values.shape[1])]
    rows = zip(*columns, strict=True)
    if output == "-":
        writer = csv.writer(_standard_output("the predictions"), lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return
    with atomic_text(output) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    click.echo(f"{table.n_rows:,} predictions written to {output}")


# -- evaluate ----------------------------------------------------------------------------------
def _rate(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _print_classification(metrics):
    labels = [str(label) for label in metrics["labels"]]
    matrix = metrics["confusion_matrix"]
    click.echo(
        f"accuracy: {_rate(metrics['accuracy'])} ({metrics['n_correct']:,} of "
        f"{metrics['n_rows']:,} rows)"
    )
    click.echo("")
    click.echo("confusion matrix (rows: true class, columns: predicted class)")
    corner = "true \\ predicted"
    first = max(len(corner), *(len(label) for label in labels))
    widths = [
        max(len(label), *(len(str(row[k])) for row in matrix)) for k, label in enumerate(labels)
    ]
    click.echo(
        corner.ljust(first)
        + "".join(f"  {label:>{w}}" for label, w in zip(labels, widths, strict=True))
    )
    for label, row in zip(labels, matrix, strict=True):
        click.echo(
            label.ljust(first) + "".join(f"  {v:>{w}}" for v, w in zip(row, widths, strict=True))
        )
    click.echo("")
    click.echo("per class, against the rest:")
    first = max(len("class"), *(len(label) for label in labels))
    click.echo(
        f"{'class':<{first}}  {'support':>8}  {'sensitivity':>11}  {'specificity':>11}  "
        f"{'PPV':>7}  {'NPV':>7}  {'F1':>7}  {'ROC AUC':>7}"
    )
    for label, rates in zip(labels, metrics["per_class"], strict=True):
        click.echo(
            f"{label:<{first}}  {rates['support']:>8}  {_rate(rates['sensitivity']):>11}  "
            f"{_rate(rates['specificity']):>11}  {_rate(rates['ppv']):>7}  {_rate(rates['npv']):>7}"
            f"  {_rate(rates['f1']):>7}  {_rate(rates['roc_auc']):>7}"
        )
    click.echo("")
    click.echo(f"macro F1: {_rate(metrics['macro_f1'])}")
    unscored = metrics["probability_metrics_skipped"]
    why = f" ({unscored})" if unscored else ""
    click.echo(
        f"ROC AUC (macro, each class against the rest): {_rate(metrics['macro_roc_auc'])}{why}"
    )
    click.echo(f"log-loss: {_rate(metrics['log_loss'])}{why}")


def _write_json(path, document):
    text = json.dumps(document, indent=2, allow_nan=False)
    with atomic_text(path) as out:
        out.write(text + "\n")


def _evaluation_targets(given, n_outputs, model, data) -> list[str]:
    """evaluate's -t values as the columns of true values to read: one for a one-output
    model (as given: a name with a comma is one name), one per output, in the outputs'
    order, for a multi-output model (-t repeated, or a comma-separated list)."""
    if n_outputs == 1:
        if len(given) > 1:
            raise click.UsageError(
                f"{model} predicts one output: give one -t (the column of true values), "
                f"not {len(given)} ({_shown([repr(spec) for spec in given])})"
            )
        if not given:
            if extension(data) != ".npz":
                raise click.UsageError("Missing option '--target' (the column of true values).")
            return ["y"]
        return list(given)
    specs = split_specs(given)
    if len(specs) != n_outputs:
        got = f"got {len(specs)} ({_shown([repr(spec) for spec in specs])})" if specs else ""
        raise click.UsageError(
            ("" if specs else "Missing option '--target': ")
            + f"{model} predicts {n_outputs} outputs (a multi-output model): give the "
            f"{n_outputs} columns of their true values in the outputs' order, "
            + " ".join(["-t COL"] * n_outputs)
            + " (or -t "
            + ",".join(["COL"] * n_outputs)
            + ")"
            + (f"; {got}" if got else "")
        )
    return specs


_BOOLEAN_WORDS = {"true": True, "false": False}


def _boolean_label(value):
    """A target value as a boolean class's label: True and False in any case, and 1 and 0
    (a Parquet or .npz boolean column reads as numbers), as text or numbers; any other
    value as it is, a label the model never saw."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[value.strip().lower()]
    number = _number_or_none(value)
    return bool(number) if number in (0.0, 1.0) else value


def _true_labels(column, table, labels):
    """A target column's values as a classifier's true labels: booleans where the model's
    classes (``labels``, one output's) are booleans (a model fitted in Python on a bool
    y: no file holds them as such, and their text "True" is not the label True), numbers
    where they are numbers, else text. The flag: labels compare as values, not as text."""
    if labels and all(isinstance(v, (bool, np.bool_)) for v in labels):
        return np.asarray([_boolean_label(v) for v in column.values.tolist()], dtype=object), True
    kinds = {
        "number" if isinstance(v, numbers.Number) and not isinstance(v, (bool, np.bool_)) else ""
        for v in labels
    }
    if kinds != {"number"}:
        return np.asarray([str(v) for v in column.values.tolist()], dtype=object), False
    y_true = _as_numbers(column, table, "the model's classes are numbers")
    integral = all(isinstance(v, numbers.Integral) for v in labels)
    if integral and np.all(y_true == np.round(y_true)):
        return y_true.astype(np.int64), True
    return y_true, True


def _score_classes(labels, column, table, predicted, probabilities):
    """One output's classification metrics (accuracy, confusion matrix, per-class rates,
    and from ``probabilities()`` — its (n_rows, n_classes) matrix, asked for only when
    every true label is one of the model's — log-loss and ROC AUC), and each row's
    correctness. Rows whose label the model never saw count as errors, with a warning;
    none seen is an error."""
    from gpu_tree.app.metrics import classification_metrics, probability_metrics
    from gpu_tree.data.categorical import label_codes

    labels = labels.tolist()
    y_true, as_values = _true_labels(column, table, labels)
    known = set(labels) if as_values else {str(label) for label in labels}
    extra = sorted({v for v in y_true.tolist() if v not in known}, key=str)
    metrics = classification_metrics(y_true, predicted, labels + extra)
    true_codes = label_codes(y_true, labels + extra)
    if extra and (true_codes >= len(labels)).all():
        raise click.ClickException(
            f"none of the {table.n_rows:,} rows has a target label the model saw in "
            f"training: column {column.name!r} holds {_shown(extra)}, the model's "
            f"classes are {_shown(labels)} (is it the right column, and are the labels "
            "written the same way?)"
        )
    if extra:  # probabilities have no column for an unseen label
        skipped = "some labels were never seen in training"
        scored = {"log_loss": None, "roc_auc_per_class": [], "macro_roc_auc": None}
    else:
        skipped = None
        scored = probability_metrics(true_codes, probabilities())
    aucs = scored.pop("roc_auc_per_class")
    aucs += [None] * (len(metrics["per_class"]) - len(aucs))  # unseen labels: none
    for rates, auc in zip(metrics["per_class"], aucs, strict=True):
        rates["roc_auc"] = auc
    metrics.update(scored, probability_metrics_skipped=skipped)
    if extra:
        # Usually a labelling difference between files (adult's test set writes
        # "<=50K." where its training set has "<=50K"), which no metric would reveal.
        unseen_rows = sum(rates["support"] for rates in metrics["per_class"][len(labels) :])
        click.echo(
            f"gputree: warning: {unseen_rows:,} of {table.n_rows:,} rows have a target "
            f"label the model never saw in training ({_shown(extra)}; the model's classes: "
            f"{_shown(labels)}) in column {column.name!r}; they count as errors",
            err=True,
        )
    correct = true_codes == label_codes(predicted, labels + extra)
    return metrics, correct


def _labelled(metrics) -> dict:
    """Classification metrics for the JSON file: each class's rates with its label."""
    for label, rates in zip(metrics["labels"], metrics["per_class"], strict=True):
        rates["label"] = label
    return metrics


@main.command(short_help="Score a model on data with true values.")
@_verbosity_options
@click.argument("model", type=_DATA)
@click.argument("data", type=_DATA)
@click.option(
    "-t",
    "--target",
    "targets",
    metavar="COL",
    multiple=True,
    help="The column of true values: a name or an index (.npz default: y). A multi-output "
    "model's: one per output, in the outputs' order (-t COL -t COL, or -t COL,COL).",
)
@click.option("--json", "json_path", metavar="PATH", help="Also save the metrics as JSON.")
@_text_format_options
def evaluate(model, data, targets, json_path, text_format):
    """Score MODEL on DATA, whose TARGET column holds the true values.

    Classification: accuracy, confusion matrix, and per class (against the rest)
    sensitivity TP/(TP+FN), specificity TN/(TN+FP), PPV TP/(TP+FP), NPV TN/(TN+FN),
    F1 2TP/(2TP+FP+FN) and ROC AUC from the predicted probabilities, "n/a" where a
    ratio is 0/0; macro F1, macro ROC AUC and log-loss. Rows whose label the model never
    saw count as errors (with a warning); if no row's label was seen, it fails.
    Regression: R^2, MAE and RMSE.

    A multi-output model (fitted in Python on a 2-D y) takes one TARGET per output, in
    the outputs' order; each output is scored (accuracy, or R^2; all its metrics with
    --json), and so is the whole as scikit-learn's score does: the share of rows whose
    every output is right, or the outputs' R^2 averaged.
    """
    from gpu_tree.app.metrics import regression_metrics

    if json_path:
        check_writable(json_path, inputs=(model, data))
    estimator = _load(model)
    n_outputs = _n_outputs(estimator)
    targets = _evaluation_targets(targets, n_outputs, model, data)
    classifier = _is_classifier(estimator)
    table, X, chosen = _read_for_model(estimator, data, targets, TEXT, text_format)
    columns = [table.column(name) for name in chosen["targets"]]
    for column in columns:
        _check_target_present(table, column)
    if n_outputs > 1:
        return _evaluate_outputs(estimator, X, table, columns, model, data, json_path)
    (column,) = columns
    predicted = _predict(estimator, X)
    if not classifier:
        y_true = _as_numbers(column, table, "a regression model needs numbers")
        metrics = regression_metrics(y_true, predicted)
    else:
        metrics, _ = _score_classes(
            estimator.classes_, column, table, predicted, lambda: _predict(estimator, X, True)
        )
    shown = f"{metrics['task']}"
    if classifier:
        shown += f", {len(estimator.classes_)} classes"
    click.echo(
        f"evaluated {model} on {data}: {table.n_rows:,} rows, target {chosen['target']!r}, {shown}"
    )
    if classifier:
        _print_classification(metrics)
    else:
        click.echo(f"R^2:  {_rate(metrics['r2'])}")
        click.echo(f"MAE:  {metrics['mae']:.6g}")
        click.echo(f"RMSE: {metrics['rmse']:.6g}")
    if json_path:
        document = {"model": str(model), "data": str(data), "target": chosen["target"], **metrics}
        if classifier:
            _labelled(document)
        _write_json(json_path, document)
        click.echo(f"metrics saved to {json_path}")


def _evaluate_outputs(estimator, X, table, columns, model, data, json_path):
    """evaluate for a multi-output model: each output against its column (accuracy, or
    R^2, MAE and RMSE; all of an output's metrics in the JSON file), then the model as
    scikit-learn's ``score`` scores it: subset accuracy (the rows whose every output is
    right), or R^2 averaged over the outputs."""
    from gpu_tree.app.metrics import multi_output_r2, regression_metrics, subset_accuracy

    classifier = _is_classifier(estimator)
    predicted = _predict(estimator, X)  # (n_rows, n_outputs)
    names = [column.name for column in columns]
    outputs = []
    if classifier:
        probabilities = []  # every output's, predicted once when the first is asked for

        def of_output(k):
            if not probabilities:
                probabilities.extend(_predict(estimator, X, proba=True))
            return probabilities[k]

        correct = []
        for k, (labels, column) in enumerate(
            zip(_classes_per_output(estimator), columns, strict=True)
        ):
            metrics, right = _score_classes(
                labels, column, table, predicted[:, k], functools.partial(of_output, k)
            )
            outputs.append(_labelled(metrics))
            correct.append(right)
        score = subset_accuracy(np.column_stack(correct))
        measure = "subset accuracy: every output right"
        shown_score = (
            f"{_rate(score['accuracy'])} ({score['n_correct']:,} of {score['n_rows']:,} rows)"
        )
        score = score["accuracy"]
    else:
        truth = []
        for k, column in enumerate(columns):
            y_true = _as_numbers(column, table, "a regression model needs numbers")
            outputs.append(regression_metrics(y_true, predicted[:, k]))
            truth.append(y_true)
        score = multi_output_r2(np.column_stack(truth), predicted)
        measure = "R^2 averaged over the outputs"
        shown_score = _rate(score)
    task = "classification" if classifier else "regression"
    click.echo(
        f"evaluated {model} on {data}: {table.n_rows:,} rows, targets "
        f"{', '.join(repr(n) for n in names)} ({len(names)} outputs), {task}"
    )
    for output, name, metrics in zip(_output_names(estimator), names, outputs, strict=True):
        if classifier:
            what = (
                f"accuracy {_rate(metrics['accuracy'])} ({metrics['n_correct']:,} of "
                f"{metrics['n_rows']:,} rows), macro F1 {_rate(metrics['macro_f1'])}, "
                f"{len(metrics['labels'])} classes"
            )
        else:
            what = (
                f"R^2 {_rate(metrics['r2'])}, MAE {metrics['mae']:.6g}, RMSE {metrics['rmse']:.6g}"
            )
        click.echo(f"output {output}, target {name!r}: {what}")
    click.echo(f"score ({measure}): {shown_score}")
    if json_path:
        document = {
            "model": str(model),
            "data": str(data),
            "targets": names,
            "task": task,
            "n_rows": table.n_rows,
            "n_outputs": len(names),
            "outputs": [
                {"output": k, "target": name, **metrics}
                for k, (name, metrics) in enumerate(zip(names, outputs, strict=True))
            ],
            "score": score,
            "score_measure": measure,
        }
        _write_json(json_path, document)
        click.echo(f"metrics saved to {json_path}")


# -- export ------------------------------------------------------------------------------------
def _names(estimator):
    names = getattr(estimator, "feature_names_in_", None)
    feature_names = None if names is None else [str(n) for n in names]
    class_names = None  # a multi-output tree's nodes are labelled by each output's classes_
    if _is_classifier(estimator) and _n_outputs(estimator) == 1:
        class_names = [str(c) for c in estimator.classes_]
    return feature_names, class_names


@main.command(short_help="Show a model's tree as text, DOT or PNG.")
@_verbosity_options
@click.argument("model", type=_DATA)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "png"]),
    default="text",
    show_default=True,
    help=(
        "text: indented rules; dot: Graphviz source; png: a drawing sized to the tree, by "
        "Graphviz's dot where installed, else matplotlib (at most 64 leaf boxes: cut "
        "bigger trees with --max-depth)."
    ),
)
@click.option("-o", "--output", metavar="PATH", help="Output file (text and dot: default stdout).")
@click.option(
    "--max-depth",
    type=click.IntRange(min=0),
    default=None,
    help="Deepest level shown (default: the whole tree).",
)
@click.option("--decimals", type=click.IntRange(0, 17), default=2, show_default=True)
@click.option(
    "--filled/--no-filled",
    default=True,
    show_default=True,
    help="dot and png: colour nodes by their class or value.",
)
@click.option(
    "--tree",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="A forest's tree to show, by its number (0 to the trees less 1); required for a forest.",
)
def export(model, fmt, output, max_depth, decimals, filled, tree):
    """Show MODEL's tree as text, Graphviz DOT or a PNG drawing (a forest's tree N with
    --tree N)."""
    if fmt == "png" and not output:
        raise click.UsageError("--format png needs -o PATH.png")
    if output:
        check_writable(output, inputs=(model,))
    if fmt == "png":
        import shutil

        # Graphviz's dot draws the PNG where it is installed, matplotlib otherwise.
        if shutil.which("dot") is None:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise ImportError(
                    "--format png needs Graphviz's dot program or matplotlib: install "
                    f"Graphviz, or {PLOT_HINT}"
                ) from None
    from gpu_tree.model.export import (
        TreeTooLargeToDraw,
        export_graphviz,
        export_png,
        export_text,
    )

    loaded = _load(model)
    estimator = _chosen_tree(loaded, tree, model)
    feature_names, class_names = _names(estimator)
    if feature_names is None:  # the command's names of unnamed features (x0, x1, ...)
        feature_names = [f"x{j}" for j in range(estimator.tree_.n_features)]
    depth_shown = max_depth if max_depth is not None else estimator.get_depth()
    if fmt == "text":
        text = export_text(
            estimator,
            feature_names=feature_names,
            max_depth=depth_shown,
            decimals=decimals,
            show_missing=True,
        )
    elif fmt == "dot":
        text = export_graphviz(
            estimator,
            feature_names=feature_names,
            class_names=class_names,
            filled=filled,
            max_depth=max_depth,
            precision=decimals,
        )
    else:
        start = time.perf_counter()
        logger.info("drawing %s", output, extra=step("drawing", 0, 1, unit="picture"))
        try:
            renderer = export_png(
                estimator,
                output,
                feature_names=feature_names,
                class_names=class_names,
                filled=filled,
                max_depth=max_depth,
                precision=decimals,
            )
        except TreeTooLargeToDraw as error:  # refused before drawing: say it in options
            raise ValueError(error.advice("--max-depth ", "--format text or dot")) from None
        drawn_by = "Graphviz's dot" if renderer == "dot" else "matplotlib"
        logger.info(
            "drawn by %s (%.2f s)",
            drawn_by,
            time.perf_counter() - start,
            extra=step("drawing", 1, 1, unit="picture", done=True),
        )
        click.echo(f"tree drawn to {output} (by {drawn_by})")
        return
    if output:
        with atomic_text(output) as out:
            out.write(text)
        click.echo(f"{fmt} written to {output}")
    else:
        click.echo(text, nl=not text.endswith("\n"))


# -- info --------------------------------------------------------------------------------------
@main.command(short_help="Describe a model file.")
@_verbosity_options
@click.argument("model", type=_DATA)
@click.option(
    "--tree",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="A forest's tree to describe too, by its number (0 to the trees less 1).",
)
def info(model, tree):
    """Describe MODEL: format, versions, parameters, tree size (a forest's trees, and with
    --tree N that tree's), features, classes, device."""
    from gpu_tree.model import saved
    from gpu_tree.model.file_format import read_model_document

    document = read_model_document(model)  # read and parsed once
    estimator = saved.model_from_document(document, str(model))  # validates it all
    rows = [
        ("model file", str(model)),
        ("format", f"{document.get('format')} version {document.get('format_version')}"),
        ("written by", f"gpu_tree {document.get('library_version')}"),
        ("estimator", type(estimator).__name__),
        ("trained on", estimator.device_),
    ]
    if _is_forest(estimator):
        rows.append(("forest", _forest_size(estimator)))
        if hasattr(estimator, "oob_score_"):
            rows.append(("out-of-bag score", _oob_score(estimator)))
    if tree is not None or not _is_forest(estimator):
        shown = _chosen_tree(estimator, tree, model)
        rows.append(
            (
                "tree" if tree is None else f"tree {tree}",
                f"depth {shown.get_depth()}, {shown.get_n_leaves()} leaves, "
                f"{shown.tree_.node_count} nodes",
            )
        )
    if _n_outputs(estimator) > 1:
        rows.append(("outputs", f"{_n_outputs(estimator)} (a multi-output model)"))
    if _is_classifier(estimator):
        per_output = _classes_per_output(estimator)
        names = _output_names(estimator) if len(per_output) > 1 else [None]
        for name, labels in zip(names, per_output, strict=True):
            rows.append(
                (
                    "classes" if name is None else f"classes of output {name}",
                    f"{len(labels)}: {_shown(labels.tolist(), 30)}",
                )
            )
    width = max(len(key) for key, _ in rows) + 1
    for key, value in rows:
        click.echo(f"{key + ':':<{width}} {value}")
    click.echo("parameters:")
    for key, value in sorted(estimator.get_params().items()):
        click.echo(f"  {key} = {value!r}")
    names = getattr(estimator, "feature_names_in_", None)
    names = [f"x{j}" for j in range(estimator.n_features_in_)] if names is None else list(names)
    categories = getattr(_learned(estimator), "categories_", None) or [None] * len(names)
    n_categorical = sum(c is not None for c in categories)
    click.echo(f"features: {len(names)} ({n_categorical} categorical)")
    name_width = max(len(str(n)) for n in names)
    for name, values in zip(names, categories, strict=True):
        if values is None:
            click.echo(f"  {str(name):<{name_width}}  numeric")
        else:
            click.echo(
                f"  {str(name):<{name_width}}  categorical, {len(values)} categories "
                f"({_shown(list(values), 8)})"
            )


# -- warm-up -----------------------------------------------------------------------------------
@main.command("warm-up", short_help="Compile the CPU kernels ahead of the first fit.")
def warm_up():
    """Compile and cache the CPU kernels that training, prediction and ``gputree bench``
    use, so that later commands start without compiling: for a Docker image's build, a
    CI cache or a notebook server. It trains and predicts small and large synthetic files
    through this command line; minutes on a fresh install, seconds once cached."""
    from gpu_tree.app.warm_up import main as run_warm_up

    run_warm_up(main)


# -- bench -------------------------------------------------------------------------------------
@main.command(short_help="Time gpu_tree and the installed peers.")
@_verbosity_options
@click.option(
    "--rows",
    type=click.IntRange(min=100),
    default=None,
    help="Rows of the built-in Higgs-shaped dataset (80% train, 20% test). Default: "
    "sized for this machine: 100,000 per CPU core within 100,000..1,000,000 "
    "on the CPU, 2,000,000 on a GPU, less when memory is short.",
)
@click.option("--features", default=28, show_default=True, type=click.IntRange(min=2))
@click.option("--classes", default=2, show_default=True, type=click.IntRange(2, 1000))
@click.option("--depth", default=10, show_default=True, type=click.IntRange(1, 30))
@click.option("--bins", default=256, show_default=True, type=click.IntRange(2, 65535))
@click.option("--criterion", default="gini", show_default=True)
@click.option(
    "--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"])
)
@click.option(
    "--repeats",
    default=3,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Fits per model, the median reported (a model is fitted again only while its "
    "fits so far took under 5 s in all).",
)
@click.option(
    "--peers/--no-peers",
    default=True,
    show_default=True,
    help="Also time every installed peer: scikit-learn's DecisionTreeClassifier and "
    "HistGradientBoosting (1 iteration), LightGBM and XGBoost (1 round), cuML.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the dataset.")
@click.option(
    "--forest",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Time random forests of N trees (max_features 'sqrt') instead of one tree, against "
    "the installed forest peers: scikit-learn's RandomForestClassifier, LightGBM's and "
    "XGBoost's random forests, cuML's on a GPU.",
)
@click.option("--json", "json_path", metavar="PATH", help="Save every number as JSON.")
@click.option(
    "--plot",
    "plot_path",
    metavar="PATH.png",
    help="Draw the peers' time ratios (needs matplotlib).",
)
def bench(
    rows,
    features,
    classes,
    depth,
    bins,
    criterion,
    device,
    repeats,
    peers,
    seed,
    forest,
    json_path,
    plot_path,
):
    """Time gpu_tree, and the installed peers, on a built-in Higgs-shaped dataset.

    Exits with status 2, after the table, when gpu_tree's test accuracy is more than 1
    point below the best peer's (more on a test set too small to tell 1 point), or, when
    no peer ran, below the floor the dataset's known signal guarantees a depth-10 tree.
    """
    from gpu_tree.app import bench as _bench
    from gpu_tree.app.machine import machine_info
    from gpu_tree.backends.devices import resolve_device
    from gpu_tree.datasets import make_higgs_like
    from gpu_tree.ensemble import RandomForestClassifier
    from gpu_tree.estimators.tree import DecisionTreeClassifier

    for path in (json_path, plot_path):
        if path:
            check_writable(path)
    if plot_path:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError(f"--plot needs matplotlib: {PLOT_HINT}") from None
    backend = resolve_device(device)
    if rows is None:
        rows, rows_rule = _bench.default_rows(backend, features)
    else:
        rows_rule = "--rows"
    X, y = make_higgs_like(rows, features, random_state=seed, n_classes=classes)
    n_train = int(0.8 * rows)
    data = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    click.echo(
        f"gputree {__version__}: {n_train:,} train / {rows - n_train:,} test rows x {features} "
        f"features, {classes} classes, depth {depth}, {bins} bins, criterion {criterion}, "
        f"device {backend}, median of up to {repeats} timed fit(s) after an untimed one "
        f"({rows_rule})" + (f", forests of {forest} trees" if forest else "")
    )

    def ours():
        params = dict(criterion=criterion, max_depth=depth, max_bins=bins, device=device)
        if forest:
            return RandomForestClassifier(forest, random_state=seed, **params)
        return DecisionTreeClassifier(**params)

    missing = []
    # Each fit's per-level progress only with --verbose: here the fits are the progress.
    levels = (grower_logger, binning_logger) if not _Main.verbose else ()
    with quieter(*levels):
        # Option errors (an unknown criterion, say) surface here, before any timing.
        ours().fit(data[0][:200], data[1][:200])
        results = [_bench.time_model("gpu_tree", backend, ours, data, repeats)]
        if results[0].status != "ok":
            raise click.ClickException(f"gpu_tree failed: {results[0].error}")
        found = _bench.peers(depth, bins, backend, forest, features) if peers else []
        for name, peer_device, factory, _why in found:
            if factory is None:
                missing.append(name)
                continue
            results.append(_bench.time_model(name, peer_device, factory, data, repeats))

    reference = results[0]
    click.echo(
        f"{'model':<48} {'device':>6} {'fits':>4} {'fit s':>9} {'predict s':>10} "
        f"{'accuracy':>9} {'fit vs gpu_tree':>16} {'predict vs gpu_tree':>20}"
    )
    for result in results:
        if result.status != "ok":
            continue
        row = result.as_dict(reference)
        click.echo(
            f"{result.name:<48} {result.device:>6} {row['fits']:>4} {row['fit_s']:9.3f} "
            f"{row['predict_s']:10.4f} {row['accuracy']:9.4f} {row['fit_ratio']:15.2f}x "
            f"{row['predict_ratio']:19.2f}x"
        )
    for result in results:
        if result.status == "ok" and result.compile_s > 0:
            click.echo(
                f"{result.name}: numba compiled for {result.compile_s:.2f} s inside the timed "
                "fits; their times include it"
            )
        if result.status != "ok":
            click.echo(f"{result.name}: failed: {result.error}")
    if missing:
        click.echo(f"not installed: {', '.join(missing)}")
    model = reference.model
    trees = model.estimators_ if forest else [model]
    shape = {
        "depth": max(t.get_depth() for t in trees),
        "leaves": sum(t.get_n_leaves() for t in trees),
    }
    what = f"forest of {forest} trees ({model.n_batches_} batches)" if forest else "tree"
    click.echo(
        f"gpu_tree {what}: depth {shape['depth']}, {shape['leaves']} leaves; "
        "ratios are peer time / gpu_tree time (> 1: gpu_tree faster)"
    )

    report = {
        "gpu_tree_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "settings": {
            "rows": rows,
            "rows_rule": rows_rule,
            "train_rows": n_train,
            "test_rows": rows - n_train,
            "features": features,
            "classes": classes,
            "depth": depth,
            "bins": bins,
            "criterion": criterion,
            "device": backend,
            "repeats": repeats,
            "seed": seed,
            "forest": forest,
            "fit_budget_seconds": _bench.FIT_BUDGET_SECONDS,
        },
        "tree": shape,
        "results": [r.as_dict(reference) for r in results],
        "not_installed": missing,
    }
    # The main job proves something: gpu_tree's accuracy against the best peer's, or the
    # floor the dataset guarantees (_bench.accuracy_gate); a failure is exit status 2,
    # after the table, the JSON and the plot.
    verdict = _bench.accuracy_gate(results, report["settings"], y_test=data[3])
    report["gate"] = verdict.as_dict()
    if verdict.passed:
        click.echo(_bench.gate_line(verdict))
    if json_path:
        _write_json(json_path, report)
        click.echo(f"results saved to {json_path}")
    if plot_path:
        _bench.plot_ratios(report, plot_path)
        click.echo(f"ratios drawn to {plot_path}")
    if not verdict.passed:
        raise click.ClickException(_bench.gate_line(verdict))


if __name__ == "__main__":  # pragma: no cover
    main()
