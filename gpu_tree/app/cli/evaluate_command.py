"""``gputree evaluate``: a model scored against a data file's true values (per output
for a multi-output model), printed and optionally saved as JSON."""

from __future__ import annotations

import functools
import numbers

import click
import numpy as np

from gpu_tree.app.cli.group import verbosity_options
from gpu_tree.app.cli.options import DATA, text_format_options
from gpu_tree.app.cli.reading import load_model, number_or_none, read_for_model
from gpu_tree.app.cli.shared import (
    classes_per_output,
    is_classifier,
    listed,
    n_outputs_of,
    output_names,
    predict_with,
    write_json,
)
from gpu_tree.app.cli.targets import as_numbers, check_target_present
from gpu_tree.app.data_io import TEXT, extension, split_specs
from gpu_tree.utils.atomic_files import check_writable


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


def _evaluation_targets(given, n_outputs, model, data) -> list[str]:
    """evaluate's -t values as the columns of true values to read: one for a one-output
    model (as given: a name with a comma is one name), one per output, in the outputs'
    order, for a multi-output model (-t repeated, or a comma-separated list)."""
    if n_outputs == 1:
        if len(given) > 1:
            raise click.UsageError(
                f"{model} predicts one output: give one -t (the column of true values), "
                f"not {len(given)} ({listed([repr(spec) for spec in given])})"
            )
        if not given:
            if extension(data) != ".npz":
                raise click.UsageError("Missing option '--target' (the column of true values).")
            return ["y"]
        return list(given)
    specs = split_specs(given)
    if len(specs) != n_outputs:
        got = f"got {len(specs)} ({listed([repr(spec) for spec in specs])})" if specs else ""
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
    number = number_or_none(value)
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
    y_true = as_numbers(column, table, "the model's classes are numbers")
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
            f"training: column {column.name!r} holds {listed(extra)}, the model's "
            f"classes are {listed(labels)} (is it the right column, and are the labels "
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
            f"label the model never saw in training ({listed(extra)}; the model's classes: "
            f"{listed(labels)}) in column {column.name!r}; they count as errors",
            err=True,
        )
    correct = true_codes == label_codes(predicted, labels + extra)
    return metrics, correct


def _labelled(metrics) -> dict:
    """Classification metrics for the JSON file: each class's rates with its label."""
    for label, rates in zip(metrics["labels"], metrics["per_class"], strict=True):
        rates["label"] = label
    return metrics


@click.command(short_help="Score a model on data with true values.")
@verbosity_options
@click.argument("model", type=DATA)
@click.argument("data", type=DATA)
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
@text_format_options
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
    estimator = load_model(model)
    n_outputs = n_outputs_of(estimator)
    targets = _evaluation_targets(targets, n_outputs, model, data)
    classifier = is_classifier(estimator)
    table, X, chosen = read_for_model(estimator, data, targets, TEXT, text_format)
    columns = [table.column(name) for name in chosen["targets"]]
    for column in columns:
        check_target_present(table, column)
    if n_outputs > 1:
        return _evaluate_outputs(estimator, X, table, columns, model, data, json_path)
    (column,) = columns
    predicted = predict_with(estimator, X)
    if not classifier:
        y_true = as_numbers(column, table, "a regression model needs numbers")
        metrics = regression_metrics(y_true, predicted)
    else:
        metrics, _ = _score_classes(
            estimator.classes_, column, table, predicted, lambda: predict_with(estimator, X, True)
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
        write_json(json_path, document)
        click.echo(f"metrics saved to {json_path}")


def _evaluate_outputs(estimator, X, table, columns, model, data, json_path):
    """evaluate for a multi-output model: each output against its column (accuracy, or
    R^2, MAE and RMSE; all of an output's metrics in the JSON file), then the model as
    scikit-learn's ``score`` scores it: subset accuracy (the rows whose every output is
    right), or R^2 averaged over the outputs."""
    from gpu_tree.app.metrics import multi_output_r2, regression_metrics, subset_accuracy

    classifier = is_classifier(estimator)
    predicted = predict_with(estimator, X)  # (n_rows, n_outputs)
    names = [column.name for column in columns]
    outputs = []
    if classifier:
        probabilities = []  # every output's, predicted once when the first is asked for

        def of_output(k):
            if not probabilities:
                probabilities.extend(predict_with(estimator, X, proba=True))
            return probabilities[k]

        correct = []
        for k, (labels, column) in enumerate(
            zip(classes_per_output(estimator), columns, strict=True)
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
            y_true = as_numbers(column, table, "a regression model needs numbers")
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
    for output, name, metrics in zip(output_names(estimator), names, outputs, strict=True):
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
        write_json(json_path, document)
        click.echo(f"metrics saved to {json_path}")
