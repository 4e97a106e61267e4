"""``gputree export``: a model's tree (a forest's tree N) as text, Graphviz DOT or PNG; the
whole model (a forest's trees averaged) as an ONNX or Treelite model for serving."""

from __future__ import annotations

import time

import click

from gpu_tree.app.cli.group import verbosity_options
from gpu_tree.app.cli.options import DATA
from gpu_tree.app.cli.reading import load_model
from gpu_tree.app.cli.shared import PLOT_HINT, chosen_tree, is_classifier, logger, n_outputs_of
from gpu_tree.utils.atomic_files import atomic_path, atomic_text, check_writable
from gpu_tree.utils.progress import step


def _names(estimator):
    names = getattr(estimator, "feature_names_in_", None)
    feature_names = None if names is None else [str(n) for n in names]
    class_names = None  # a multi-output tree's nodes are labelled by each output's classes_
    if is_classifier(estimator) and n_outputs_of(estimator) == 1:
        class_names = [str(c) for c in estimator.classes_]
    return feature_names, class_names


def _write_serving_model(loaded, tree, fmt, output, model, onnx_operator):
    """The model (a forest's tree N with --tree N) as an ONNX (its tree operator:
    ``onnx_operator``) or Treelite file, written atomically to ``output``."""
    from gpu_tree.model.export.onnx_format import export_onnx
    from gpu_tree.model.export.treelite_format import export_treelite

    exported = loaded if tree is None else chosen_tree(loaded, tree, model)
    if fmt == "onnx":
        data = export_onnx(exported, operator=onnx_operator).SerializeToString()
    else:
        data = export_treelite(exported).serialize_bytes()
    with atomic_path(output) as temporary:
        with open(temporary, "wb") as out:
            out.write(data)
    click.echo(f"{fmt} model written to {output} (its input: gpu_tree.export_inputs)")


@click.command(short_help="Show a model's tree as text, DOT or PNG; export it to ONNX or Treelite.")
@verbosity_options
@click.argument("model", type=DATA)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "png", "onnx", "treelite"]),
    default="text",
    show_default=True,
    help=(
        "text: indented rules; dot: Graphviz source; png: a drawing sized to the tree, by "
        "Graphviz's dot where installed, else matplotlib (at most 64 leaf boxes: cut "
        "bigger trees with --max-depth); onnx, treelite: the whole model (a forest's "
        "trees averaged; --tree N: tree N) for onnxruntime or Treelite, reading the rows "
        "of gpu_tree.export_inputs."
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
    help=(
        "A forest's tree to show, by its number (0 to the trees less 1); required for a "
        "forest but with onnx and treelite, which export the whole forest without it."
    ),
)
@click.option(
    "--onnx-operator",
    type=click.Choice(["TreeEnsemble", "legacy"]),
    default="TreeEnsemble",
    show_default=True,
    help=(
        "onnx: the tree operator. TreeEnsemble: ai.onnx.ml opset 5 (set tests, float64 "
        "outputs; onnxruntime 1.23 on); legacy: TreeEnsembleClassifier / "
        "TreeEnsembleRegressor (opset 3, which older runtimes read; float32 outputs, a "
        "classifier's label too)."
    ),
)
def export(model, fmt, output, max_depth, decimals, filled, tree, onnx_operator):
    """Show MODEL's tree as text, Graphviz DOT or a PNG drawing (a forest's tree N with
    --tree N), or export MODEL to ONNX or Treelite."""
    if fmt in ("png", "onnx", "treelite") and not output:
        suffix = {"png": "png", "onnx": "onnx", "treelite": "tl"}[fmt]
        raise click.UsageError(f"--format {fmt} needs -o PATH.{suffix}")
    if output:
        check_writable(output, inputs=(model,))
    if onnx_operator != "TreeEnsemble" and fmt != "onnx":
        raise click.UsageError("--onnx-operator goes with --format onnx")
    if fmt in ("onnx", "treelite"):
        _write_serving_model(load_model(model), tree, fmt, output, model, onnx_operator)
        return
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
    from gpu_tree.model.export.dot import export_graphviz
    from gpu_tree.model.export.png import TreeTooLargeToDraw, export_png
    from gpu_tree.model.export.text import export_text

    loaded = load_model(model)
    estimator = chosen_tree(loaded, tree, model)
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
