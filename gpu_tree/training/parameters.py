"""Every estimator parameter, declared once: its type, its range or choices, its check
and its documentation. The table drives the checks (:func:`check_settings`,
:func:`resolve_sizes`), the estimators' docstrings (:func:`documented`) and the command
line's integer ranges (:func:`int_bounds`); model files store the parameters that
``get_params`` names, which are the table's.

A parameter is checked at the first stage that can check it:

- ``settings``: on its own, before any data is read (:func:`check_settings`);
- ``data``: with the training data, whose rows or features it depends on
  (:func:`resolve_sizes`, the input preparation, ``check_monotonic_cst``);
- ``display``: by the progress display (``utils.progress.check_verbose``);
- ``forest``: by the forest, which alone has it.

The device a fit runs on is then resolved on the machine (:func:`resolve_training_device`).
This module imports no backend, search or compiled code: the command line reads it to
start fast.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from gpu_tree.data.binning import MAX_BINS_LIMIT, check_max_bins
from gpu_tree.data.categorical import CATEGORICAL_SPLITS
from gpu_tree.training.checks import (
    check_feature_costs,
    check_float,
    check_int,
    count_or_fraction,
    random_generator,
    resolve_max_features,
)
from gpu_tree.utils.device_names import DEVICES

# "best": scikit-learn's name for exact search; "random": extremely randomised trees' split
SPLITTERS = ("hist", "random", "exact", "best")


def _check_criterion(criterion, is_classification):
    # The criteria live with the search (growing/criteria.py), which the command line,
    # reading this table, does not import.
    from gpu_tree.growing.criteria import check_criterion

    return check_criterion(criterion, is_classification)


def _check_cost_criterion(cost_criterion, _is_classification):
    from gpu_tree.growing.criteria import check_cost_criterion

    return check_cost_criterion(cost_criterion)


def _check_device(device, _is_classification):
    if device not in DEVICES:
        raise ValueError(f"Unknown device={device!r}; choose one of {list(DEVICES)}")
    return device


def _check_splitter(splitter, _is_classification):
    if splitter not in SPLITTERS:
        raise ValueError(f"Unknown splitter={splitter!r}; choose one of {list(SPLITTERS)}")
    return splitter


def _check_categorical_split(categorical_split, _is_classification):
    if categorical_split not in CATEGORICAL_SPLITS:
        raise ValueError(
            f"Unknown categorical_split={categorical_split!r}; choose one of "
            f"{list(CATEGORICAL_SPLITS)}"
        )
    return categorical_split


@dataclass(frozen=True)
class Parameter:
    """One parameter: ``type_doc`` and ``doc`` are its numpydoc entry; ``docs`` holds the
    entries of estimators that read it otherwise (keys "regressor", "forest", "forest
    regressor"; the most specific wins). ``check(value, is_classification)`` checks it at
    the ``settings`` stage; ``low`` and ``high`` bound an integer parameter; ``choices``
    are a parameter's names where it takes one of a few."""

    name: str
    stage: str
    type_doc: str
    doc: str
    check: Callable | None = None
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] | None = None
    docs: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def entry(self, kinds: tuple[str, ...]) -> tuple[str, str]:
        """(type, text) of this parameter's docstring entry for an estimator of ``kinds``
        (e.g. ("forest", "regressor"))."""
        for key in (" ".join(kinds), *kinds):
            if key in self.docs:
                return self.docs[key]
        return self.type_doc, self.doc


def _int(name, low, high=None, allow_none=False):
    return lambda value, _is_classification: check_int(name, value, low, high, allow_none)


def _float(name, low, high, **open_ends):
    return lambda value, _is_classification: check_float(name, value, low, high, **open_ends)


_REGRESSION_CRITERION = (
    '{"squared_error", "poisson", "absolute_error"}',
    """\
"squared_error": variance reduction, nodes' ``impurity`` their weighted variance;
"poisson": reduction of the half Poisson deviance, as scikit-learn's, for
non-negative targets (counts, rates) of a positive sum, nodes' ``impurity`` their
mean half Poisson deviance; a split leaving a child whose targets sum to 0 is
never made. Leaves predict their weighted mean target with either.
"absolute_error": reduction of ``sum w |y - median|``, as scikit-learn's; leaves
predict their weighted median, nodes' ``impurity`` is their mean absolute
deviation. Splits are searched on each node's rows, on either device (exact
search on the CPU only), dense or sparse X, numeric features only; categorical
features and Dask collections are refused.
"friedman_mse" is deprecated and maps to "squared_error", as in scikit-learn 1.9.""",
)

_FOREST_MAX_FEATURES = """\
Features drawn for each node's search, among those not constant in the node
(default "sqrt" for a classifier, 1.0, every feature, for a regressor, as in
scikit-learn)."""

PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter(
            "criterion",
            "settings",
            '{"gini", "entropy", "log_loss", "gain_ratio", "cart", "misclassification"}',
            """\
Split measure: Gini index (Breiman et al.'s CART, 1984), information gain
(entropy, Quinlan's ID3, 1986; ``log_loss`` is an alias), gain ratio (Quinlan's
C4.5, 1993), the CART measure, misclassification rate (Zaki and Meira, *Data
Mining and Machine Learning*, chapter 19).""",
            check=_check_criterion,
            docs={"regressor": _REGRESSION_CRITERION},
        ),
        Parameter(
            "splitter",
            "settings",
            '{"hist", "exact", "best", "random"}',
            """\
``hist`` searches bin boundaries of per-feature histograms; ``exact`` sorts each
node's values and tries every midpoint (the reference); ``best`` is
scikit-learn's name for that same exact search. ``random`` (extremely randomised
trees, Geurts, Ernst and Wehenkel 2006; :class:`gpu_tree.ExtraTreeClassifier`): each
searched feature gets one threshold drawn uniformly between the node's lowest and
highest value, from the counter-based generator (so both devices draw the same),
and the split follows the last bin at or below it; numeric features only. With no
more distinct values per feature than ``max_bins`` they build the same tree;
``hist`` adds speed (one pass over a node's rows per level, on a GPU too) and the
subtraction of sibling histograms.""",
            check=_check_splitter,
            choices=SPLITTERS,
        ),
        Parameter(
            "max_depth",
            "settings",
            "int or None",
            "Deepest level a node may be split at (root is depth 0).",
            check=_int("max_depth", 1, allow_none=True),
            low=1,
        ),
        Parameter(
            "min_samples_split",
            "data",
            "int or float",
            """\
Fewest rows a node needs to be split (Zaki and Meira's leaf-size threshold eta
of Algorithm 19.1, plus 1); a float is a fraction.""",
            low=2,
        ),
        Parameter(
            "min_samples_leaf",
            "data",
            "int or float",
            "Fewest rows each child must keep; a float is a fraction.",
            low=1,
        ),
        Parameter(
            "min_weight_fraction_leaf",
            "settings",
            "float",
            "Fewest (weighted) rows each child must keep, as a fraction of the total weight.",
            check=_float("min_weight_fraction_leaf", 0.0, 0.5),
        ),
        Parameter(
            "max_features",
            "data",
            'int, float, "sqrt", "log2" or None',
            "Features drawn at random for each node's search (None: all).",
            docs={"forest": ('int, float, "sqrt", "log2" or None', _FOREST_MAX_FEATURES)},
        ),
        Parameter(
            "random_state",
            "settings",
            "int, numpy Generator or None",
            "Seed of the per-node feature draws.",
            check=lambda value, _is_classification: random_generator(value),
            docs={
                "forest": (
                    "int, numpy Generator or None",
                    "Seed of the bootstrap samples and of every node's feature draws.",
                )
            },
        ),
        Parameter(
            "max_leaf_nodes",
            "settings",
            "int or None",
            "Grow best-first (largest weighted impurity decrease first) up to this many leaves.",
            check=_int("max_leaf_nodes", 2, allow_none=True),
            low=2,
        ),
        Parameter(
            "min_impurity_decrease",
            "settings",
            "float",
            """\
A split must decrease the weighted impurity (N_t/N times its score) by at least
this much (as scikit-learn's parameter of the same name).""",
            check=_float("min_impurity_decrease", 0.0, math.inf),
        ),
        Parameter(
            "class_weight",
            "data",
            'dict, list of dicts, "balanced" or None',
            """\
Weights multiplying each class's sample weights ("balanced": the number of rows
over the number of classes times the class's rows, as scikit-learn's); for
several outputs, a list of one dict per output, or "balanced".""",
            docs={
                "forest": (
                    'dict, list of dicts, "balanced", "balanced_subsample" or None',
                    """\
As the tree's; "balanced_subsample" weighs classes by their counts in each
tree's bootstrap sample (with several outputs, the product of every output's
weights), and is "balanced" without bootstrap, as in scikit-learn.""",
                )
            },
        ),
        Parameter(
            "max_bins",
            "settings",
            "int",
            f"Bins per feature in histogram mode, 2..{MAX_BINS_LIMIT}.",
            check=lambda value, _is_classification: check_max_bins(value),
            low=2,
            high=MAX_BINS_LIMIT,
        ),
        Parameter(
            "min_purity",
            "settings",
            "float",
            """\
A node whose majority-class fraction reaches this is a leaf (the purity threshold
pi of Zaki and Meira's Algorithm 19.1).""",
            check=_float("min_purity", 0.0, 1.0, low_open=True),
        ),
        Parameter(
            "device",
            "settings",
            '{"auto", "cpu", "cuda"}',
            """\
Where to train. ``auto`` picks the GPU when one is usable (and the CPU for what runs
there only). The name is checked with the settings; the device is resolved on the
machine that fits (``backends.devices.resolve_device``).""",
            check=_check_device,
            choices=DEVICES,
        ),
        Parameter(
            "categorical_features",
            "data",
            'None, "from_dtype", list of indices or names, or boolean mask',
            """\
The categorical features. None (the default) and "from_dtype": the columns whose
type says so, a pandas ``category``, polars ``Categorical`` or ``Enum`` or Arrow
dictionary column and a column of text (a DataFrame's object or string column, a
numpy string or object column, whose present values are all strings); a column
mixing numbers and text is refused, and so is a column of text whose values all
read as numbers but for at most max(3, 1%) of them (and a tenth): typos, far
likelier than categories. A list of indices or names adds to those (columns of
numbers are numeric unless listed; a listed column of text is not checked for
typos); a boolean mask says exactly which, and an empty list makes every column
numeric. The values of a categorical feature are labels (numbers or strings);
missing values and, at prediction, categories not seen in training follow each
node's missing rule. A feature may have at most ``max_bins`` categories (one less
with missing values); one with more categories than half the rows (from 20 rows)
is warned of, as a likely identifier.""",
        ),
        Parameter(
            "categorical_split",
            "settings",
            '{"binary", "multiway"}',
            """\
``binary``: splits "x in V" (Zaki and Meira, Algorithm 19.3), V a subset of the
categories; exact for binary targets and regression (categories ordered by
P(class 1) or the mean target), searched for multiclass targets as described
under ``max_category_subset``. ``multiway``: one child per category (Quinlan's
ID3), and the feature is not tested again below; missing values and unseen
categories go to the largest branch. Numeric features always split in two.""",
            check=_check_categorical_split,
            choices=CATEGORICAL_SPLITS,
        ),
        Parameter(
            "max_category_subset",
            "settings",
            "int",
            """\
Multiclass targets, binary splits: every subset of at most this many categories
is tried (Zaki and Meira's l in Algorithm 19.3; exhaustive up to 2 * l + 1
categories at a node), and so is every prefix of the categories ordered by P(c),
for each class c. Subsets are tried at nodes whose categories give at most 65,536
of them (361 categories for l = 2, 73 for l = 3); at larger nodes the prefixes
alone are the search, so time and memory stay linear in the number of
categories.""",
            check=_int("max_category_subset", 0),
            low=0,
        ),
        Parameter(
            "ccp_alpha",
            "settings",
            "float >= 0",
            """\
Minimal cost-complexity pruning after growth (Breiman et al.'s CART, 1984:
``alpha * size + sum of leaf impurities``, size counted in leaves, as in
scikit-learn): weakest links are collapsed while their effective alpha is <=
``ccp_alpha``. 0 prunes nothing. See ``cost_complexity_pruning_path`` for
useful values, and ``reduced_error_prune`` for pruning on a validation set
instead.""",
            check=_float("ccp_alpha", 0.0, math.inf),
            docs={
                "forest": (
                    "float >= 0",
                    "Minimal cost-complexity pruning of each tree after growth, as the tree's.",
                )
            },
        ),
        Parameter(
            "feature_costs",
            "data",
            "array-like of shape (n_features,) or None",
            """\
What measuring each feature costs, finite and >= 0. None: no costs, every node
splits on its best split. With costs, a node's feature is the one of the highest
cost-sensitive measure (``cost_criterion``) of its best split's gain and the
feature's cost, so that informative features that are cheap to measure are
preferred (features with differing costs); the split itself is that feature's
best. The stopping rules (``min_impurity_decrease`` and the others) still read
the gain, and best-first growth (``max_leaf_nodes``) still expands the node of the
largest weighted gain first. ``prediction_cost`` gives the cost of predicting
each row. Multiway categorical splits are chosen the same way. Forests take no
costs.""",
        ),
        Parameter(
            "cost_criterion",
            "settings",
            '{"tan_schlimmer", "nunez"}',
            """\
The cost-sensitive measure, of a split's ``gain`` and its feature's ``cost``:

- ``"tan_schlimmer"``: gain**2 / cost (M. Tan and J. C. Schlimmer, "Two case
  studies in cost-sensitive concept acquisition", *AAAI-90*, 1990). A cost of 0 is
  refused (a ValueError naming the feature): the measure divides by it.
- ``"nunez"``: (2**gain - 1) / (cost + 1)**cost_weight (M. Núñez, "The use of
  background knowledge in decision tree induction", *Machine Learning* 6, 1991).
  Free features (cost 0) are allowed.

``gain`` is the split's score under ``criterion``: its impurity decrease, so the
information gain in bits for ``entropy`` (as both papers use) and the variance
decrease, in the target's units squared, for a regressor; for ``gain_ratio`` and
``cart`` their own score stands for it. Measures equal within rounding tie, and
the lowest feature index wins, as everywhere in the tree.""",
            check=_check_cost_criterion,
        ),
        Parameter(
            "cost_weight",
            "settings",
            "float >= 0",
            """\
Núñez's w: how much the cost counts (0: not at all, 1: fully; the paper takes it
in [0, 1]). Read by ``cost_criterion="nunez"`` only.""",
            check=_float("cost_weight", 0.0, math.inf, high_open=True),
        ),
        Parameter(
            "monotonic_cst",
            "data",
            "array-like of int of shape (n_features,) or None",
            """\
The monotonicity constraint of each feature, as scikit-learn's: 1 predictions
non-decreasing in the feature, -1 non-increasing, 0 no constraint; None
constrains nothing. Binary classification (the constraints hold over the
probability of the positive class, ``classes_[1]``) and regression only:
multiclass targets and constrained categorical features are refused. A split on
a constrained feature is made only if its children's values are ordered and
within the node's bounds, and the children's bounds meet at the mean of their
values; node values are clipped into their bounds (scikit-learn's algorithm).
Searched by the vectorised split search (slower than the compiled one), in every
mode.""",
        ),
        Parameter(
            "verbose",
            "display",
            "{0, 1, 2}",
            """\
What ``fit`` shows on standard error: 0 nothing; 1 progress bars (binning, the
tree's levels, with rates and, under a ``max_depth``, an ETA); 2 a line per step
(binning, each level, the tree grown). The records go through the ``"gpu_tree"``
logger (gpu_tree.utils.progress), which a program may also configure itself.""",
            docs={"forest": ("{0, 1, 2}", "Progress on standard error, per batch of trees.")},
        ),
        Parameter(
            "n_estimators",
            "forest",
            "int",
            "Trees in the forest.",
            check=_int("n_estimators", 1),
            low=1,
        ),
        Parameter(
            "bootstrap",
            "forest",
            "bool",
            """\
Each tree grows on a bootstrap sample (rows drawn with replacement, weighted by
the times drawn); False: every tree on every row.""",
        ),
        Parameter(
            "oob_score",
            "forest",
            "bool or callable",
            """\
Score the forest on each row's out-of-bag trees: ``oob_score_`` (the accuracy;
of several outputs, the subset accuracy, as ``score``) and
``oob_decision_function_``. A callable is the score, called as scikit-learn
calls it: ``oob_score(y, y_pred)``, y the class indices (n_samples, n_outputs)
as float64 and y_pred the argmax of ``oob_decision_function_`` over its classes.
As scikit-learn, refused for multiclass-multioutput y (several outputs, one of
more than two classes).""",
            docs={
                "regressor": (
                    "bool or callable",
                    """\
Score the forest on each row's out-of-bag trees: ``oob_score_`` (R²) and
``oob_prediction_``; a callable is the score, called as ``oob_score(y,
oob_prediction_)``, y of shape (n_samples, n_outputs), as scikit-learn calls it.""",
                )
            },
        ),
        Parameter(
            "n_jobs",
            "forest",
            "int or None",
            "CPU threads for growing and predicting (None: every core; -1 too).",
        ),
        Parameter(
            "warm_start",
            "forest",
            "bool",
            "Keep the fitted trees and add ``n_estimators - len(estimators_)`` new ones.",
        ),
        Parameter(
            "max_samples",
            "forest",
            "int, float or None",
            """\
Rows drawn per tree, as scikit-learn's: an int >= 1 (more than there are rows
too), or a float > 0 (above 1.0 too), that fraction of the rows rounded down;
None: as many as there are rows. A sample whose row indices cannot fit in the
memory available is refused.""",
        ),
    )
}


@dataclass(frozen=True)
class Settings:
    """The tree parameters, checked where they can be without data (the ``settings``
    stage) and as given otherwise (``given``: every parameter, by name)."""

    criterion: str
    splitter: str
    max_bins: int
    max_depth: int | None
    max_leaf_nodes: int | None
    min_impurity_decrease: float
    min_weight_fraction_leaf: float
    min_purity: float
    ccp_alpha: float
    rng: np.random.Generator
    cost_criterion: str
    cost_weight: float
    categorical_split: str
    max_category_subset: int
    device: str
    given: Mapping[str, object]


# The settings-stage parameters in the order they are checked (the first error wins).
_SETTINGS_ORDER = (
    "criterion",
    "splitter",
    "max_bins",
    "max_depth",
    "max_leaf_nodes",
    "min_impurity_decrease",
    "min_weight_fraction_leaf",
    "min_purity",
    "ccp_alpha",
    "random_state",
    "cost_criterion",
    "cost_weight",
    "categorical_split",
    "max_category_subset",
    "device",
)
# Values of the parameters an estimator may lack (a regressor has no min_purity, a
# forest no feature costs): what leaves them without effect.
_ABSENT = {"min_purity": 1.0, "cost_criterion": "tan_schlimmer", "cost_weight": 1.0}


def check_settings(params: Mapping[str, object], is_classification: bool) -> Settings:
    """Every settings-stage parameter of ``params`` (an estimator's ``get_params``)
    checked, in a fixed order, each by its table entry."""
    given = {**_ABSENT, **params}
    checked = {
        name: PARAMETERS[name].check(given[name], is_classification) for name in _SETTINGS_ORDER
    }
    checked["rng"] = checked.pop("random_state")
    return Settings(**checked, given=given)


class SizeParams(NamedTuple):
    """The parameters that depend on the numbers of rows and features, resolved."""

    min_samples_split: int
    min_samples_leaf: int
    max_features: int | None
    feature_costs: np.ndarray | None  # float64, one per feature; None: no costs


def resolve_sizes(settings: Settings, n_samples: int, n_features: int) -> SizeParams:
    """The parameters given as fractions of the rows or features, resolved."""
    given = settings.given
    return SizeParams(
        min_samples_split=count_or_fraction(
            "min_samples_split", given["min_samples_split"], n_samples, 2, 1.0, False
        ),
        min_samples_leaf=count_or_fraction(
            "min_samples_leaf", given["min_samples_leaf"], n_samples, 1, 1.0, True
        ),
        max_features=resolve_max_features(given["max_features"], n_features),
        feature_costs=check_feature_costs(
            given.get("feature_costs"), n_features, settings.cost_criterion
        ),
    )


def int_bounds(name: str) -> tuple[int | None, int | None]:
    """(low, high) of an integer parameter (None: unbounded), for the command line."""
    parameter = PARAMETERS[name]
    return parameter.low, parameter.high


def choices_of(name: str) -> tuple[str, ...]:
    """The names a parameter of a few choices takes, for the command line."""
    choices = PARAMETERS[name].choices
    if choices is None:
        raise KeyError(f"{name} takes no fixed choices")
    return choices


def documented(*kinds: str):
    """A class decorator: the class's docstring gains a "Parameters" section, one entry
    per parameter of its ``__init__`` in signature order, each with its default, from
    the table's entry for an estimator of ``kinds`` (e.g. "forest", "regressor"). The
    section goes after the docstring's first paragraph, before the rest."""

    def decorate(cls):
        signature = inspect.signature(cls.__init__)
        lines = ["Parameters", "----------"]
        for p in list(signature.parameters.values())[1:]:
            type_doc, text = PARAMETERS[p.name].entry(kinds)
            default = f'"{p.default}"' if isinstance(p.default, str) else repr(p.default)
            lines.append(f"{p.name} : {type_doc}, default={default}")
            lines += [f"    {line}" if line else "" for line in text.splitlines()]
        summary, _, rest = inspect.cleandoc(cls.__doc__ or "").partition("\n\n")
        parts = [summary, "\n".join(lines)] + ([rest] if rest else [])
        cls.__doc__ = "\n\n".join(parts) + "\n"
        return cls

    return decorate


class TrainingDevice(NamedTuple):
    """Where a fit runs ("cpu" or "cuda"), and what of it runs on the CPU only (None:
    nothing), which ``device="auto"`` then fits there rather than refuse."""

    name: str
    cpu_only_reason: str | None


def resolve_training_device(settings: Settings) -> TrainingDevice:
    """The machine stage of ``device``: the device this fit runs on here."""
    from gpu_tree.backends.contract import EXACT_SPLITTERS
    from gpu_tree.backends.devices import resolve_device

    reason = None
    if settings.splitter in EXACT_SPLITTERS:
        reason = f"splitter={settings.splitter!r} (exact search)"
    return TrainingDevice(resolve_device(settings.device, reason), reason)


def check_parameter(name: str, value, is_classification: bool = False):
    """One parameter checked by its table entry (a forest's own, say)."""
    return PARAMETERS[name].check(value, is_classification)
