"""Small helpers of several commands: what a model is, its predictions and outputs,
values in words, and where results go."""

from __future__ import annotations

import json
import logging
import time
import warnings

import click
import numpy as np

from gpu_tree.utils.atomic_files import atomic_text
from gpu_tree.utils.install_hints import install_hint

# Every command logs as "gpu_tree.app.cli" (under the "gpu_tree" logger that
# gpu_tree.utils.progress's handler serves), whichever module the code is in.
logger = logging.getLogger("gpu_tree.app.cli")
PLOT_HINT = install_hint("plot")


def listed(values, limit=10) -> str:
    values = [str(v) for v in values]
    return ", ".join(values[:limit]) + (
        f", ... ({len(values)} in all)" if len(values) > limit else ""
    )


def is_classifier(model) -> bool:
    return hasattr(model, "classes_")


def is_forest(model) -> bool:
    return hasattr(model, "estimators_")


def learned(model):
    """The estimator holding what the model learned of its input (categories): a
    forest's first tree (every tree shares it), or the tree itself."""
    return model.estimators_[0] if is_forest(model) else model


def chosen_tree(model, tree, path):
    """The tree estimator ``export`` and ``info`` show: a forest's tree ``--tree N``
    (required), or the model itself when it is a single tree (``--tree`` refused)."""
    if not is_forest(model):
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


def standard_output(what: str):
    """The text stream of standard output, refused with the way out where the process
    was started with it closed (``gputree predict ... >&-``: Python then has none)."""
    stream = click.get_text_stream("stdout")
    if stream is None:
        raise click.UsageError(f"standard output is closed: write {what} to a file with -o PATH")
    return stream


def predict_with(model, X, proba=False):
    with warnings.catch_warnings():
        # The command line matched the columns by name itself.
        warnings.filterwarnings("ignore", message=".*feature names.*", category=UserWarning)
        start = time.perf_counter()
        out = model.predict_proba(X) if proba else model.predict(X)
        logger.info("predicted %s rows (%.2f s)", f"{X.shape[0]:,}", time.perf_counter() - start)
        if isinstance(out, list):  # a multi-output model's probabilities, one per output
            return [np.asarray(p) for p in out]
        return np.asarray(out)


def n_outputs_of(model) -> int:
    """The model's outputs: 1, or for a model fitted (in Python) on a 2-D y its columns."""
    return int(getattr(model, "n_outputs_", 1))


def output_names(model) -> list[str]:
    """The names a multi-output model's outputs go by in the command line's columns
    (prediction_NAME, proba_NAME_CLASS) and messages: a fit on a 2-D y keeps no names of
    its columns (a DataFrame's included), so the model file records none; their
    numbers, 0, 1, ..."""
    return [str(k) for k in range(n_outputs_of(model))]


def classes_per_output(model) -> list[np.ndarray]:
    """A classifier's labels, one array per output (a multi-output one keeps a list)."""
    if n_outputs_of(model) > 1:
        return [np.asarray(classes) for classes in model.classes_]
    return [np.asarray(model.classes_)]


def write_json(path, document):
    text = json.dumps(document, indent=2, allow_nan=False)
    with atomic_text(path) as out:
        out.write(text + "\n")
