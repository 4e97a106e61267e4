"""``gputree bench``: gpu_tree against the installed peers on a built-in dataset.

Every model (gpu_tree and each peer) is first fitted once on 2,000 rows (compilation and
caches warm up; not counted), then fitted ``repeats`` times on the training rows; the
median fit and predict times are reported, and the ratios peer time / gpu_tree time. A
model is fitted again only while its fits so far took less than :data:`FIT_BUDGET_SECONDS`
in all (a slow peer is fitted once or twice). A peer that fails is reported with the
reason; it never stops the run.
"""

from __future__ import annotations

import logging
import os
import platform
import statistics
import textwrap
import time
from dataclasses import dataclass, field

import numpy as np

logger = logging.getLogger("gpu_tree.bench")

FIT_BUDGET_SECONDS = 5.0
WARMUP_ROWS = 2_000
# Default size: on the CPU 100,000 rows per core, 100,000 to 1,000,000 (a 2-core machine:
# 200,000 rows, a few seconds for gpu_tree and under a minute with every peer); on a GPU
# 2,000,000 (scikit-learn's exact tree, single-threaded, bounds the peers' time).
ROWS_PER_CPU = 100_000
CPU_ROWS = (100_000, 1_000_000)
GPU_ROWS = 2_000_000
# Bytes a row may take, per feature, with every peer's copies (float64 X, float32 and
# binned copies): the default never asks for more than the available memory allows.
BYTES_PER_VALUE = 48


def available_memory():
    """Bytes of memory available now (Linux /proc/meminfo, else sysconf), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def default_rows(backend: str, n_features: int) -> tuple[int, str]:
    """Rows of the default dataset on this machine, and the rule that chose them."""
    cpus = os.cpu_count() or 1
    if backend == "cuda":
        rows, rule = GPU_ROWS, f"{GPU_ROWS:,} rows on a GPU"
    else:
        rows = min(max(ROWS_PER_CPU * cpus, CPU_ROWS[0]), CPU_ROWS[1])
        low, high = CPU_ROWS
        rule = f"{ROWS_PER_CPU:,} rows per CPU core x {cpus} cores, within {low:,}..{high:,}"
    memory = available_memory()
    if memory is not None:
        fits = int(memory // (BYTES_PER_VALUE * n_features))
        if fits < rows:
            rows, rule = max(fits, 10_000), f"limited by {memory / 2**30:.1f} GiB of free memory"
    return rows, rule


@dataclass
class Result:
    name: str
    device: str
    status: str = "ok"  # "ok", "failed" or "not installed"
    error: str | None = None
    fit_times: list = field(default_factory=list)
    predict_times: list = field(default_factory=list)
    accuracy: float | None = None
    model: object = None  # the last fitted model

    @property
    def fit_s(self):
        return statistics.median(self.fit_times) if self.fit_times else None

    @property
    def predict_s(self):
        return statistics.median(self.predict_times) if self.predict_times else None

    def as_dict(self, reference: Result | None):
        def ratio(mine, theirs):
            return mine / theirs if mine is not None and theirs else None

        return {
            "name": self.name,
            "device": self.device,
            "status": self.status,
            "error": self.error,
            "fit_s": self.fit_s,
            "predict_s": self.predict_s,
            "fit_s_all": self.fit_times,
            "predict_s_all": self.predict_times,
            "accuracy": self.accuracy,
            "fit_ratio": ratio(self.fit_s, reference.fit_s if reference else None),
            "predict_ratio": ratio(self.predict_s, reference.predict_s if reference else None),
        }


def _xgboost_has_cuda(xgboost) -> bool:
    try:
        return bool(xgboost.build_info().get("USE_CUDA"))
    except Exception:  # an old or odd build: treat it as CPU-only
        return False


def peers(depth: int, bins: int, backend: str):
    """(name, device, factory or None, why it is missing) of each peer this bench knows."""
    found = []
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.tree import DecisionTreeClassifier as SklearnTree

        found.append(
            (
                "scikit-learn DecisionTreeClassifier",
                "cpu",
                lambda: SklearnTree(max_depth=depth, random_state=0),
                None,
            )
        )
        found.append(
            (
                "scikit-learn HistGradientBoosting (1 iteration)",
                "cpu",
                lambda: HistGradientBoostingClassifier(
                    max_iter=1,
                    learning_rate=1.0,
                    max_depth=depth,
                    max_leaf_nodes=None,
                    max_bins=min(bins, 255),
                    min_samples_leaf=1,
                    early_stopping=False,
                    random_state=0,
                ),
                None,
            )
        )
    except ImportError:
        found.append(("scikit-learn", "cpu", None, "not installed"))
    try:
        import lightgbm

        found.append(
            (
                "LightGBM (1 round)",
                "cpu",
                lambda: lightgbm.LGBMClassifier(
                    n_estimators=1,
                    max_depth=depth,
                    num_leaves=min(2**depth, 131072),
                    max_bin=bins,
                    learning_rate=1.0,
                    min_child_samples=1,
                    min_child_weight=0.0,
                    verbose=-1,
                ),
                None,
            )
        )
    except ImportError:
        found.append(("LightGBM", "cpu", None, "not installed"))
    try:
        import xgboost

        xgb_device = "cuda" if backend == "cuda" and _xgboost_has_cuda(xgboost) else "cpu"
        found.append(
            (
                "XGBoost hist (1 round)",
                xgb_device,
                lambda: xgboost.XGBClassifier(
                    n_estimators=1,
                    max_depth=depth,
                    max_bin=bins,
                    learning_rate=1.0,
                    tree_method="hist",
                    grow_policy="depthwise",
                    # Its defaults (a hessian sum of 1, about 4 rows, per child; an L2
                    # penalty of 1) would stop it short of the tree the others grow.
                    min_child_weight=0.0,
                    reg_lambda=0.0,
                    device=xgb_device,
                ),
                None,
            )
        )
    except ImportError:
        found.append(("XGBoost", "cpu", None, "not installed"))
    try:
        from cuml.ensemble import RandomForestClassifier as CumlForest

        found.append(
            (
                "cuML random forest (1 tree, no bootstrap)",
                "cuda",
                lambda: CumlForest(
                    n_estimators=1,
                    bootstrap=False,
                    max_samples=1.0,
                    max_features=1.0,
                    max_depth=depth,
                    n_bins=bins,
                    random_state=0,
                ),
                None,
            )
        )
    except Exception:  # cuML fails on import in many ways without a GPU
        found.append(("cuML", "cuda", None, "not installed"))
    return found


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def time_model(name, device, factory, data, repeats) -> Result:
    """Fit and predict ``repeats`` times (fewer when a fit is slow); never raises."""
    X_train, y_train, X_test, y_test = data
    result = Result(name, device)
    try:
        logger.info("%s: warm-up fit on %d rows", name, min(WARMUP_ROWS, len(y_train)))
        factory().fit(X_train[:WARMUP_ROWS], y_train[:WARMUP_ROWS])
        for k in range(repeats):
            model = factory()
            start = time.perf_counter()
            model.fit(X_train, y_train)
            fit = time.perf_counter() - start
            start = time.perf_counter()
            predicted = np.asarray(model.predict(X_test)).ravel()
            predict = time.perf_counter() - start
            result.fit_times.append(fit)
            result.predict_times.append(predict)
            result.accuracy = float(np.mean(predicted == y_test))
            logger.info(
                "%s: fit %d of %d: %.3f s, predict %.3f s", name, k + 1, repeats, fit, predict
            )
            if sum(result.fit_times) >= FIT_BUDGET_SECONDS and k + 1 < repeats:
                logger.info("%s: %d fit(s) took over %.0f s: no more", name, k + 1,
                            FIT_BUDGET_SECONDS)  # fmt: skip
                break
        result.model = model
    except Exception as exc:  # a peer never stops the run
        result.status, result.error = "failed", _reason(exc)
        logger.info("%s failed: %s", name, result.error)
    return result


def machine() -> dict:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "memory_available_bytes": available_memory(),
    }


def plot_ratios(report: dict, path) -> None:
    """Bar chart of each peer's fit and predict time relative to gpu_tree, atomically."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator

    from ._atomic import atomic_path

    rows = [r for r in report["results"] if r["status"] == "ok" and r["name"] != "gpu_tree"]
    names = [r["name"] for r in rows]
    fig = Figure(figsize=(max(6.0, 1.6 * len(rows) + 2), 4.8), layout="constrained")
    ax = fig.add_subplot()
    positions = np.arange(len(rows))
    width = 0.38
    for offset, key, label in (
        (-width / 2, "fit_ratio", "fit"),
        (width / 2, "predict_ratio", "predict"),
    ):
        values = [r[key] or 0.0 for r in rows]
        bars = ax.bar(positions + offset, values, width, label=label)
        ax.bar_label(bars, labels=[f"{v:.2g}x" for v in values], fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8)
    # One word group per line keeps long peer names from running into each other.
    ax.set_xticks(positions, [textwrap.fill(n, 18, break_long_words=False) for n in names], fontsize=8)
    if rows:
        ax.set_yscale("log")
        # Ratios read as "2x", "0.5x", not as powers of ten.
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    else:
        ax.text(0.5, 0.5, "no peer ran", ha="center", va="center", transform=ax.transAxes)
    settings = report["settings"]
    ax.set_ylabel("time relative to gpu_tree (> 1: gpu_tree faster)")
    ax.set_title(
        f"gpu_tree {report['gpu_tree_version']} on {settings['device']}: "
        f"{settings['train_rows']:,} rows x {settings['features']} features, depth "
        f"{settings['depth']}",
        fontsize=10,
    )
    ax.legend()
    with atomic_path(path) as temporary:
        fig.savefig(temporary, format="png", dpi=120)
