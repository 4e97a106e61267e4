"""``gputree info``: what a model file holds, described without the training code."""

from __future__ import annotations

import click

from gpu_tree.app.cli.group import verbosity_options
from gpu_tree.app.cli.options import DATA
from gpu_tree.app.cli.reports import forest_summary, oob_summary
from gpu_tree.app.cli.shared import (
    chosen_tree,
    classes_per_output,
    is_classifier,
    is_forest,
    learned,
    listed,
    n_outputs_of,
    output_names,
)


@click.command(short_help="Describe a model file.")
@verbosity_options
@click.argument("model", type=DATA)
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
    from gpu_tree.model.file_format.reading import read_model_document

    document = read_model_document(model)  # read and parsed once
    estimator = saved.model_from_document(document, str(model))  # validates it all
    rows = [
        ("model file", str(model)),
        ("format", f"{document.get('format')} version {document.get('format_version')}"),
        ("written by", f"gpu_tree {document.get('library_version')}"),
        ("estimator", type(estimator).__name__),
        ("trained on", estimator.device_),
    ]
    if is_forest(estimator):
        rows.append(("forest", forest_summary(estimator)))
        if hasattr(estimator, "oob_score_"):
            rows.append(("out-of-bag score", oob_summary(estimator)))
    if tree is not None or not is_forest(estimator):
        shown = chosen_tree(estimator, tree, model)
        rows.append(
            (
                "tree" if tree is None else f"tree {tree}",
                f"depth {shown.get_depth()}, {shown.get_n_leaves()} leaves, "
                f"{shown.tree_.node_count} nodes",
            )
        )
    if n_outputs_of(estimator) > 1:
        rows.append(("outputs", f"{n_outputs_of(estimator)} (a multi-output model)"))
    if is_classifier(estimator):
        per_output = classes_per_output(estimator)
        names = output_names(estimator) if len(per_output) > 1 else [None]
        for name, labels in zip(names, per_output, strict=True):
            rows.append(
                (
                    "classes" if name is None else f"classes of output {name}",
                    f"{len(labels)}: {listed(labels.tolist(), 30)}",
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
    categories = getattr(learned(estimator), "categories_", None) or [None] * len(names)
    n_categorical = sum(c is not None for c in categories)
    click.echo(f"features: {len(names)} ({n_categorical} categorical)")
    name_width = max(len(str(n)) for n in names)
    for name, values in zip(names, categories, strict=True):
        if values is None:
            click.echo(f"  {str(name):<{name_width}}  numeric")
        else:
            click.echo(
                f"  {str(name):<{name_width}}  categorical, {len(values)} categories "
                f"({listed(list(values), 8)})"
            )
