"""``gputree bench``: gpu_tree timed against the installed peers on a built-in dataset
(the timing, peers and accuracy gate: gpu_tree.app.bench)."""

from __future__ import annotations

import time

import click

from gpu_tree._version import __version__
from gpu_tree.app.cli.group import is_verbose, verbosity_options
from gpu_tree.app.cli.shared import PLOT_HINT, write_json
from gpu_tree.utils.atomic_files import check_writable
from gpu_tree.utils.progress import binning_logger, grower_logger, quieter


@click.command(short_help="Time gpu_tree and the installed peers.")
@verbosity_options
@click.option(
    "--rows",
    type=click.IntRange(min=100),
    default=None,
    help="Rows of the built-in Higgs-shaped dataset (80% train, 20% test). Default: "
    "sized for this machine: 100,000 per CPU core within 100,000..1,000,000 "
    "on the CPU, 2,000,000 on a GPU, less when memory is short.",
)
@click.option("--features", default=28, show_default=True, type=click.IntRange(min=2))
@click.option("--classes", default=2, show_default=True, type=click.IntRange(2, 1000))
@click.option("--depth", default=10, show_default=True, type=click.IntRange(1, 30))
@click.option("--bins", default=256, show_default=True, type=click.IntRange(2, 65535))
@click.option("--criterion", default="gini", show_default=True)
@click.option(
    "--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"])
)
@click.option(
    "--repeats",
    default=3,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Fits per model, the median reported (a model is fitted again only while its "
    "fits so far took under 5 s in all).",
)
@click.option(
    "--peers/--no-peers",
    default=True,
    show_default=True,
    help="Also time every installed peer: scikit-learn's DecisionTreeClassifier and "
    "HistGradientBoosting (1 iteration), LightGBM and XGBoost (1 round), cuML.",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the dataset.")
@click.option(
    "--forest",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Time random forests of N trees (max_features 'sqrt') instead of one tree, against "
    "the installed forest peers: scikit-learn's RandomForestClassifier, LightGBM's and "
    "XGBoost's random forests, cuML's on a GPU.",
)
@click.option("--json", "json_path", metavar="PATH", help="Save every number as JSON.")
@click.option(
    "--plot",
    "plot_path",
    metavar="PATH.png",
    help="Draw the peers' time ratios (needs matplotlib).",
)
def bench(
    rows,
    features,
    classes,
    depth,
    bins,
    criterion,
    device,
    repeats,
    peers,
    seed,
    forest,
    json_path,
    plot_path,
):
    """Time gpu_tree, and the installed peers, on a built-in Higgs-shaped dataset.

    Exits with status 2, after the table, when gpu_tree's test accuracy is more than 1
    point below the best peer's (more on a test set too small to tell 1 point), or, when
    no peer ran, below the floor the dataset's known signal guarantees a depth-10 tree.
    """
    from gpu_tree.app import bench as _bench
    from gpu_tree.app.machine import machine_info
    from gpu_tree.backends.devices import resolve_device
    from gpu_tree.datasets import make_higgs_like
    from gpu_tree.ensemble import RandomForestClassifier
    from gpu_tree.estimators.tree import DecisionTreeClassifier

    for path in (json_path, plot_path):
        if path:
            check_writable(path)
    if plot_path:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ImportError(f"--plot needs matplotlib: {PLOT_HINT}") from None
    backend = resolve_device(device)
    if rows is None:
        rows, rows_rule = _bench.default_rows(backend, features)
    else:
        rows_rule = "--rows"
    X, y = make_higgs_like(rows, features, random_state=seed, n_classes=classes)
    n_train = int(0.8 * rows)
    data = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    click.echo(
        f"gputree {__version__}: {n_train:,} train / {rows - n_train:,} test rows x {features} "
        f"features, {classes} classes, depth {depth}, {bins} bins, criterion {criterion}, "
        f"device {backend}, median of up to {repeats} timed fit(s) after an untimed one "
        f"({rows_rule})" + (f", forests of {forest} trees" if forest else "")
    )

    def ours():
        params = dict(criterion=criterion, max_depth=depth, max_bins=bins, device=device)
        if forest:
            return RandomForestClassifier(forest, random_state=seed, **params)
        return DecisionTreeClassifier(**params)

    missing = []
    # Each fit's per-level progress only with --verbose: here the fits are the progress.
    levels = (grower_logger, binning_logger) if not is_verbose() else ()
    with quieter(*levels):
        # Option errors (an unknown criterion, say) surface here, before any timing.
        ours().fit(data[0][:200], data[1][:200])
        results = [_bench.time_model("gpu_tree", backend, ours, data, repeats)]
        if results[0].status != "ok":
            raise click.ClickException(f"gpu_tree failed: {results[0].error}")
        found = _bench.peers(depth, bins, backend, forest, features) if peers else []
        for name, peer_device, factory, _why in found:
            if factory is None:
                missing.append(name)
                continue
            results.append(_bench.time_model(name, peer_device, factory, data, repeats))

    reference = results[0]
    click.echo(
        f"{'model':<48} {'device':>6} {'fits':>4} {'fit s':>9} {'predict s':>10} "
        f"{'accuracy':>9} {'fit vs gpu_tree':>16} {'predict vs gpu_tree':>20}"
    )
    for result in results:
        if result.status != "ok":
            continue
        row = result.as_dict(reference)
        click.echo(
            f"{result.name:<48} {result.device:>6} {row['fits']:>4} {row['fit_s']:9.3f} "
            f"{row['predict_s']:10.4f} {row['accuracy']:9.4f} {row['fit_ratio']:15.2f}x "
            f"{row['predict_ratio']:19.2f}x"
        )
    for result in results:
        if result.status == "ok" and result.compile_s > 0:
            click.echo(
                f"{result.name}: numba compiled for {result.compile_s:.2f} s inside the timed "
                "fits; their times include it"
            )
        if result.status != "ok":
            click.echo(f"{result.name}: failed: {result.error}")
    if missing:
        click.echo(f"not installed: {', '.join(missing)}")
    model = reference.model
    trees = model.estimators_ if forest else [model]
    shape = {
        "depth": max(t.get_depth() for t in trees),
        "leaves": sum(t.get_n_leaves() for t in trees),
    }
    what = f"forest of {forest} trees ({model.n_batches_} batches)" if forest else "tree"
    click.echo(
        f"gpu_tree {what}: depth {shape['depth']}, {shape['leaves']} leaves; "
        "ratios are peer time / gpu_tree time (> 1: gpu_tree faster)"
    )

    report = {
        "gpu_tree_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine_info(),
        "settings": {
            "rows": rows,
            "rows_rule": rows_rule,
            "train_rows": n_train,
            "test_rows": rows - n_train,
            "features": features,
            "classes": classes,
            "depth": depth,
            "bins": bins,
            "criterion": criterion,
            "device": backend,
            "repeats": repeats,
            "seed": seed,
            "forest": forest,
            "fit_budget_seconds": _bench.FIT_BUDGET_SECONDS,
        },
        "tree": shape,
        "results": [r.as_dict(reference) for r in results],
        "not_installed": missing,
    }
    # The main job proves something: gpu_tree's accuracy against the best peer's, or the
    # floor the dataset guarantees (_bench.accuracy_gate); a failure is exit status 2,
    # after the table, the JSON and the plot.
    verdict = _bench.accuracy_gate(results, report["settings"], y_test=data[3])
    report["gate"] = verdict.as_dict()
    if verdict.passed:
        click.echo(_bench.gate_line(verdict))
    if json_path:
        write_json(json_path, report)
        click.echo(f"results saved to {json_path}")
    if plot_path:
        _bench.plot_ratios(report, plot_path)
        click.echo(f"ratios drawn to {plot_path}")
    if not verdict.passed:
        raise click.ClickException(_bench.gate_line(verdict))
