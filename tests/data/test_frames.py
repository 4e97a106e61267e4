"""Every kind of DataFrame takes one path (data/frames.py): polars, pyarrow Tables and
RecordBatches, anything exporting an Arrow stream or the interchange protocol grow the tree
that the same data grows as a pandas DataFrame, with its feature names, and categorical
columns recognised from their types (polars Categorical/Enum, Arrow dictionary, text)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor
from gpu_tree.data.frames import as_pandas_frame, is_other_frame
from gpu_tree.testing import assert_tree_equal

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")


def _columns(n=400, seed=0):
    """A numeric column with missing values, a category column, an ordered enum, a text
    column with a missing value, and an integer column with nulls; y depends on three."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.nan
    colour = rng.choice(["red", "green", "blue", "grey"], n)
    size = rng.choice(["small", "large"], n)
    shape = rng.choice(["disc", "cube", "cone"], n).astype(object)
    shape[3] = None
    count = rng.integers(0, 5, n).astype(float)
    count[7] = np.nan
    y = ((colour == "red") | (np.nan_to_num(x) > 0.5)).astype(int) + (size == "large")
    return {"x": x, "colour": colour, "size": size, "shape": shape, "count": count}, y


def _pandas_frame(columns):
    frame = pd.DataFrame(
        {
            "x": columns["x"],
            "colour": pd.Categorical(columns["colour"]),
            "size": pd.Categorical(columns["size"], categories=["small", "large"]),
            "shape": pd.Series(columns["shape"], dtype=object),
            "count": columns["count"],
        }
    )
    return frame


def _polars_frame(columns):
    return pl.DataFrame(
        {
            "x": pl.Series(columns["x"]).fill_nan(None),
            "colour": pl.Series(columns["colour"], dtype=pl.Categorical),
            "size": pl.Series(columns["size"], dtype=pl.Enum(["small", "large"])),
            "shape": pl.Series(list(columns["shape"]), dtype=pl.String),
            "count": pl.Series(
                [None if np.isnan(v) else int(v) for v in columns["count"]], dtype=pl.Int64
            ),
        }
    )


class _ArrowStreamOnly:
    """A table known only by the Arrow PyCapsule protocol (as DuckDB's relations are)."""

    def __init__(self, table):
        self._table = table
        self.columns = table.column_names

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


class _InterchangeOnly:
    """A table known only by the DataFrame interchange protocol."""

    def __init__(self, frame):
        self._frame = frame
        self.columns = list(frame.columns)

    def __dataframe__(self, nan_as_null=False, allow_copy=True):
        return self._frame.__dataframe__(nan_as_null=nan_as_null, allow_copy=allow_copy)


def _kinds_of_table(columns):
    polars_frame = _polars_frame(columns)
    arrow_table = polars_frame.to_arrow()
    return {
        "polars": polars_frame,
        "pyarrow.Table": arrow_table,
        "pyarrow.RecordBatch": arrow_table.combine_chunks().to_batches()[0],
        "arrow stream": _ArrowStreamOnly(arrow_table),
    }


@pytest.mark.parametrize("kind", ["polars", "pyarrow.Table", "pyarrow.RecordBatch", "arrow stream"])
def test_each_kind_of_table_grows_the_pandas_tree(kind):
    columns, y = _columns()
    reference = DecisionTreeClassifier(max_depth=5, random_state=0).fit(_pandas_frame(columns), y)
    table = _kinds_of_table(columns)[kind]
    model = DecisionTreeClassifier(max_depth=5, random_state=0).fit(table, y)
    assert list(model.feature_names_in_) == ["x", "colour", "size", "shape", "count"]
    # Categorical from their types: the category, enum and text columns; not the numbers.
    assert list(model._category_maps.features) == [1, 2, 3]
    assert_tree_equal(model.tree_, reference.tree_)
    np.testing.assert_array_equal(
        model.predict_proba(table), reference.predict_proba(_pandas_frame(columns))
    )
    assert model.tree_.feature[0] >= 0  # a real tree, not a leaf


@pytest.mark.filterwarnings("ignore:.*Interchange Protocol is deprecated")
def test_interchange_protocol_table():
    columns, y = _columns(seed=1)
    frame = pd.DataFrame({"x": columns["x"], "count": columns["count"]})
    reference = DecisionTreeRegressor(max_depth=4).fit(frame, y)
    model = DecisionTreeRegressor(max_depth=4).fit(_InterchangeOnly(frame), y)
    assert list(model.feature_names_in_) == ["x", "count"]
    assert_tree_equal(model.tree_, reference.tree_)


def test_polars_and_arrow_targets_and_weights():
    columns, y = _columns(seed=2)
    frame = _polars_frame(columns)
    labels = np.array(["no", "yes", "maybe"])[y]
    weight = np.linspace(0.5, 2.0, y.size)
    reference = DecisionTreeClassifier(max_depth=4).fit(
        _pandas_frame(columns), labels, sample_weight=weight
    )
    for target, weights in [
        (pl.Series("y", labels), pl.Series("w", weight)),
        (pa.chunked_array([labels[:100], labels[100:]]), pa.array(weight)),
    ]:
        model = DecisionTreeClassifier(max_depth=4).fit(frame, target, sample_weight=weights)
        assert list(model.classes_) == ["maybe", "no", "yes"]
        assert_tree_equal(model.tree_, reference.tree_)


def test_predicting_a_polars_frame_with_a_model_fitted_on_pandas_checks_names():
    columns, y = _columns(seed=3)
    model = DecisionTreeClassifier(max_depth=3).fit(_pandas_frame(columns), y)
    frame = _polars_frame(columns)
    np.testing.assert_array_equal(model.predict(frame), model.predict(_pandas_frame(columns)))
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict(frame.select(["colour", "x", "size", "shape", "count"]))


def test_unseen_enum_value_at_prediction_takes_the_missing_rule():
    columns, y = _columns(seed=4)
    model = DecisionTreeClassifier(max_depth=4).fit(_polars_frame(columns), y)
    later = _polars_frame(columns).with_columns(
        pl.Series("colour", ["purple"] * y.size, dtype=pl.Categorical)
    )
    missing = _polars_frame(columns).with_columns(
        pl.lit(None, dtype=pl.Categorical).alias("colour")
    )
    np.testing.assert_array_equal(model.predict_proba(later), model.predict_proba(missing))


def test_arrays_lists_and_pandas_pass_unchanged():
    frame = pd.DataFrame({"a": [1.0, 2.0]})
    array = np.zeros((2, 2))
    assert as_pandas_frame(frame) is frame
    assert as_pandas_frame(array) is array
    assert not is_other_frame(pa.chunked_array([[1.0, 2.0]]))  # a column, not a table
    assert not is_other_frame(pl.Series([1.0]))


def test_without_pyarrow_an_arrow_only_table_asks_for_it(monkeypatch):
    columns, y = _columns(seed=5)
    table = _ArrowStreamOnly(pa.table({"x": columns["x"]}))
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"through pyarrow: pip install pandas pyarrow"):
        DecisionTreeClassifier().fit(table, y)


def test_without_pandas_a_polars_frame_asks_for_it(monkeypatch):
    columns, y = _columns(seed=6)
    frame = pl.DataFrame({"x": columns["x"]})
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"polars\.DataFrame.*pip install pandas pyarrow"):
        DecisionTreeClassifier().fit(frame, y)
