"""The estimator classes a model file may name, and what the loader builds them from."""

from __future__ import annotations

from typing import NamedTuple

# The estimator classes a model file may name, by class name. The estimators register
# themselves (gpu_tree.estimators), so that this lower layer never imports them.
_REGISTRY: dict[str, type] = {}
# Ensembles' names -> tree_estimator(ensemble, index): the unfitted tree estimator that holds
# the ensemble's tree ``index`` (its parameters), as the ensemble's fit makes it.
_TREE_ESTIMATORS: dict[str, object] = {}
# Names -> codec of estimators whose fitted state is no Tree (the oblique trees): an object
# with ``document(estimator) -> dict`` (the fields after the header) and
# ``read(reader, document, estimator) -> estimator`` (checks and fills the estimator made
# with the saved parameters; ``reader.fail`` raises the ValueError naming the file).
_CODECS: dict[str, object] = {}


class EstimatorRegistry(NamedTuple):
    """What the loader builds a model file's estimator from, by the file's class name:
    ``classes`` (made with the saved parameters), ``tree_estimators`` (an ensemble's
    ``tree_estimator``) and ``codecs`` (see ``_CODECS``)."""

    classes: dict
    tree_estimators: dict
    codecs: dict


# The estimators' registry (register_estimator fills it). Another registry loads a model
# file into other classes: gpu_tree.model.saved's, which need no estimator.
ESTIMATORS = EstimatorRegistry(_REGISTRY, _TREE_ESTIMATORS, _CODECS)


def register_estimator(estimator_class: type, *, tree_estimator=None, codec=None) -> type:
    """Let model files name ``estimator_class`` (by its class name) and load into it.

    An ensemble of trees (a forest: fitted, its trees are the tree estimators in
    ``estimators_``) is registered with ``tree_estimator(ensemble, index)``, which returns
    the unfitted tree estimator that holds tree ``index`` (its parameters, as the
    ensemble's fit makes them); the loader gives it the shared fitted state and its tree.
    An estimator whose fitted state is no :class:`Tree` brings a ``codec`` (see
    ``_CODECS``) that writes and reads its fields after the common header.
    """
    name = estimator_class.__name__
    if _REGISTRY.get(name, estimator_class) is not estimator_class:
        raise ValueError(f"another estimator class is already registered as {name!r}")
    _REGISTRY[name] = estimator_class
    if tree_estimator is not None:
        _TREE_ESTIMATORS[name] = tree_estimator
    if codec is not None:
        _CODECS[name] = codec
    return estimator_class
