"""``gputree predict``: a model's predictions (and probabilities) for a data file's rows,
as CSV."""

from __future__ import annotations

import csv

import click

from gpu_tree.app.cli.group import verbosity_options
from gpu_tree.app.cli.options import DATA, text_format_options
from gpu_tree.app.cli.reading import load_model, read_for_model
from gpu_tree.app.cli.shared import (
    classes_per_output,
    is_classifier,
    n_outputs_of,
    output_names,
    predict_with,
    standard_output,
)
from gpu_tree.app.data_io import TEXT
from gpu_tree.utils.atomic_files import atomic_text, check_writable


@click.command(short_help="Predict a data file's rows with a model.")
@verbosity_options
@click.argument("model", type=DATA)
@click.argument("data", type=DATA)
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
@text_format_options
def predict(model, data, output, proba, id_column, text_format):
    """Predict DATA's rows with MODEL (a model file from gputree train).

    Columns are matched to the model's features by name (files without names, by
    position); other columns, the target among them, are ignored. The predictions go
    to standard output unless -o names a file. A multi-output model (fitted in Python
    on a 2-D y) gets a column per output, prediction_0, prediction_1, ...
    """
    if output != "-":
        check_writable(output, inputs=(model, data))
    estimator = load_model(model)
    if proba and not is_classifier(estimator):
        raise click.UsageError("--proba needs a classification model; this one is a regressor")
    table, X, chosen = read_for_model(
        estimator, data, id_column, TEXT, text_format=text_format, role="id"
    )
    predicted = predict_with(estimator, X)
    several = n_outputs_of(estimator) > 1
    if several:  # (n_rows, n_outputs): a column per output
        outputs = output_names(estimator)
        header = [f"prediction_{name}" for name in outputs]
        columns = [predicted[:, k].tolist() for k in range(len(outputs))]
    else:
        header = ["prediction"]
        columns = [predicted.tolist()]
    if id_column is not None:  # missing ids are written as empty fields
        header.insert(0, chosen["target"])
        columns.insert(0, table.column(chosen["target"]).values.tolist())
    if proba:
        probabilities = predict_with(estimator, X, proba=True)
        if not several:
            probabilities, outputs = [probabilities], [None]
        for name, labels, values in zip(
            outputs, classes_per_output(estimator), probabilities, strict=True
        ):
            prefix = "proba_" if name is None else f"proba_{name}_"
            header += [f"{prefix}{label}" for label in labels.tolist()]
            columns += [values[:, k].tolist() for k in range(values.shape[1])]
    rows = zip(*columns, strict=True)
    if output == "-":
        writer = csv.writer(standard_output("the predictions"), lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return
    with atomic_text(output) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    click.echo(f"{table.n_rows:,} predictions written to {output}")
