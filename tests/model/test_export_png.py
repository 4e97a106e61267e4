"""export_png and gputree export --format png: a drawing sized to the tree, through
Graphviz's dot where it is installed and matplotlib otherwise, and a refusal naming a
depth that fits, before any rendering, for trees too large to read."""

import re
import shutil
import struct
import sys

import numpy as np
import pytest
from _cli import run_cli

import gpu_tree
from gpu_tree import DecisionTreeClassifier, export_png
from gpu_tree.model.export.png import MAX_PNG_LEAVES, TreeTooLargeToDraw

datasets = pytest.importorskip("sklearn.datasets")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(path):
    """(width, height) in pixels, from the PNG's header (its IHDR chunk comes first)."""
    data = path.read_bytes()[:24]
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR", data
    return struct.unpack(">II", data[16:24])


def _iris_tree(max_depth):
    X, y = datasets.load_iris(return_X_y=True)
    return DecisionTreeClassifier(max_depth=max_depth, device="cpu").fit(X, y)


def _big_tree():
    """A fully grown tree of hundreds of leaves (noise labels)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 4))
    return DecisionTreeClassifier(device="cpu").fit(X, rng.integers(0, 2, 2000))


def _leaf_boxes(model, depth):
    """The boxes at the bottom of a drawing cut at ``depth``, counted from the DOT source:
    the boxes that no edge leaves."""
    source = gpu_tree.export_graphviz(model, max_depth=depth)
    boxes = set(re.findall(r"^(\d+) \[label=", source, re.M))
    parents = set(re.findall(r"^(\d+) -> ", source, re.M))
    return len(boxes - parents)


@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    """A PATH without Graphviz's dot."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


# -- the refusal ----------------------------------------------------------------------------
def test_a_tree_too_large_to_read_is_refused_naming_the_deepest_depth_that_fits(tmp_path):
    model = _big_tree()
    assert model.get_n_leaves() > 4 * MAX_PNG_LEAVES
    out = tmp_path / "tree.png"
    with pytest.raises(TreeTooLargeToDraw, match=r"more than the 64 a readable PNG holds") as e:
        export_png(model, out)
    assert not out.exists() and list(tmp_path.iterdir()) == []
    depth = e.value.fitting_depth
    assert f"draw its top with max_depth={depth}, or show the whole tree" in str(e.value)
    # The depth named is the deepest that fits: one more is refused.
    assert _leaf_boxes(model, depth) <= MAX_PNG_LEAVES < _leaf_boxes(model, depth + 1)
    with pytest.raises(TreeTooLargeToDraw):
        export_png(model, out, max_depth=depth + 1)
    if shutil.which("dot") or _has_matplotlib():
        export_png(model, out, max_depth=depth)
        assert out.read_bytes().startswith(PNG_MAGIC)


def test_gputree_export_png_refuses_a_big_tree_suggesting_max_depth(tmp_path):
    model = _big_tree()
    saved = tmp_path / "model.json"
    model.save(saved)
    out = tmp_path / "tree.png"
    result = run_cli("export", saved, "--format", "png", "-o", out)
    assert result.exit_code == 2, result.output
    error = result.stderr.strip()
    assert error.startswith("gputree: error: the tree would be drawn with")
    assert len(error.splitlines()) == 1
    depth = int(re.search(r"draw its top with --max-depth (\d+), ", error).group(1))
    assert "show the whole tree with --format text or dot" in error
    assert not out.exists()
    if shutil.which("dot") or _has_matplotlib():
        result = run_cli("export", saved, "--format", "png", "-o", out, "--max-depth", depth)
        assert result.exit_code == 0, result.output
        assert out.read_bytes().startswith(PNG_MAGIC)


def test_labels_too_long_for_any_depth_are_refused_before_drawing(tmp_path):
    # A name that cannot be wrapped (no spaces) makes every box too wide to open.
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=1, device="cpu").fit(X, y)
    names = [letter * 4000 for letter in "abcd"]
    with pytest.raises(TreeTooLargeToDraw, match=r"pixels, more than the 16,384 a side") as e:
        export_png(model, tmp_path / "t.png", feature_names=names)
    assert e.value.fitting_depth is None
    assert str(e.value).endswith("show it with export_text or export_graphviz instead")


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# -- matplotlib: always tested (it is in the test extra) ---------------------------------------
def test_the_matplotlib_drawing_grows_with_the_tree(tmp_path):
    pytest.importorskip("matplotlib")
    sizes = []
    for depth in (1, 2, 4):
        out = tmp_path / f"iris{depth}.png"
        assert export_png(_iris_tree(depth), out, renderer="matplotlib") == "matplotlib"
        sizes.append(_png_size(out))
        # Readable: at 10-point text a leaf box line of 18 characters ("value = [0, 47,
        # 1]") needs about 75 pixels; every leaf slot has more.
        assert sizes[-1][0] / _leaf_boxes(_iris_tree(depth), None) > 75
    (w1, h1), (w2, h2), (w4, h4) = sizes
    assert w1 < w2 < w4 and h1 < h2 < h4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iris1.png", "iris2.png", "iris4.png"]


def _long_category_tree():
    """One subset split on a set of some 15 category names (a line of 300 characters)."""
    pd = pytest.importorskip("pandas")
    names = np.array([f"category number {k:02d}" for k in range(30)], dtype=object)
    codes = np.random.default_rng(1).integers(0, 30, 900)
    frame = pd.DataFrame({"colour": names[codes]})
    model = DecisionTreeClassifier(max_depth=1, categorical_features=["colour"], device="cpu")
    return model.fit(frame, codes % 2)


def test_long_category_sets_are_wrapped_not_widening_the_picture(tmp_path):
    pytest.importorskip("matplotlib")
    model = _long_category_tree()
    condition = gpu_tree.export_text(model).splitlines()[0]
    assert len(condition) > 200  # one line of some 15 category names
    out = tmp_path / "wide.png"
    export_png(model, out, renderer="matplotlib")
    width, height = _png_size(out)
    # One line of it alone would be over 1,200 pixels wide at 10 points.
    assert width < 1000 and height > 300


def test_without_matplotlib_and_dot_the_error_names_both(tmp_path, monkeypatch, no_dot):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"Graphviz's dot program or matplotlib: install"):
        export_png(_iris_tree(1), tmp_path / "t.png")
    with pytest.raises(FileNotFoundError, match=r"renderer='dot' needs Graphviz's dot program"):
        export_png(_iris_tree(1), tmp_path / "t.png", renderer="dot")
    with pytest.raises(ValueError, match="renderer must be"):
        export_png(_iris_tree(1), tmp_path / "t.png", renderer="svg")
    assert list(tmp_path.iterdir()) == [tmp_path / "empty-path"]


# -- Graphviz's dot ---------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_the_dot_drawing_grows_with_the_tree(tmp_path):
    sizes = []
    for depth in (1, 2, 4):
        out = tmp_path / f"iris{depth}.png"
        assert export_png(_iris_tree(depth), out) == "dot"  # auto: dot where installed
        sizes.append(_png_size(out))
    (w1, h1), (w2, h2), (w4, h4) = sizes
    assert w1 < w2 < w4 and h1 < h2 < h4
    result = run_cli(
        "export", _saved(_iris_tree(2), tmp_path), "-f", "png", "-o", tmp_path / "c.png"
    )
    assert result.exit_code == 0 and "(by Graphviz's dot)" in result.stdout


def _saved(model, folder):
    path = folder / "model.json"
    model.save(path)
    return path


_FAKE_DOT = """#!{python}
# Stands in for Graphviz's dot: records its arguments and input, then writes a PNG
# header to -o (or fails, as asked by its environment).
import json, os, sys
source = sys.stdin.read()
with open({record!r}, "w") as out:
    json.dump({{"argv": sys.argv[1:], "source": source}}, out)
if os.environ.get("FAKE_DOT_FAILS"):
    sys.stderr.write("Error: <stdin>: syntax error in line 3\\n")
    sys.exit(1)
with open(sys.argv[sys.argv.index("-o") + 1], "wb") as png:
    png.write(b"\\x89PNG\\r\\n\\x1a\\n" + b"fake")
"""


@pytest.fixture
def fake_dot(tmp_path, monkeypatch):
    """A ``dot`` on the PATH that records how it was called (the dot path's plumbing,
    tested where Graphviz is absent)."""
    import json

    folder = tmp_path / "fake-bin"
    folder.mkdir()
    record = tmp_path / "dot-call.json"
    script = folder / "dot"
    script.write_text(_FAKE_DOT.format(python=sys.executable, record=str(record)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return lambda: json.loads(record.read_text())


def test_the_dot_renderer_gets_the_dot_source_and_writes_atomically(tmp_path, fake_dot):
    model = _iris_tree(2)
    out = tmp_path / "tree.png"
    assert export_png(model, out, class_names=["a", "b", "c"]) == "dot"
    assert out.read_bytes() == PNG_MAGIC + b"fake"
    call = fake_dot()
    assert call["argv"][:4] == ["-Tpng", "-Gdpi=100", "-Nfontsize=10", "-Efontsize=8.5"]
    assert call["argv"][4] == "-o" and call["argv"][5] != str(out)  # a temporary, renamed
    assert call["source"] == gpu_tree.export_graphviz(
        model, class_names=["a", "b", "c"], filled=True
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dot-call.json", "fake-bin", "tree.png"]


def test_a_failing_dot_is_an_error_with_its_message_and_leaves_no_file(
    tmp_path, fake_dot, monkeypatch
):
    monkeypatch.setenv("FAKE_DOT_FAILS", "1")
    out = tmp_path / "tree.png"
    out.write_bytes(b"previous")
    message = "Graphviz's dot failed (exit status 1): Error: <stdin>: syntax error in line 3"
    with pytest.raises(OSError, match=re.escape(message)):
        export_png(_iris_tree(1), out)
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dot-call.json", "fake-bin", "tree.png"]


def test_long_lines_reach_dot_wrapped_at_spaces(tmp_path, fake_dot):
    model = _long_category_tree()
    export_png(model, tmp_path / "t.png", filled=False)
    drawn = re.findall(r'^0 \[label="(.*)"\] ;$', fake_dot()["source"], re.M)[0].split("\\n")
    whole = re.findall(r'^0 \[label="(.*)"\] ;$', gpu_tree.export_graphviz(model), re.M)[0]
    assert len(whole.split("\\n")[0]) > 200 and len(drawn) > 6
    assert max(map(len, drawn)) <= 40
    assert " ".join(drawn) == whole.replace("\\n", " ")  # the same words, in order
