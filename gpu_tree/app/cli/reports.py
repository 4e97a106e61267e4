"""What train says of the model it fitted, and info of a forest."""

from __future__ import annotations

import click
import numpy as np

from gpu_tree.app.cli.group import is_verbose
from gpu_tree.app.cli.shared import is_classifier, is_forest, listed


def report_training(
    estimator, *, source, n_rows, n_features, n_categorical, target, weight, fitted_on, output
):
    """train's three lines: what was fitted on what, the tree (or the forest, and its
    out-of-bag score), where it was saved (and the fit's statistics with -v)."""
    what = "classification" if hasattr(estimator, "classes_") else "regression"
    if hasattr(estimator, "classes_"):
        what += f", {len(estimator.classes_)} classes ({listed(estimator.classes_.tolist())})"
    weighted = f", weights from {weight!r}" if weight is not None else ""
    click.echo(
        f"trained {type(estimator).__name__} on {source}: {n_rows:,} rows, {n_features} "
        f"features ({n_categorical} categorical), target {target!r}{weighted}: {what}"
    )
    if is_forest(estimator):
        sampled = "bootstrap samples" if estimator.bootstrap else "every row"
        click.echo(
            f"forest: {forest_summary(estimator)}; trees on {sampled}, max_features "
            f"{estimator.max_features!r}; fit {fitted_on}"
        )
        if hasattr(estimator, "oob_score_"):
            click.echo(f"out-of-bag score: {oob_summary(estimator)}")
    else:
        click.echo(
            f"tree: depth {estimator.get_depth()}, {estimator.get_n_leaves()} leaves, "
            f"{estimator.tree_.node_count} nodes; fit {fitted_on}"
        )
    click.echo(f"model saved to {output}")
    if is_verbose() and hasattr(estimator, "fit_stats_"):  # a forest's trees keep none
        click.echo(_fit_stats_table(estimator), err=True)


def forest_summary(forest) -> str:
    """A forest's trees, their depths and sizes, in words."""
    trees = [e.tree_ for e in forest.estimators_]
    low, high = min(t.max_depth for t in trees), max(t.max_depth for t in trees)
    depth = f"depth {low}" if low == high else f"depths {low} to {high}"
    leaves, nodes = sum(t.n_leaves for t in trees), sum(t.node_count for t in trees)
    return f"{len(trees)} trees, {depth}, {leaves:,} leaves and {nodes:,} nodes in all"


def oob_summary(forest) -> str:
    """The out-of-bag score and its measure ("n/a": R^2 of a target without spread)."""
    score = float(forest.oob_score_)
    measure = "accuracy" if is_classifier(forest) else "R^2"
    return f"{'n/a' if np.isnan(score) else f'{score:.4f}'} ({measure})"


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
