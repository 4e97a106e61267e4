"""scikit-learn integration without a hard dependency on scikit-learn.

With scikit-learn installed the estimators derive from its ``BaseEstimator`` and mixins
(``clone``, pipelines, ``check_estimator`` all work) and raise its exception classes.
Without it, small stand-ins give the same public behaviour: ``get_params``,
``set_params``, ``score``, and ``NotFittedError`` as a ``ValueError``.
"""

from __future__ import annotations

import inspect

import numpy as np

try:  # pragma: no cover - exercised whichever way the environment is
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import DataConversionWarning, NotFittedError
    from sklearn.utils import Bunch

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover
    HAVE_SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """Raised when an estimator is used before ``fit``."""

    class DataConversionWarning(UserWarning):
        """Raised when input data was converted (e.g. a column-vector y)."""

    class Bunch(dict):
        """A dict whose keys are also attributes."""

        def __getattr__(self, key):
            try:
                return self[key]
            except KeyError:
                raise AttributeError(key) from None

        def __setattr__(self, key, value):
            self[key] = value

    class BaseEstimator:
        @classmethod
        def _get_param_names(cls):
            signature = inspect.signature(cls.__init__)
            return sorted(
                p.name
                for p in signature.parameters.values()
                if p.name != "self" and p.kind != p.VAR_KEYWORD
            )

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(
                        f"Invalid parameter {key!r} for estimator {type(self).__name__}"
                    )
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClassifierMixin:
        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            return float(np.average(self.predict(X) == np.asarray(y), weights=sample_weight))

    class RegressorMixin:
        _estimator_type = "regressor"

        def score(self, X, y, sample_weight=None):
            y = np.asarray(y, dtype=np.float64)
            pred = self.predict(X)
            w = (
                np.ones_like(y)
                if sample_weight is None
                else np.asarray(sample_weight, dtype=np.float64)
            )
            residual = np.sum(w * (y - pred) ** 2)
            total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
            return float(1.0 - residual / total) if total > 0 else 0.0


def check_fitted(estimator, fitted, caller=None):
    """Raise :class:`NotFittedError`, scikit-learn's message naming ``estimator``'s class
    (after ``caller``: the function that needs it fitted), unless ``fitted`` (whether its
    fitted attributes are there)."""
    if not fitted:
        where = f"{caller}: " if caller else ""
        raise NotFittedError(
            f"{where}This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "with appropriate arguments before using this estimator."
        )


__all__ = [
    "HAVE_SKLEARN",
    "Bunch",
    "BaseEstimator",
    "ClassifierMixin",
    "RegressorMixin",
    "NotFittedError",
    "check_fitted",
    "DataConversionWarning",
]
