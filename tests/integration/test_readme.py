"""The README's quick start stays two commands, and CI runs exactly those; the Python and
command-line examples of the README and of the user guide's pages (docs/guide/) run and
print what the text around them says."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _quick_start_module():
    path = ROOT / ".ci" / "quick_start_commands.py"
    if not path.is_file():
        pytest.skip("not a source checkout")
    spec = importlib.util.spec_from_file_location("quick_start_commands", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_start_has_two_commands_main_job_then_tests():
    commands = _quick_start_module().quick_start_commands((ROOT / "README.md").read_text())
    assert len(commands) == 2, commands
    install_and_run, install_and_test = commands
    assert install_and_run.startswith("pip install .") and "gputree bench" in install_and_run
    assert install_and_test.startswith('pip install ".[test]"') and install_and_test.endswith(
        "pytest"
    )


def test_ci_runs_the_readme_commands_and_ruff():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "quick_start_commands.py README.md" in ci
    assert 'bash -euo pipefail -c "${quick_start[1]}"' in ci
    assert "ruff check ." in ci


def test_extractor_reads_only_the_quick_start_section():
    extract = _quick_start_module().quick_start_commands
    text = "# T\n## Quick start\n```bash\n# comment\na && b\n```\ntext\n```\nc\n```\n## Other\n```\nd\n```\n"
    assert extract(text) == ["a && b", "c"]
    assert extract("# no section\n") == []


# The README, then the user guide's pages in the site's order: every Python block of these
# runs in a test below.
PAGES = [
    "README.md",
    *(
        f"docs/guide/{name}.md"
        for name in (
            "trees",
            "categorical",
            "outputs",
            "pruning",
            "ensembles",
            "gpu",
            "export_cli",
            "sklearn",
        )
    ),
]


def _page_blocks(page):
    import re

    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)


def _python_blocks():
    return [block for page in PAGES for block in _page_blocks(page)]


def _block(blocks, marker):
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"the Python example with {marker!r} changed: update this test"
    return found[0]


def _printed_numbers(capsys):
    """The numbers the block printed on its one line."""
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 1, lines
    return [float(v) for v in lines[0].split()]


def test_python_examples_run(tmp_path, monkeypatch, capsys):
    """The Python blocks of the README and the user guide that this test knows run in
    order, as one session (the GPU one needs CuPy and a GPU, the Dask one runs below);
    files they write land in a temporary folder. Each does what the README says
    it does: a tree that beats the majority class, a loaded model that predicts as the
    saved one, pruned trees smaller than the full one and no worse on validation, and
    categorical trees (ID3 with a multiway root) that fit the days."""
    import numpy as np
    from sklearn.datasets import load_breast_cancer

    import gpu_tree
    from gpu_tree import DecisionTreeClassifier

    blocks = _python_blocks()
    assert len(blocks) >= 3
    fit = _block(blocks, 'DecisionTreeClassifier(criterion="entropy"')
    saved = _block(blocks, "gpu_tree.load(")
    pruning = _block(blocks, "reduced_error_prune(")
    categorical = _block(blocks, 'categorical_split="multiway"')
    forests = _block(blocks, "RandomForestClassifier(")
    dag = _block(blocks, "DAGClassifier(")
    costs = _block(blocks, "feature_costs=")
    oblique = _block(blocks, 'ObliqueDecisionTreeClassifier(direction="lda")')
    in_memory = [b for b in blocks if "import cupy" not in b and "gpu_tree.dask" not in b]
    checked = [fit, saved, pruning, categorical, forests, dag, costs, oblique]
    assert all(b in in_memory for b in checked)  # the others: test_other_guide_examples_run
    monkeypatch.chdir(tmp_path)
    namespace = {}

    def run(block):
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own README

    # Fitting: the breast-cancer tree, as printed.
    run(fit)
    tree, X, y = namespace["tree"], namespace["X"], namespace["y"]
    X_expected, y_expected = load_breast_cancer(return_X_y=True)
    assert np.array_equal(X, X_expected) and np.array_equal(y, y_expected)
    score, depth, leaves = _printed_numbers(capsys)
    assert (score, depth, leaves) == (tree.score(X, y), tree.get_depth(), tree.get_n_leaves())
    majority = max(y.mean(), 1 - y.mean())  # 0.63: what predicting one class scores
    assert 0.95 < score <= 1.0 and score > majority + 0.3
    assert score == np.mean(tree.predict(X) == y)
    assert 1 <= depth <= 5 and 2 <= leaves <= 2**5
    assert tree.criterion == "entropy" and 0 <= tree.tree_.feature[0] < X.shape[1]
    assert np.isfinite(tree.tree_.threshold[0])

    # Saving and loading: the same predictions, bit for bit; text and DOT of the tree.
    run(saved)  # on its page, it fits its own tree first
    printed = capsys.readouterr().out
    same, tree = namespace["same"], namespace["tree"]
    assert (tmp_path / "tree.json").stat().st_size > 0
    assert np.array_equal(same.predict(X), tree.predict(X))
    assert np.array_equal(same.predict_proba(X), tree.predict_proba(X))
    assert printed == gpu_tree.export_text(tree) + "\n"
    assert printed.count("class: ") == tree.get_n_leaves()
    dot = (tmp_path / "tree.dot").read_text()
    assert dot.startswith("digraph Tree {") and dot.count(" -> ") == tree.tree_.node_count - 1
    assert dot.count("fillcolor=") == tree.tree_.node_count  # filled=True
    try:
        from matplotlib import pyplot

        pyplot.close("all")
    except ImportError:
        pass

    # Pruning: both pruned trees are smaller than the unpruned one; reduced-error pruning
    # keeps (or improves) validation accuracy.
    run(pruning)
    small_leaves, checked_leaves, checked_score = _printed_numbers(capsys)
    small, checked = namespace["small"], namespace["checked"]
    X_train, y_train = namespace["X_train"], namespace["y_train"]
    X_val, y_val = namespace["X_val"], namespace["y_val"]
    assert len(X_train) + len(X_val) == len(X) and len(y_val) == len(X_val)
    full = DecisionTreeClassifier().fit(X_train, y_train)
    assert small_leaves == small.get_n_leaves() and checked_leaves == checked.get_n_leaves()
    assert 1 < small_leaves < full.get_n_leaves()
    assert checked_leaves < full.get_n_leaves()
    assert checked_score == checked.score(X_val, y_val)
    assert checked_score >= full.score(X_val, y_val)
    assert checked_score > max(y_val.mean(), 1 - y_val.mean())
    assert np.all(np.diff(namespace["path"].ccp_alphas) >= 0)

    # Categorical columns with a missing value: both trees fit the five days; ID3 splits
    # on outlook at the root, one branch per category.
    run(categorical)
    days, tree, id3 = namespace["days"], namespace["tree"], namespace["id3"]
    labels = ["no", "no", "yes", "yes", "yes"]
    assert tree.predict(days).tolist() == labels and id3.predict(days).tolist() == labels
    assert id3.feature_names_in_[id3.tree_.feature[0]] == "outlook"
    assert len(id3.tree_.children_of(0)) == 3  # sunny, overcast, rain
    assert id3.get_n_leaves() == 3

    # Forests: 200 trees each, grown in one batch; both score on held-out rows about as
    # scikit-learn's forests of the same size do, and better than one tree.
    run(forests)
    forest_score, oob, extra_score = _printed_numbers(capsys)
    forest, extra = namespace["forest"], namespace["extra"]
    X_train, X_test = namespace["X_train"], namespace["X_test"]
    y_train, y_test = namespace["y_train"], namespace["y_test"]
    assert len(forest.estimators_) == len(extra.estimators_) == 200
    assert forest.n_batches_ == 1 and extra.n_batches_ == 1
    assert (forest_score, oob) == (forest.score(X_test, y_test), forest.oob_score_)
    assert extra_score == extra.score(X_test, y_test)
    from sklearn.ensemble import ExtraTreesClassifier as SklearnExtraTrees
    from sklearn.ensemble import RandomForestClassifier as SklearnForest

    theirs = SklearnForest(200, random_state=0).fit(X_train, y_train).score(X_test, y_test)
    theirs_extra = SklearnExtraTrees(200, random_state=0).fit(X_train, y_train)
    assert forest_score >= theirs - 0.03 and 0.9 < oob <= 1.0
    assert extra_score >= theirs_extra.score(X_test, y_test) - 0.03
    lone = DecisionTreeClassifier(random_state=0).fit(X_train, y_train).score(X_test, y_test)
    assert forest_score > lone and extra_score > lone

    # DAG and ADAG of trees on digits: the seed's counts (K = 10: 9 trees and 3 or 4
    # evaluations; 45 trees and 9), the scores printed, well above chance (10 %) and near
    # one multiclass tree; the DAG's first grouping as the text after the block says.
    run(dag)
    dag_score, adag_score, adag_trees = _printed_numbers(capsys)
    dag_model, adag_model = namespace["dag"], namespace["adag"]
    X_train, X_test = namespace["X_train"], namespace["X_test"]
    y_train, y_test = namespace["y_train"], namespace["y_test"]
    assert len(X_test) == 450 and len(set(y_train)) == 10
    assert dag_score == dag_model.score(X_test, y_test)
    assert adag_score == adag_model.score(X_test, y_test)
    assert adag_trees == len(adag_model.estimators_) == 45 and len(dag_model.estimators_) == 9
    assert set(dag_model.evaluations_by_class_.tolist()) == {3, 4}
    assert dag_model.n_evaluations_per_prediction_ == 4
    assert adag_model.n_evaluations_per_prediction_ == 9
    assert dag_model.structure_[0] == ((0, 2, 5, 8, 9), (1, 3, 4, 6, 7))
    direct = DecisionTreeClassifier().fit(X_train, y_train).score(X_test, y_test)
    assert 0.75 < dag_score and dag_score >= direct - 0.05
    assert 0.8 < adag_score and adag_score >= direct - 0.02

    # Features with costs: the printed scores and mean costs per row are the trees'; the
    # cost-sensitive tree pays far less per row (as the text after the block says), for
    # a little accuracy.
    run(costs)
    plain_score, plain_cost, cheap_score, cheap_cost = _printed_numbers(capsys)
    plain, cheap, feature_costs = namespace["plain"], namespace["cheap"], namespace["costs"]
    X_test, y_test = namespace["X_test"], namespace["y_test"]
    assert (plain_score, cheap_score) == (plain.score(X_test, y_test), cheap.score(X_test, y_test))
    assert plain_cost == plain.prediction_cost(X_test, feature_costs=feature_costs).mean()
    assert cheap_cost == cheap.prediction_cost(X_test).mean()
    assert cheap.get_params()["feature_costs"] is feature_costs and plain.feature_costs is None
    assert round(plain_cost) == 58 and round(cheap_cost, 1) == 2.8
    assert round(plain_score, 3) == 0.930 and round(cheap_score, 3) == 0.916

    # Oblique splits: on a boundary along x0 + x1 the oblique tree needs one hyperplane
    # (2 leaves, as the comment says) where the axis-parallel tree needs dozens of leaves,
    # and its text starts with the hyperplane the README quotes.
    run(oblique)
    oblique_leaves, axis_leaves, n_oblique = _printed_numbers(capsys)
    oblique_model, axis_model = namespace["oblique"], namespace["axis"]
    assert (oblique_leaves, axis_leaves, n_oblique) == (
        oblique_model.get_n_leaves(),
        axis_model.get_n_leaves(),
        oblique_model.tree_.n_oblique,
    )
    assert (oblique_leaves, axis_leaves, n_oblique) == (2, 47, 1)
    first_line = gpu_tree.export_text(oblique_model).splitlines()[0]
    assert first_line == "|--- 0.99\u00b7x0 + 1.00\u00b7x1 + 0.01\u00b7x3 \u2264 0.00"
    page = (ROOT / "docs" / "guide" / "ensembles.md").read_text()
    assert f"`gpu_tree.export_text(oblique)` starts with `{first_line}`." in page
    assert oblique_model.score(namespace["X"], namespace["y"]) == 1.0


@pytest.mark.timeout(300)
def test_distributed_example_runs(tmp_path, monkeypatch, capsys):
    """The Distributed block (the user guide's page on GPU and distributed training) runs as a script would (``__name__`` is
    "__main__"), on two real worker processes: its tree is the in-memory tree of the same
    rows, what it prints is that tree's leaves and accuracy, and the model file it saves
    loads as that tree."""
    pytest.importorskip("distributed")
    import numpy as np

    import gpu_tree
    from gpu_tree.testing import assert_tree_equal

    block = _block(_python_blocks(), "gpu_tree.dask")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    leaves, accuracy = _printed_numbers(capsys)
    model = namespace["model"]
    X, y = namespace["X"].compute(), namespace["y"].compute()  # the same seed, recomputed
    local = gpu_tree.DecisionTreeClassifier(max_depth=8).fit(X, y)
    assert_tree_equal(model.tree_, local.tree_)
    assert leaves == local.get_n_leaves() > 2
    assert accuracy == np.mean(local.predict(X) == y) > 0.9
    assert_tree_equal(gpu_tree.load(tmp_path / "distributed.json").tree_, local.tree_)


@pytest.mark.timeout(600)
def test_distributed_example_ends_cleanly_as_a_script(tmp_path):
    """The Distributed block run as a user runs it, ``python example.py``: its
    cluster closes without a worker killed ("Worker process still alive after 4.0
    seconds, killing", issue 45) and nothing else on standard error but distributed's
    own notices of where it serves."""
    pytest.importorskip("distributed")
    import subprocess
    import sys

    (tmp_path / "example.py").write_text(_block(_python_blocks(), "gpu_tree.dask"))
    done = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=540
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(done.stdout.split()) == 2, done.stdout  # leaves and accuracy
    # another cluster on this machine (a test beside this one) may hold the dashboard's port
    port_notice = ("is already in use", "already have a cluster running", "HTTP server on port")
    problems = [
        line
        for line in done.stderr.splitlines()
        if line.strip()
        and not any(words in line for words in port_notice)
        and line.strip() != "warnings.warn("
    ]
    assert not problems, "\n".join(problems)
    assert (tmp_path / "distributed.json").is_file()


def test_command_line_example_runs(tmp_path):
    """The command-line block of the user guide's page on the command line runs as written, in a temporary folder, with the
    installed ``gputree``; each command must succeed and leave its output."""
    import re
    import shutil
    import subprocess

    if shutil.which("gputree") is None:
        pytest.skip("the gputree command is not installed")
    import json

    section = re.search(
        r"^## Command line\n(.*?)(?=^## |\Z)",
        (ROOT / "docs" / "guide" / "export_cli.md").read_text(),
        re.M | re.S,
    )
    assert section is not None
    block = re.search(r"```bash\n(.*?)```", section.group(1), re.S).group(1)
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    for output in ("model.json", "predictions.csv", "metrics.json", "forest.json", "bench.json"):
        assert (tmp_path / output).stat().st_size > 0, output
    assert "|--- " in result.stdout  # the exported tree
    forest = json.loads((tmp_path / "forest.json").read_text())
    assert len(forest["trees"]) == 100  # the forest's file: a list of its trees
    # The outputs agree with the data the block wrote: one prediction per row, the
    # metrics are those of these predictions, and the tree beats the majority class.
    import csv

    with open(tmp_path / "days.csv", newline="") as handle:
        truth = [row["play"] for row in csv.DictReader(handle)]
    with open(tmp_path / "predictions.csv", newline="") as handle:
        predictions = list(csv.DictReader(handle))
    assert len(predictions) == len(truth) > 0
    labels = sorted(set(truth))
    for row in predictions:
        assert row["prediction"] in labels
        probabilities = [float(row[f"proba_{label}"]) for label in labels]
        assert abs(sum(probabilities) - 1) < 1e-12
        assert float(row[f"proba_{row['prediction']}"]) == max(probabilities)
    predicted = [row["prediction"] for row in predictions]
    correct = sum(p == t for p, t in zip(predicted, truth, strict=True))
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["accuracy"] == pytest.approx(correct / len(truth))
    assert metrics["accuracy"] > max(truth.count(label) for label in labels) / len(truth)
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["results"][0]["name"] == "gpu_tree" and bench["results"][0]["status"] == "ok"


def test_other_guide_examples_run(tmp_path, monkeypatch, capsys):
    """Every other Python block of the README and the user guide (not the GPU one, not the
    Dask one, not those test_python_examples_run checks) runs, each page's blocks in
    order as one session, and prints something."""
    markers = (
        'DecisionTreeClassifier(criterion="entropy"',
        "gpu_tree.load(",
        "reduced_error_prune(",
        'categorical_split="multiway"',
        "RandomForestClassifier(",
        "DAGClassifier(",
        "feature_costs=",
        "ObliqueDecisionTreeClassifier(",
        "import cupy",
        "gpu_tree.dask",
    )
    monkeypatch.chdir(tmp_path)
    ran = 0
    for page in PAGES:
        namespace = {}
        for block in _page_blocks(page):
            if any(marker in block for marker in markers):
                continue
            exec(compile(block, page, "exec"), namespace)  # noqa: S102 - our own pages
            assert capsys.readouterr().out.strip(), (page, block)
            ran += 1
    assert ran >= 1  # the trees page's regression example
