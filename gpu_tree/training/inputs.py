"""Stage 2 of a fit: the training input, checked and coded once; and the input of a
prediction, the same way.

:func:`prepare` decides what X is (a dense host array, a SciPy sparse matrix or a GPU
array: ``data.validation.INPUT_KINDS``), learns the categorical features' categories, codes them,
checks X, y and the sample weights, resolves the size parameters and codes the targets.
Every later stage reads the :class:`PreparedInput` record's ``kind`` rather than asking
the array again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from gpu_tree.backends.cuda import cuda_array_module, cuda_status
from gpu_tree.data.categorical import (
    CategoryMaps,
    check_text_of_numbers,
    column_kinds,
    declared_features,
    resolve_categorical_features,
    warn_id_like,
    with_codes,
)
from gpu_tree.data.frames import as_pandas_frame
from gpu_tree.data.predict_input import checked_host_X, coded_for_predict
from gpu_tree.data.sparse import canonical_csr, check_sparse_X
from gpu_tree.data.validation import (
    DEVICE,
    SPARSE,
    check_sample_weight,
    check_X,
    check_X_on_device,
    check_y,
    feature_names_of,
    input_kind,
)
from gpu_tree.growing.absolute_error import check_absolute_error_fit
from gpu_tree.growing.splitting import CategoricalSearch
from gpu_tree.training.parameters import Settings, SizeParams, resolve_sizes
from gpu_tree.training.targets import CodedTargets, checked_regression_targets, coded_classes
from gpu_tree.utils.device_copies import to_host


@dataclass(frozen=True)
class Task:
    """What the estimator fits: classification or regression, whether y may have several
    outputs, its name for messages, and the words of its Poisson refusals ("tree" or
    "forest", as scikit-learn's)."""

    is_classification: bool
    multi_output: bool
    estimator_name: str
    poisson_kind: str = "tree"


@dataclass(frozen=True)
class Categories:
    """What a fit learns of its categorical features: the maps from values to codes,
    how they are searched (None: no categorical feature), the boolean mask and the
    categories of each feature (None for a numeric one)."""

    maps: CategoryMaps
    search: CategoricalSearch | None
    is_categorical: np.ndarray
    by_feature: list


@dataclass(frozen=True)
class PreparedInput:
    """The training data, checked and coded: X (categories coded; a GPU array stays
    there), the coded targets and weights, and what the estimator records of them."""

    kind: str
    X: object
    coded: CodedTargets
    feature_names: np.ndarray | None
    categories: Categories
    sizes: SizeParams

    @property
    def targets(self) -> np.ndarray:
        return self.coded.targets

    @property
    def weight(self) -> np.ndarray:
        return self.coded.weight

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_outputs(self) -> int:
        return 1 if self.targets.ndim == 1 else self.targets.shape[1]

    @property
    def categorical(self) -> CategoricalSearch | None:
        return self.categories.search


def learn_categories(X, feature_names, settings: Settings) -> Categories:
    """The categorical features of X (a frame or array, or a table of the distinct
    values of a distributed X) and their categories."""
    given = settings.given
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(np.asarray(X, dtype=object))
    n_features = shape[1] if len(shape) == 2 else 0
    mask = resolve_categorical_features(given["categorical_features"], X, n_features, feature_names)
    if mask.any() and input_kind(X) == SPARSE:
        named = np.flatnonzero(mask)[:5].tolist()
        raise ValueError(
            f"X is sparse and categorical_features names features {named}: categorical "
            "features of a sparse X are not supported; pass X dense, or one-hot encode "
            "the categories"
        )
    maps = CategoryMaps(mask, feature_names).fit(X)
    found = maps.categories  # by feature; most fits have none
    by_feature = [found.get(j) for j in range(n_features)] if found else [None] * n_features
    search = None
    if mask.any():
        search = CategoricalSearch(
            features=np.flatnonzero(mask),
            multiway=settings.categorical_split == "multiway",
            max_subset=settings.max_category_subset,
        )
        if search.multiway and settings.criterion == "cart":
            raise ValueError(
                "criterion='cart' scores binary splits only; use categorical_split='binary' "
                "or another criterion with categorical_split='multiway'"
            )
    return Categories(maps, search, mask, by_feature)


def check_category_columns(X, feature_names, categories: Categories, categorical_features):
    """The checks of the categorical columns that read X's rows (a Dask fit learns its
    categories from the partitions' distinct values, and reads its rows there): a column
    of text taken as categorical by its type that reads as numbers but for a few values
    is refused (check_text_of_numbers), and a column of nearly as many categories as
    rows is warned of (warn_id_like)."""
    maps = categories.maps
    n_features = maps.mask.size
    declared, exact = declared_features(categorical_features, n_features, feature_names)
    if not exact:
        kinds = column_kinds(X, n_features)
        detected = [j for j in maps.features if not declared[j] and kinds[j] in ("O", "U", "S")]
        check_text_of_numbers(X, maps, detected, feature_names)
    warn_id_like(maps, len(X), feature_names, stacklevel=2)


def prepare(X, y, sample_weight, settings: Settings, task: Task, device, cpu_only_reason=None):
    """X, y and the sample weights checked and coded for a fit on ``device`` ("cpu" or
    "cuda"; ``cpu_only_reason``: what of the fit runs on the CPU only, named when X is a
    GPU array)."""
    X = as_pandas_frame(X)  # polars, pyarrow, any Arrow table: one path (data/frames.py)
    feature_names = feature_names_of(X)
    categories = learn_categories(X, feature_names, settings)
    if categories.search is not None:
        check_category_columns(X, feature_names, categories, settings.given["categorical_features"])
    X = with_codes(X, categories.maps)
    kind = input_kind(X)
    if kind == DEVICE:
        if device != "cuda":
            if settings.device == "auto" and cpu_only_reason is not None:
                raise ValueError(
                    f"X is a GPU array, but {cpu_only_reason} runs on the CPU only: pass X "
                    "as a numpy array (or SciPy sparse matrix)"
                )
            raise ValueError("X is a GPU array: train on it with device='cuda' (or 'auto')")
        X = check_X_on_device(X, cuda_array_module())
    elif kind == SPARSE:
        X = check_sparse_X(X, estimator_name=task.estimator_name)
    else:
        X = check_X(X)  # NaN passes: a missing value, learned per split
    n_samples, n_features = X.shape
    y = check_y(
        to_host(y),
        n_samples,
        estimator_name=task.estimator_name,
        is_classification=task.is_classification,
        multi_output=task.multi_output,
    )
    weight = check_sample_weight(to_host(sample_weight), n_samples)
    sizes = resolve_sizes(settings, n_samples, n_features)
    if task.is_classification:
        coded = coded_classes(y, weight, settings.given.get("class_weight"))
    else:
        coded = checked_regression_targets(y, weight, settings.criterion, task.poisson_kind)
    return PreparedInput(kind, X, coded, feature_names, categories, sizes)


def check_fit_support(prepared: PreparedInput, settings: Settings):
    """Refuse the fits that multi-output y and the absolute-error criterion do not
    serve (trees and forests alike)."""
    if prepared.n_outputs > 1:
        _check_multi_output_fit(prepared, settings)
    if settings.criterion == "absolute_error":
        check_absolute_error_fit(categorical=prepared.categorical)


def _check_multi_output_fit(prepared: PreparedInput, settings: Settings):
    """Refuse, naming the way out, what multi-output fits do not serve yet: they run
    the vectorised split search (either device), over numeric features, with an impurity
    averaged over the outputs."""
    if settings.criterion in ("cart", "gain_ratio"):
        raise ValueError(
            f"criterion={settings.criterion!r} is defined for one output: multi-output y "
            "is fitted with gini, entropy (log_loss) or misclassification"
        )
    if settings.min_purity < 1.0:
        raise ValueError("min_purity is defined for one output: not with multi-output y")
    if settings.given.get("monotonic_cst") is not None:
        raise ValueError("Monotonicity constraints are not supported with multiple outputs")
    categorical = prepared.categorical
    if categorical is not None and categorical.features.size:
        raise ValueError(
            "multi-output y is split on numeric features only; the categorical features "
            f"{categorical.features.tolist()} need one output (or pass "
            "categorical_features=[] to treat their codes as numbers)"
        )


def refuse_random_categorical(prepared: PreparedInput, drawn_by: str, way_out: str):
    """Random thresholds are drawn for numeric features only: refuse categorical ones,
    naming what draws them (``drawn_by``) and ``way_out``."""
    if prepared.categorical is not None:
        raise ValueError(
            f"{drawn_by} draws thresholds of numeric features only; the categorical "
            f"features {prepared.categorical.features.tolist()} need {way_out} (or "
            "categorical_features=[] to treat their codes as numbers)"
        )


def with_positive_weight(prepared: PreparedInput) -> PreparedInput:
    """The rows of positive weight alone: rows of zero weight do not exist for the tree
    (as in scikit-learn), and must not add split candidates or bin edges."""
    keep = prepared.weight > 0
    if keep.all():
        return prepared
    if not keep.any():
        raise ValueError(
            "no row has a positive weight once class_weight multiplies sample_weight: "
            "nothing to fit"
        )
    X = prepared.X
    if prepared.kind == SPARSE:
        X = canonical_csr(X[np.flatnonzero(keep)])
    elif prepared.kind == DEVICE:
        X = X[cuda_array_module().asarray(keep)]
    else:
        X = X[keep]
    coded = prepared.coded._replace(targets=prepared.targets[keep], weight=prepared.weight[keep])
    return replace(prepared, X=X, coded=coded)


def input_attributes(prepared: PreparedInput) -> dict:
    """The fitted attributes that describe the prepared input (:func:`described_input`)."""
    return described_input(
        prepared.n_features,
        prepared.feature_names,
        prepared.n_outputs,
        prepared.sizes,
        prepared.categories,
        prepared.coded,
    )


def described_input(n_features, feature_names, n_outputs, sizes, categories, coded) -> dict:
    """The fitted attributes that describe a fit's input, as every estimator records
    them (None: the attribute is removed): a distributed fit, whose X is not in memory,
    gives the parts itself. ``coded``: the coded targets, whose classes a classifier
    records."""
    max_features = sizes.max_features
    attributes = {
        "n_features_in_": n_features,
        "feature_names_in_": feature_names,
        "n_outputs_": n_outputs,
        "max_features_": n_features if max_features is None else max_features,
        "is_categorical_": categories.is_categorical,
        "categories_": categories.by_feature,
        "_category_maps": categories.maps,
    }
    if coded.classes is not None:
        attributes["classes_"] = coded.classes
        attributes["n_classes_"] = coded.n_classes
    return attributes


def set_attributes(estimator, attributes: dict):
    """Set each attribute (None: remove it)."""
    for name, value in attributes.items():
        if value is not None:
            setattr(estimator, name, value)
        else:
            estimator.__dict__.pop(name, None)


class PredictInput(NamedTuple):
    """An X to predict, checked and coded as its model's fit was, and its kind."""

    kind: str
    X: object


def prepared_for_predict(model, X) -> PredictInput:
    """X checked against a fitted tree estimator ``model`` and its categorical columns
    coded (data/predict_input.py); a GPU array is checked where it is, on the device."""
    X = coded_for_predict(model, X)
    kind = input_kind(X)
    if kind != DEVICE:
        return PredictInput(kind, checked_host_X(model, X))
    usable, reason, xp = cuda_status()
    if not usable:
        raise ValueError(f"X is a GPU array but the GPU is not usable here: {reason}")
    name = type(model).__name__
    return PredictInput(
        kind,
        check_X_on_device(X, xp, n_features_expected=model.n_features_in_, estimator_name=name),
    )


def refuse_sparse_y(y, message: str):
    """A sparse y, refused with ``message`` (the front end's words)."""
    if input_kind(y) == SPARSE:
        raise ValueError(message)
