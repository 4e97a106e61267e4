"""``gputree train --scheduler ADDRESS`` / ``--workers N``: the train command's columns,
rules, model file and report, with the rows read and the tree fitted on the Dask
workers (gpu_tree.app.distributed reads and types the files there)."""

from __future__ import annotations

import time

import click
import numpy as np

from gpu_tree.app import distributed
from gpu_tree.app.cli.group import is_verbose, one_line
from gpu_tree.app.cli.reports import report_training
from gpu_tree.app.cli.shared import listed, logger
from gpu_tree.app.cli.targets import MAX_AUTO_CLASSES, auto_task_of_numbers
from gpu_tree.app.data_io import resolve_column, split_specs
from gpu_tree.utils.atomic_files import check_writable


def train_distributed(
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
            f"a Dask worker was lost during training ({one_line(exc)}); train again"
        ) from None
    task, where, target_summary, fit_seconds, n_workers, categorical_features = fitted
    classes = getattr(local, "classes_", None)
    if classes is not None and classes.dtype == object:
        if all(isinstance(label, str) for label in classes.tolist()):
            # Text labels reach the workers in pandas (object); a single-file train gives
            # them as a numpy str array, which the model file records: the same file.
            local.classes_ = np.asarray(classes.tolist(), dtype=str)
    local.save(output)

    report_training(
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
    with distributed.dask_client(scheduler, workers, connect_timeout, is_verbose()) as (
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
    "label") by the rules of gpu_tree.app.cli.targets.target_values, from a summary of
    the column."""
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
    zero), as gpu_tree.app.cli.targets.sample_weights checks them in a single-file train."""
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
    reason = one_line(exc)
    if categorical_features:
        shown = listed([repr(features[j]) for j in categorical_features], 5)
        return (
            f"--scheduler/--workers: categorical features ({shown}: columns of text, or in "
            f"--categorical) cannot be trained on distributed yet ({reason}); leave them out "
            "with --ignore, or train without --scheduler/--workers"
        )
    return f"--scheduler/--workers: distributed training cannot do this yet: {reason}"
