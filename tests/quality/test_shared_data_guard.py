"""Real-data tests skip in a user's fresh clone, but fail where the data is required."""

import _shared_data
import pytest


def test_missing_dataset_skips_in_a_users_clone_and_fails_where_required(monkeypatch, tmp_path):
    monkeypatch.setattr(_shared_data, "SHARED_DATASETS", tmp_path / "absent")
    monkeypatch.delenv("GPU_TREE_REQUIRE_SHARED_DATA", raising=False)
    with pytest.raises(pytest.skip.Exception, match="letter.arff not available"):
        _shared_data.dataset_path("letter.arff")
    monkeypatch.setenv("GPU_TREE_REQUIRE_SHARED_DATA", "1")
    with pytest.raises(pytest.fail.Exception, match="letter.arff not available.*REQUIRE"):
        _shared_data.dataset_path("letter.arff")
    (tmp_path / "absent").mkdir()
    (tmp_path / "absent" / "letter.arff").write_text("@relation x\n")
    assert _shared_data.dataset_path("letter.arff") == tmp_path / "absent" / "letter.arff"


def test_the_shared_datasets_are_here_when_required():
    """Under the project's CI every real-data test runs: the folder must be complete."""
    if not _shared_data.shared_data_required():
        pytest.skip("GPU_TREE_REQUIRE_SHARED_DATA not set (a user's clone)")
    manifest = _shared_data.SHARED_DATASETS / "MANIFEST.md"
    assert manifest.is_file(), f"{_shared_data.SHARED_DATASETS} has no MANIFEST.md"
    for name in ("letter.arff", "cal_housing.arff", "adult_train.csv", "penguins.csv"):
        assert (_shared_data.SHARED_DATASETS / name).is_file(), name
