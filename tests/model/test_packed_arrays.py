"""Packed arrays in model files (gpu_tree.model.packed_arrays): exact round trips, the
narrowest integer type, and a clear refusal of every damaged or oversized array before
any large allocation."""

from __future__ import annotations

import base64
import json
import tracemalloc
import zlib

import numpy as np
import pytest

import gpu_tree
from gpu_tree import DecisionTreeClassifier, RandomForestRegressor, assert_tree_equal
from gpu_tree.model import packed_arrays
from gpu_tree.model.file_format.writing import model_document, unpacked_document


def _unpack(value, dtypes=packed_arrays.INTEGER_DTYPES + packed_arrays.FLOAT_DTYPES):
    def fail(message):
        raise ValueError(message)

    return packed_arrays.unpack(value, dtypes, fail)


@pytest.mark.parametrize(
    "values, dtype",
    [
        ([0, 1, -1, 127, -128], "|i1"),
        ([0, 128], "<i2"),
        ([-32769, 5], "<i4"),
        ([2**31], "<i8"),
        ([-(2**63), 2**63 - 1], "<i8"),
        ([], "<i8"),
    ],
)
def test_integers_take_the_narrowest_type_and_come_back_equal(values, dtype):
    packed = packed_arrays.pack_integers(np.array(values, dtype=np.int64))
    assert packed["dtype"] == dtype and packed["count"] == len(values)
    assert _unpack(json.loads(json.dumps(packed))).tolist() == values


def test_floats_come_back_bit_for_bit():
    values = np.array([0.1, -0.0, np.nan, np.inf, -np.inf, 5e-324, 1.7976931348623157e308])
    back = _unpack(packed_arrays.pack_floats(values))
    np.testing.assert_array_equal(back.view(np.int64), values.view(np.int64))


def _packed_bytes(raw: bytes, dtype="<i4", count=None, compress=zlib.compress) -> dict:
    count = len(raw) // np.dtype(dtype).itemsize if count is None else count
    return {
        "dtype": dtype,
        "count": count,
        "zlib_base64": base64.b64encode(compress(raw)).decode(),
    }


_FOUR = np.arange(4, dtype="<i4").tobytes()


@pytest.mark.parametrize(
    "value, message",
    [
        ({"dtype": "<i4", "count": 4}, "has the fields"),
        ({**_packed_bytes(_FOUR), "extra": 1}, "has the fields"),
        (_packed_bytes(_FOUR, dtype=">i4"), "dtype '>i4'"),
        (_packed_bytes(_FOUR, dtype="<f4"), "dtype '<f4'"),
        (_packed_bytes(_FOUR, dtype="|u1"), "dtype '|u1'"),
        (_packed_bytes(_FOUR, count=-1), "count should be an integer >= 0"),
        (_packed_bytes(_FOUR, count=True), "count should be an integer >= 0"),
        (_packed_bytes(_FOUR, count=3), "does not hold exactly 3 values"),  # bytes left over
        (_packed_bytes(_FOUR, count=5), "does not hold exactly 5 values"),  # too few bytes
        ({**_packed_bytes(_FOUR), "zlib_base64": "not base64!"}, "not base64"),
        ({**_packed_bytes(_FOUR), "zlib_base64": 7}, "should be a string"),
        (_packed_bytes(_FOUR, compress=lambda raw: b"garbage!"), "damaged"),
        (_packed_bytes(_FOUR, compress=lambda raw: zlib.compress(raw)[:-3]), "truncated"),
        (_packed_bytes(_FOUR, compress=lambda raw: zlib.compress(raw) + b"\0"), "truncated"),
        # a trillion values claimed in a few bytes: refused before memory is taken
        (_packed_bytes(_FOUR, count=10**12), r"more than its \d+ bytes can hold"),
    ],
)
def test_a_damaged_packed_array_is_refused_by_name(value, message):
    with pytest.raises(ValueError, match=message):
        _unpack(value)


def test_a_compressed_bomb_is_cut_off_at_the_claimed_size():
    # 100 MB of zeros in about 100 KB, claiming 10 values: at most 10 values' bytes (and
    # one more, to see the excess) are ever inflated
    bomb = _packed_bytes(bytes(100 * 2**20), count=10)
    for count in (10, 0):  # zlib's max_length 0 means no limit: a count of 0 gets none
        tracemalloc.start()
        try:
            with pytest.raises(ValueError, match=f"does not hold exactly {count} values"):
                _unpack({**bomb, "count": count})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2**20 + len(bomb["zlib_base64"]) * 2, f"{peak:,} bytes at count {count}"


def _forest_and_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5))
    X[rng.random(600) < 0.05, 2] = np.nan
    y = X[:, 0] * 3 + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=600)
    forest = RandomForestRegressor(n_estimators=4, oob_score=True, random_state=0, device="cpu")
    return forest.fit(X, y), X


def test_a_packed_forest_file_is_smaller_and_loads_the_same_forest(tmp_path):
    forest, X = _forest_and_data()
    forest.save(tmp_path / "packed.json")
    plain = model_document(forest, packed=False)
    (tmp_path / "plain.json").write_text(json.dumps(plain, separators=(",", ":")))
    # noisy regression: value and impurity are incompressible floats, still 8 bytes each
    # (and a third more as base64) against a shortest repr of about 19 characters
    assert (tmp_path / "packed.json").stat().st_size * 2 < (tmp_path / "plain.json").stat().st_size
    for name in ("packed.json", "plain.json"):
        loaded = gpu_tree.load(tmp_path / name)
        for ours, theirs in zip(loaded.estimators_, forest.estimators_, strict=True):
            assert_tree_equal(ours.tree_, theirs.tree_, impurity_rtol=0, value_rtol=0)
        np.testing.assert_array_equal(loaded.oob_prediction_, forest.oob_prediction_)
        np.testing.assert_array_equal(loaded.predict(X), forest.predict(X))
    # unpacking gives exactly the plain document
    packed = json.loads((tmp_path / "packed.json").read_text())
    assert unpacked_document(packed) == json.loads(json.dumps(plain))


def test_version_1_files_load_and_hold_no_packed_array(tmp_path):
    forest, X = _forest_and_data()
    document = model_document(forest, packed=False)
    document["format_version"] = 1  # a file of the previous version: lists only
    (tmp_path / "v1.json").write_text(json.dumps(document))
    np.testing.assert_array_equal(gpu_tree.load(tmp_path / "v1.json").predict(X), forest.predict(X))
    document["trees"][0]["feature"] = packed_arrays.pack_integers(
        forest.estimators_[0].tree_.feature
    )
    (tmp_path / "v1.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"tree 0: field 'feature' of the tree should be a list"):
        gpu_tree.load(tmp_path / "v1.json")


def _classifier_document():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    model = DecisionTreeClassifier(max_depth=4, device="cpu").fit(X, X[:, 0] > 0.2)
    return model_document(model)


@pytest.mark.parametrize(
    "change, message",
    [
        # the array's own count must agree with the tree's node count
        (
            lambda tree: tree.update(
                feature=packed_arrays.pack_integers(np.zeros(tree["node_count"] + 1))
            ),
            r"array 'feature' has \d+ entries, expected \d+",
        ),
        # an integer array may not be packed as floats, nor floats as integers
        (
            lambda tree: tree.update(
                feature=packed_arrays.pack_floats(np.zeros(tree["node_count"]))
            ),
            r"array 'feature' of the tree: a packed array of dtype '<f8'",
        ),
        (
            lambda tree: tree.update(
                threshold=packed_arrays.pack_integers(np.zeros(tree["node_count"]))
            ),
            r"array 'threshold' of the tree: a packed array of dtype '\|i1'",
        ),
        # NaN in a packed value array meets the same check as in a list
        (
            lambda tree: tree.update(
                value=packed_arrays.pack_floats(np.full(tree["node_count"] * 2, np.nan))
            ),
            r"node 0 has value",
        ),
        # a child out of range, packed, is named as it is from a list
        (
            lambda tree: tree.update(
                children_left=packed_arrays.pack_integers(
                    np.r_[10_000, np.full(tree["node_count"] - 1, -1)]
                )
            ),
            r"node 0 has child 10000, out of range",
        ),
    ],
)
def test_packed_tree_arrays_meet_the_loader_s_checks(tmp_path, change, message):
    document = _classifier_document()
    change(document["tree"])
    (tmp_path / "bad.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message):
        gpu_tree.load(tmp_path / "bad.json")
