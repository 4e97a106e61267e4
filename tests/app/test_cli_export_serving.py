"""``gputree export --format onnx|treelite``: the whole model (a forest's trees averaged,
or tree N) written atomically, read back by onnxruntime and Treelite, and the input never
overwritten."""

import numpy as np
import pytest
from _cli import run_cli
from _export_cases import mixed_rows

import gpu_tree

ort = pytest.importorskip("onnxruntime")
treelite = pytest.importorskip("treelite")


@pytest.fixture(scope="module")
def forest_file(tmp_path_factory):
    X, y = mixed_rows(300, 0)
    model = gpu_tree.RandomForestClassifier(
        n_estimators=3, categorical_features=[3], random_state=0
    )
    path = tmp_path_factory.mktemp("export") / "forest.json"
    model.fit(X, y).save(path)
    return path, X


def test_onnx_and_treelite_files_predict_as_the_model(forest_file, tmp_path):
    path, X = forest_file
    model = gpu_tree.load(path)
    inputs = gpu_tree.export_inputs(model, X)
    expected = model.predict_proba(X)
    bound = 3 * 2.0**-52

    result = run_cli("export", path, "--format", "onnx", "-o", tmp_path / "m.onnx")
    assert result.exit_code == 0, result.output
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    assert np.abs(session.run(None, {"X": inputs})[0] - expected).max() <= bound

    result = run_cli("export", path, "--format", "treelite", "-o", tmp_path / "m.tl")
    assert result.exit_code == 0, result.output
    served = treelite.Model.deserialize(str(tmp_path / "m.tl"))
    assert np.abs(treelite.gtil.predict(served, inputs)[:, 0] - expected).max() <= bound

    result = run_cli("export", path, "-f", "onnx", "--tree", "1", "-o", tmp_path / "t.onnx")
    assert result.exit_code == 0, result.output
    session = ort.InferenceSession(str(tmp_path / "t.onnx"), providers=["CPUExecutionProvider"])
    one = model.estimators_[1].predict_proba(X)
    np.testing.assert_array_equal(session.run(None, {"X": inputs})[0], one)


def test_serving_formats_need_an_output_and_never_overwrite_the_input(forest_file):
    path, _ = forest_file
    before = path.read_bytes()
    result = run_cli("export", path, "--format", "onnx")
    assert result.exit_code == 2 and "needs -o PATH.onnx" in result.stderr
    result = run_cli("export", path, "--format", "treelite", "-o", path)
    assert result.exit_code != 0 and "which writing would destroy" in result.stderr
    assert path.read_bytes() == before


def test_legacy_operator_and_oblique_models_from_the_command_line(forest_file, tmp_path):
    path, X = forest_file
    model = gpu_tree.load(path)
    inputs = gpu_tree.export_inputs(model, X)
    out = tmp_path / "legacy.onnx"
    result = run_cli("export", path, "-f", "onnx", "--onnx-operator", "legacy", "-o", out)
    assert result.exit_code == 0, result.output
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["label", "probabilities"]
    label, proba = session.run(None, {"X": inputs})
    np.testing.assert_array_equal(label, model.predict(X))
    assert np.abs(proba - model.predict_proba(X)).max() <= 2.0**-24 + 3 * 2.0**-52

    result = run_cli("export", path, "-f", "treelite", "--onnx-operator", "legacy", "-o", out)
    assert result.exit_code == 2 and "--onnx-operator goes with --format onnx" in result.stderr

    oblique_path = tmp_path / "oblique.json"
    X = np.nan_to_num(X)
    oblique = gpu_tree.ObliqueDecisionTreeRegressor(max_depth=4).fit(X, X[:, 0] - X[:, 1])
    assert oblique.tree_.n_oblique > 0
    oblique.save(oblique_path)
    loaded = gpu_tree.load(oblique_path)
    result = run_cli("export", oblique_path, "-f", "onnx", "-o", tmp_path / "oblique.onnx")
    assert result.exit_code == 0, result.output
    session = ort.InferenceSession(
        str(tmp_path / "oblique.onnx"), providers=["CPUExecutionProvider"]
    )
    got = session.run(None, {"X": gpu_tree.export_inputs(loaded, X)})[0]
    np.testing.assert_array_equal(got, oblique.predict(X))
    result = run_cli("export", oblique_path, "-f", "treelite", "-o", tmp_path / "oblique.tl")
    assert result.exit_code == 2
    assert "oblique splits" in result.stderr and "--format onnx" in result.stderr
