"""The ``gputree`` command line."""

from __future__ import annotations

import sys
import time

import click
import numpy as np

from . import __version__
from .datasets import make_higgs_like
from .estimators import DecisionTreeClassifier, resolve_device


def _timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def _peer_factories(depth: int, bins: int):
    """Installed peers that grow one comparable tree: name -> (factory, note)."""
    peers = {}
    try:
        from sklearn.tree import DecisionTreeClassifier as SklearnTree

        peers["scikit-learn DecisionTreeClassifier"] = lambda: SklearnTree(
            max_depth=depth, random_state=0
        )
    except ImportError:
        pass
    try:
        import lightgbm

        peers["LightGBM (1 round)"] = lambda: lightgbm.LGBMClassifier(
            n_estimators=1,
            max_depth=depth,
            num_leaves=2**depth,
            max_bin=bins,
            learning_rate=1.0,
            min_child_samples=1,
            min_child_weight=0.0,
            verbose=-1,
        )
    except ImportError:
        pass
    try:
        import xgboost

        peers["XGBoost hist (1 round)"] = lambda: xgboost.XGBClassifier(
            n_estimators=1, max_depth=depth, max_bin=bins, learning_rate=1.0, tree_method="hist"
        )
    except ImportError:
        pass
    return peers


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gputree")
def main():
    """Decision trees for large tabular data, on NVIDIA GPUs and on the CPU."""


@main.command()
@click.option(
    "--rows",
    default=1_000_000,
    show_default=True,
    type=click.IntRange(min=100),
    help="Rows of the built-in Higgs-shaped dataset (80% train, 20% test).",
)
@click.option("--features", default=28, show_default=True, type=click.IntRange(min=2))
@click.option("--depth", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--bins", default=256, show_default=True, type=click.IntRange(2, 65535))
@click.option("--criterion", default="gini", show_default=True)
@click.option(
    "--device", default="auto", show_default=True, type=click.Choice(["auto", "cpu", "cuda"])
)
@click.option(
    "--peers/--no-peers",
    default=False,
    show_default=True,
    help="Also time the installed peers (scikit-learn, LightGBM, XGBoost) on the same data.",
)
def bench(rows, features, depth, bins, criterion, device, peers):
    """Train on a built-in dataset and report time and accuracy."""
    try:
        backend = resolve_device(device)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    X, y = make_higgs_like(rows, features, random_state=0)
    n_train = int(0.8 * rows)
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    click.echo(
        f"gputree {__version__}: {n_train:,} train / {rows - n_train:,} test rows x {features} "
        f"features, depth {depth}, {bins} bins, criterion {criterion}, device {backend}"
    )

    model = DecisionTreeClassifier(
        criterion=criterion, max_depth=depth, max_bins=bins, device=device
    )
    try:
        _, warmup = _timed(model.fit, X_train[:2000], y_train[:2000])
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    _, fit_seconds = _timed(model.fit, X_train, y_train)
    predictions, predict_seconds = _timed(model.predict, X_test)
    accuracy = float(np.mean(predictions == y_test))
    results = [("gpu_tree", fit_seconds, predict_seconds, accuracy)]
    click.echo(f"compile/cache warm-up: {warmup:.2f} s (excluded)")
    if peers:
        for name, factory in _peer_factories(depth, bins).items():
            peer = factory()
            _, peer_fit = _timed(peer.fit, X_train, y_train)
            peer_pred, peer_predict = _timed(peer.predict, X_test)
            results.append((name, peer_fit, peer_predict, float(np.mean(peer_pred == y_test))))

    click.echo(
        f"{'model':38s} {'fit s':>8s} {'predict s':>10s} {'accuracy':>9s} {'fit time / gpu_tree':>20s}"
    )
    for name, fit_s, predict_s, acc in results:
        click.echo(
            f"{name:38s} {fit_s:8.3f} {predict_s:10.4f} {acc:9.4f} {fit_s / fit_seconds:20.2f}"
        )
    click.echo(f"tree: depth {model.get_depth()}, {model.get_n_leaves()} leaves")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
