"""The trees grown on the shared datasets equal the snapshots saved before the package was
reorganised (issue 13): the same nodes, thresholds, values and impurities bit for bit, the
same parameters, categories and bin edges. Regenerate the snapshots only when a change is
meant to change the trees, and say so in its commit: ``python tests/_model_snapshots.py``."""

import pytest
from _model_snapshots import CLI_MODELS, EXACT_MODELS, load_snapshot, train_cli, train_exact


def _assert_same_document(actual, expected, where="model"):
    # Field by field, so that a failure names the first field that differs.
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        assert sorted(actual) == sorted(expected), f"{where}: keys differ"
        for key in expected:
            _assert_same_document(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list) and expected and isinstance(expected[0], (dict, list)):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: lengths differ"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _assert_same_document(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, f"{where} differs"


@pytest.mark.parametrize("name", sorted(CLI_MODELS))
def test_command_line_model_equals_snapshot(name, tmp_path):
    _assert_same_document(train_cli(name, tmp_path), load_snapshot(name))


@pytest.mark.parametrize("name", sorted(EXACT_MODELS))
def test_exact_model_equals_snapshot(name):
    _assert_same_document(train_exact(name), load_snapshot(name))


def test_a_changed_tree_fails_the_comparison():
    # The comparison can fail: one threshold moved by one ulp is caught and named.
    import math

    document = load_snapshot("tennis_id3")
    changed = load_snapshot("tennis_id3")
    thresholds = changed["tree"]["threshold"]
    thresholds[0] = math.nextafter(thresholds[0], math.inf)
    with pytest.raises(AssertionError, match=r"model\.tree\.threshold differs"):
        _assert_same_document(changed, document)
