"""Options and argument types that several commands share."""

from __future__ import annotations

import functools

import click

from gpu_tree.app.data_io import split_specs
from gpu_tree.training.parameters import choices_of, int_bounds

DATA = click.Path(exists=True, dir_okay=False)
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


def text_format_options(command):
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


def parameter_range(name: str) -> click.IntRange:
    """An integer estimator parameter's range, as the parameter table declares it."""
    low, high = int_bounds(name)
    return click.IntRange(low, high)


def parameter_choice(name: str) -> click.Choice:
    """An estimator parameter's choices, as the parameter table declares them."""
    return click.Choice(list(choices_of(name)))
