"""What a fitted tree does to an X before it predicts it: one place for the estimators
(:mod:`gpu_tree.estimators.tree`) and the saved models the command line reads
(:mod:`gpu_tree.model.saved`), so that both accept, code and refuse the same X with the
same messages."""

from __future__ import annotations

import numpy as np

from gpu_tree.data.categorical import with_codes
from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.sparse import check_sparse_X
from gpu_tree.data.validation import check_feature_names, check_X, is_sparse
from gpu_tree.utils.device_copies import is_device_array


def coded_for_predict(model, X):
    """``X`` (a frame as pandas where it is one) with its feature names checked against
    ``model``'s fit and its categorical columns coded by the fit's category maps (unseen
    categories become NaN: the missing-value rule). The names are checked before any
    coding, as categorical columns are read by position; on a GPU array only where some
    feature is categorical (its columns have no names)."""
    X = as_pandas_frame(X)
    maps = getattr(model, "_category_maps", None)
    categorical = maps is not None and maps.features.size > 0
    if categorical or not is_device_array(X):
        check_feature_names(model, X)
    if categorical:
        n_features = np.shape(X)[1] if len(np.shape(X)) == 2 else None
        if n_features != model.n_features_in_:
            check_X(
                X, n_features_expected=model.n_features_in_, estimator_name=type(model).__name__
            )
        X = with_codes(X, maps)
    return X


def checked_host_X(model, X):
    """A host ``X`` (NumPy-like or SciPy sparse) checked as ``model`` predicts it: its
    shape against the fit's features, its values and dtype."""
    check = check_sparse_X if is_sparse(X) else check_X
    return check(X, n_features_expected=model.n_features_in_, estimator_name=type(model).__name__)


def refuse_device_array(model, X):
    """X, refused where it is a GPU array: a model read from a file for the command line
    (model/saved.py) predicts on the host only."""
    if is_device_array(X):
        raise ValueError(
            f"a {type(model).__name__} read from a model file predicts host arrays; load "
            "it with gpu_tree.load to predict a GPU array"
        )
    return X
