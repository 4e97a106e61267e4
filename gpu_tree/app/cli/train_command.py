"""``gputree train``: a tree or a random forest from one data file (with --scheduler or
--workers, from files the Dask workers read: gpu_tree.app.distributed_training)."""

from __future__ import annotations

import shlex
import time
import warnings

import click
import numpy as np

from gpu_tree.app.cli.group import verbosity_options
from gpu_tree.app.cli.options import (
    DATA,
    parameter_choice,
    parameter_range,
    text_format_options,
)
from gpu_tree.app.cli.reading import read_data
from gpu_tree.app.cli.reports import report_training
from gpu_tree.app.cli.shared import listed, logger
from gpu_tree.app.cli.targets import (
    MAX_AUTO_CLASSES,
    MIN_ROWS_PER_CLASS,
    sample_weights,
    target_values,
)
from gpu_tree.app.data_io import (
    CATEGORY,
    FEATURE,
    NUMBER,
    SKIP,
    TEXT,
    extension,
    feature_matrix,
    resolve_column,
    split_specs,
)
from gpu_tree.utils.atomic_files import check_writable


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


@click.command(short_help="Train a tree on a data file and save the model.")
@verbosity_options
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
@click.option(
    "--max-depth", type=parameter_range("max_depth"), default=None, help="Default: no limit."
)
@click.option("--max-bins", type=parameter_range("max_bins"), default=256, show_default=True)
@click.option(
    "--min-samples-leaf", type=parameter_range("min_samples_leaf"), default=1, show_default=True
)
@click.option(
    "--min-samples-split", type=parameter_range("min_samples_split"), default=2, show_default=True
)
@click.option(
    "--max-leaf-nodes",
    type=parameter_range("max_leaf_nodes"),
    default=None,
    help="Grow best-first up to this many leaves.",
)
@click.option(
    "--categorical-split",
    type=parameter_choice("categorical_split"),
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
    type=parameter_range("n_estimators"),
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
@click.option("--device", type=parameter_choice("device"), default="auto", show_default=True)
@click.option("--random-state", type=int, default=0, show_default=True)
@text_format_options
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
        from gpu_tree.app.distributed_training import train_distributed

        return train_distributed(
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

    table = read_data(data, plan, "a weight column holds numbers only", text_format)
    target_column = table.column(found["target"])
    not_features = {found["target"], found.get("weight")}
    features = [c for c in table.columns if c.name not in not_features]
    if not features:
        raise ValueError(f"{data}: no feature columns besides the target {found['target']!r}")
    _check_text_of_numbers(table, features, found["declared"])
    y, task = target_values(table, target_column, task)
    sample_weight = None
    if weight is not None:
        sample_weight = sample_weights(table, table.column(found["weight"]))

    classifier_class, regressor_class = _estimator_classes(forest=forest_params is not None)
    estimator_class = classifier_class if task == "classification" else regressor_class
    categorical_features = [j for j, c in enumerate(features) if c.categorical]
    if categorical_features:
        # The columns found as the file was read (text, plus --categorical), by index, as
        # model files have always saved them (tests/integration/test_model_snapshots.py).
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

    report_training(
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
            f"train reads one data file (got {len(data)}: {listed(data, 3)}); several "
            "files, globs and folders are for --workers N or --scheduler ADDRESS"
        )
    try:
        return DATA.convert(data[0], None, click.get_current_context())
    except click.BadParameter as exc:
        exc.param_hint = "'DATA'"
        raise
