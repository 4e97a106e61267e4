"""Reading a model file, and a data file's columns as a model's features (matched by
name or position, its categories matched to the model's)."""

from __future__ import annotations

import os
import time

import numpy as np

from gpu_tree.app.cli.shared import learned, listed, logger
from gpu_tree.app.data_io import (
    CATEGORY,
    NUMBER,
    SKIP,
    TEXT,
    Column,
    extension,
    feature_matrix,
    read_table,
    resolve_column,
)
from gpu_tree.utils.progress import step


def load_model(path):
    """The model in a model file, as a saved model (gpu_tree.model.saved: the estimator's
    fitted attributes and host prediction, checked as gpu_tree.load checks the file),
    not as its estimator, whose import (scikit-learn, SciPy, pandas, the training code
    and kernels) took seconds of each command's start."""
    from gpu_tree.model.saved import load_saved_model

    start = time.perf_counter()
    model = load_saved_model(path)
    logger.info("loaded %s (%.2f s)", path, time.perf_counter() - start)
    return model


def read_data(path, plan, hint=None, text_format=None):
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


def model_plan(model, target=None, target_kind=TEXT, role="target"):
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
    categories = getattr(learned(model), "categories_", None) or [None] * n_features
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
                    f"{n_features}" + (f" ({listed(names_in)})" if names_in else "")
                )
        else:
            missing = next(name for name in names_in if name not in names)
            raise ValueError(
                f"no column {missing!r}, which the model needs (its features: {listed(names_in)})"
            )
        for k, j in enumerate(columns):
            kinds[j] = feature_kinds[k]
        chosen["features"] = [names[j] for j in columns]
        return kinds

    return plan, chosen


def read_for_model(model, data, target=None, target_kind=TEXT, text_format=None, role="target"):
    plan, chosen = model_plan(model, target, target_kind, role)
    text_format = text_format or {}
    no_header = not text_format.get("header", True)

    def plan_with_names(names):
        return plan(names, no_header or _generated_names(data, names))

    hint = "the model was trained with this column numeric"
    table = read_data(data, plan_with_names, hint, text_format)
    columns = [table.column(name) for name in chosen["features"]]
    categories = getattr(learned(model), "categories_", None) or [None] * len(columns)
    columns = [
        column if known is None else _matched_categories(column, known, table.source)
        for column, known in zip(columns, categories, strict=True)
    ]
    X = feature_matrix(columns)
    return table, X, chosen


def number_or_none(value):
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
        number = number_or_none(label) if isinstance(label, str) else None
        if number is not None:
            texts_of.setdefault(number, []).append(label)
    translation = {}
    for value in unknown:
        number = number_or_none(value)
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
            f"{listed([repr(v) for v in known_values], 5) or 'no category'}"
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
