"""Built-in synthetic datasets (numpy only, so the command line needs nothing else)."""

from __future__ import annotations

import numpy as np


def make_higgs_like(
    n_samples: int = 1_000_000,
    n_features: int = 28,
    random_state=0,
    dtype=np.float64,
    n_classes: int = 2,
):
    """A binary problem shaped like HIGGS: 28 dense real features, about 53% positives.

    Like HIGGS, the first features are "low-level" (momenta and angles: skewed and
    symmetric marginals), the last seven "high-level" (smooth nonlinear functions of the
    low-level ones, like invariant masses); the label depends on a few of them through
    interactions plus noise, so a depth-10 tree reaches roughly 70% accuracy.

    ``n_classes`` > 2 makes it multiclass: the same score cut at its quantiles into
    ``n_classes`` classes of about equal size (ordered classes, like binned energies).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), int64 in {0, 1} (in 0..n_classes-1)
    """
    if n_samples < 1 or n_features < 2:
        raise ValueError(
            f"need n_samples >= 1 and n_features >= 2, got {n_samples} and {n_features}"
        )
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    rng = np.random.default_rng(random_state)
    n_high = min(7, n_features // 4)
    n_low = n_features - n_high
    X = np.empty((n_samples, n_features), dtype=dtype)
    momenta = rng.gamma(shape=2.0, scale=0.5, size=(n_samples, n_low))
    angles = rng.uniform(-np.pi, np.pi, size=(n_samples, n_low))
    is_angle = np.arange(n_low) % 3 == 1
    X[:, :n_low] = np.where(is_angle, angles, momenta)
    for k in range(n_high):
        a, b = X[:, (2 * k) % n_low], X[:, (2 * k + 3) % n_low]
        c = X[:, (k + 1) % n_low]
        X[:, n_low + k] = np.sqrt(np.abs(a * b) * (1.0 + np.cos(c))) + 0.1 * rng.normal(
            size=n_samples
        )
    score = (
        1.2 * np.tanh(X[:, n_low] - 1.0)
        + 0.8 * np.sin(X[:, 1]) * X[:, 0]
        - 0.6 * (X[:, 3] > 1.0) * (X[:, min(5, n_features - 1)] - 0.5)
        + 0.4 * X[:, min(n_low + 1, n_features - 1)] * (X[:, 2] < 0.8)
        + 0.9 * rng.normal(size=n_samples)
    )
    if n_classes == 2:
        y = (score > np.quantile(score, 0.47)).astype(np.int64)
    else:
        cuts = np.quantile(score, np.arange(1, n_classes) / n_classes)
        y = np.searchsorted(cuts, score, side="right").astype(np.int64)
    return X, y
