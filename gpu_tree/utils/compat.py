"""scikit-learn integration without a hard dependency on scikit-learn.

With scikit-learn installed the estimators derive from its ``BaseEstimator`` and mixins
(``clone``, pipelines, ``check_estimator`` all work) and raise its exception classes.
Without it, small stand-ins give the same public behaviour: ``get_params``,
``set_params``, ``score``, and ``NotFittedError`` as a ``ValueError``.

scikit-learn is imported on first use of one of its names here (PEP 562), not with this
module: importing it (with SciPy and pandas, which it imports) takes seconds, and what
reads a model file without its estimator class (the ``gputree`` command's ``info``,
``predict`` and ``export``) or checks data (``gpu_tree.data.validation``) needs none of it.
"""

from __future__ import annotations

import functools
import importlib
import inspect

import numpy as np

# Where scikit-learn keeps the names this module gives, each loaded on first use.
_SKLEARN_NAMES = {
    "BaseEstimator": "sklearn.base",
    "ClassifierMixin": "sklearn.base",
    "RegressorMixin": "sklearn.base",
    "DataConversionWarning": "sklearn.exceptions",
    "NotFittedError": "sklearn.exceptions",
    "Bunch": "sklearn.utils",
}


def __getattr__(name):
    if name != "HAVE_SKLEARN" and name not in _SKLEARN_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _loaded(name)


def _loaded(name):
    """The name's value, scikit-learn's names resolved on the first call (later lookups
    find them in the module and skip ``__getattr__``)."""
    if name not in globals():
        globals().update(_resolved())
    return globals()[name]


def _resolved() -> dict:
    """scikit-learn's classes by name, or without it the stand-ins, and HAVE_SKLEARN."""
    try:  # pragma: no cover - exercised whichever way the environment is
        found = {
            name: getattr(importlib.import_module(module), name)
            for name, module in _SKLEARN_NAMES.items()
        }
        return {**found, "HAVE_SKLEARN": True}
    except ImportError:  # pragma: no cover
        return {name: _STAND_INS[name] for name in _SKLEARN_NAMES} | {"HAVE_SKLEARN": False}


class _NotFittedError(ValueError, AttributeError):
    """Raised when an estimator is used before ``fit``."""


class _DataConversionWarning(UserWarning):
    """Raised when input data was converted (e.g. a column-vector y)."""


class _Bunch(dict):
    """A dict whose keys are also attributes."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value


class _BaseEstimator:
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
                raise ValueError(f"Invalid parameter {key!r} for estimator {type(self).__name__}")
            setattr(self, key, value)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class _ClassifierMixin:
    _estimator_type = "classifier"

    def score(self, X, y, sample_weight=None):
        return float(np.average(self.predict(X) == np.asarray(y), weights=sample_weight))


class _RegressorMixin:
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


# Without scikit-learn: the stand-ins, under scikit-learn's names.
_STAND_INS = {
    "BaseEstimator": _BaseEstimator,
    "ClassifierMixin": _ClassifierMixin,
    "RegressorMixin": _RegressorMixin,
    "DataConversionWarning": _DataConversionWarning,
    "NotFittedError": _NotFittedError,
    "Bunch": _Bunch,
}
for _name, _stand_in in _STAND_INS.items():
    _stand_in.__name__ = _stand_in.__qualname__ = _name


class ParameterNamesOnce:
    """A mixin, before ``BaseEstimator`` in the bases: a class's parameter names (its
    constructor's signature) read once per class, where ``BaseEstimator`` reads the
    signature at every ``get_params``: 0.05-0.1 ms, about 5 % of a small fit."""

    @classmethod
    def _get_param_names(cls):
        return list(_parameter_names(cls))


@functools.cache
def _parameter_names(cls) -> tuple:
    return tuple(super(ParameterNamesOnce, cls)._get_param_names())


def check_fitted(estimator, fitted, caller=None):
    """Raise :class:`NotFittedError`, scikit-learn's message naming ``estimator``'s class
    (after ``caller``: the function that needs it fitted), unless ``fitted`` (whether its
    fitted attributes are there)."""
    if not fitted:
        where = f"{caller}: " if caller else ""
        raise _loaded("NotFittedError")(
            f"{where}This {type(estimator).__name__} instance is not fitted yet. Call 'fit' "
            "with appropriate arguments before using this estimator."
        )


# scikit-learn's names are module attributes only once loaded (__getattr__).
__all__ = ["HAVE_SKLEARN", "ParameterNamesOnce", "check_fitted", *_SKLEARN_NAMES]  # noqa: F822
