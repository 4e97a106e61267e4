"""bench/bench_forest.py --extra-trees: gpu_tree's ExtraTreesClassifier against
scikit-learn's, with the random forest case's settings and every row per tree."""

from pathlib import Path

import pytest
from _shared_data import bench_module

BENCH = Path(__file__).resolve().parents[2] / "bench"
pytestmark = pytest.mark.skipif(not BENCH.is_dir(), reason="not a source checkout")
sklearn_ensemble = pytest.importorskip("sklearn.ensemble")


@pytest.fixture(scope="module")
def bench_forest():
    return bench_module("bench_forest")


def test_extra_trees_sets_the_two_forests_alike(bench_forest):
    import gpu_tree

    args = bench_forest.parse_args(
        ["--extra-trees", "--rows", "600", "--trees", "2", "--depth", "full", "--repeats", "1"]
    )
    assert args.tools == ["gpu_tree", "sklearn"]
    ours = bench_forest.make_tool("gpu_tree", args, 28, 600)[0]()
    theirs = bench_forest.make_tool("sklearn", args, 28, 600)[0]()
    assert type(ours) is gpu_tree.ExtraTreesClassifier
    assert type(theirs) is sklearn_ensemble.ExtraTreesClassifier
    for forest in (ours, theirs):
        assert (forest.n_estimators, forest.max_depth, forest.bootstrap) == (2, None, False)
        assert forest.max_features == "sqrt"
    report = bench_forest.synthetic(args)
    labels = [r["label"] for r in report["results"]]
    assert labels == ["gpu_tree ExtraTreesClassifier", "scikit-learn ExtraTreesClassifier"]
    assert all(r["status"] == "ok" and r["fit_ratio"] > 0 for r in report["results"])


@pytest.mark.parametrize("extra", [["--tools", "gpu_tree,lightgbm"], ["--datasets"]])
def test_extra_trees_refuses_what_it_cannot_compare(bench_forest, extra):
    with pytest.raises(SystemExit):
        bench_forest.parse_args(["--extra-trees", *extra])
