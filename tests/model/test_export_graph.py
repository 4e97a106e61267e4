"""export_graphviz (DOT) and plot_tree (matplotlib): every node kind, both backends."""

import io
import os
import re
import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from gpu_tree import DecisionTreeClassifier, DecisionTreeRegressor, export_graphviz, export_text
from gpu_tree import plot_tree as gpu_plot_tree

pd = pytest.importorskip("pandas")
datasets = pytest.importorskip("sklearn.datasets")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_NODE = re.compile(rf"^(\d+) \[label={_QUOTED}(?:, fillcolor=\"(#[0-9a-f]{{6}})\")?\] ;$")
_EDGE = re.compile(rf"^(\d+) -> (\d+) \[label={_QUOTED}\] ;$")


def _unescape(text):
    """A DOT quoted string's content as graphviz shows it (\\n: line break)."""
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def _parse_dot(source):
    """A strict reader of what export_graphviz writes: every line a header, a node or an
    edge; braces balanced; node ids unique; every edge between declared nodes, its
    parent declared before it; one parent per node. Returns (labels, colours, edges)."""
    lines = source.splitlines()
    assert lines[0] == "digraph Tree {" and lines[-1] == "}" and source.endswith("}\n")
    assert lines[1].startswith("node [shape=box") and lines[2].startswith("edge [")
    labels, colors, edges, parent = {}, {}, [], {}
    for line in lines[3:-1]:
        if match := _NODE.match(line):
            node = int(match.group(1))
            assert node not in labels, f"node {node} declared twice"
            labels[node] = _unescape(match.group(2))
            colors[node] = match.group(3)
        elif match := _EDGE.match(line):
            a, b = int(match.group(1)), int(match.group(2))
            assert a in labels and b in labels, f"edge {a} -> {b} before its nodes"
            assert b not in parent, f"node {b} has two parents"
            parent[b] = a
            edges.append((a, b, _unescape(match.group(3))))
        else:
            raise AssertionError(f"not a DOT statement export_graphviz writes: {line!r}")
    # Outside quoted strings, braces balance (no stray statement or unclosed string).
    bare = re.sub(_QUOTED, "", source)
    assert bare.count("{") == bare.count("}") == 1 and '"' not in bare
    assert len(edges) == len(labels) - 1  # a tree: every box but the root has one parent
    return labels, colors, edges


def _rgb(colour):
    """ "#rrggbb" -> (r, g, b)."""
    assert re.fullmatch(r"#[0-9a-f]{6}", colour), colour
    return tuple(int(colour[k : k + 2], 16) for k in (1, 3, 5))


def _field(label, name):
    """The text after "name = " in a box's label."""
    (line,) = [line for line in label.splitlines() if line.startswith(f"{name} = ")]
    return line[len(name) + 3 :]


def _check_with_pydot(source, n_nodes, n_edges):
    """Graphviz's grammar, where pydot is installed: the same nodes and edges."""
    try:
        import pydot
    except ImportError:
        return
    with warnings.catch_warnings():  # pydot's grammar uses pyparsing's older names
        warnings.simplefilter("ignore", DeprecationWarning)
        (graph,) = pydot.graph_from_dot_data(source)
    nodes = [n for n in graph.get_nodes() if n.get_name() not in ("node", "edge", "graph")]
    assert len(nodes) == n_nodes and len(graph.get_edges()) == n_edges
    return graph


def _weather_multiway():
    days = [
        ("sunny", "high", 30.0, "no"),
        ("sunny", "normal", 25.0, "yes"),
        ("overcast", "high", 28.0, "yes"),
        ("rain", "high", 18.0, "yes"),
        ("rain", "normal", 12.0, "no"),
        ("overcast", "normal", 21.0, "yes"),
        ("sunny", "high", 22.0, "no"),
        ("rain", "normal", 20.0, "yes"),
    ]
    frame = pd.DataFrame(days, columns=["outlook", "humidity", "temp", "play"])
    X = frame[["outlook", "humidity", "temp"]]
    model = DecisionTreeClassifier(
        criterion="entropy",
        categorical_features=["outlook", "humidity"],
        categorical_split="multiway",
        device="cpu",
    ).fit(X, frame["play"])
    return model


def _subset_and_missing_data(n=240, seed=0, names=("blue", "green", "red", "teal")):
    rng = np.random.default_rng(seed)
    colour = rng.choice(list(names), size=n).astype(object)
    colour[::9] = None
    size = rng.normal(size=n)
    size[::5] = np.nan
    y = (np.isin(colour, [names[0], names[3]]) ^ (size > 0.4)).astype(int)
    return pd.DataFrame({"colour": colour, "size": size}), y


def _subset_and_missing(device="cpu", **names):
    frame, y = _subset_and_missing_data(**names)
    return DecisionTreeClassifier(max_depth=3, categorical_features=["colour"], device=device).fit(
        frame, y
    )


# -- export_graphviz -----------------------------------------------------------------------
def test_numeric_tree_has_scikit_learns_nodes_edges_and_thresholds():
    sklearn_tree = pytest.importorskip("sklearn.tree")
    X, y = datasets.load_diabetes(return_X_y=True)
    ours = DecisionTreeRegressor(max_depth=3, splitter="exact", device="cpu").fit(X, y)
    theirs = sklearn_tree.DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    # Unnamed features read x[0], x[1], ... in both.
    our_dot = export_graphviz(ours, show_missing=False)
    their_dot = sklearn_tree.export_graphviz(theirs)
    assert "x[8] <= " in our_dot
    labels, _, edges = _parse_dot(our_dot)
    assert len(labels) == ours.tree_.node_count == theirs.tree_.node_count
    assert len(edges) == ours.tree_.node_count - 1
    _check_with_pydot(our_dot, len(labels), len(edges))
    # Their node labels (first field of each "N [label=..."), in their order (preorder):
    # the same conditions, impurities, samples and values as ours, in our preorder.
    theirs_labels = [_unescape(t) for t in re.findall(r"^\d+ \[label=" + _QUOTED, their_dot, re.M)]
    assert list(labels.values()) == theirs_labels
    thresholds = [float(t) for t in re.findall(r"<= (-?\d+\.?\d*)", our_dot)]
    internal = ours.tree_.children_left >= 0
    np.testing.assert_allclose(
        sorted(thresholds), sorted(np.round(ours.tree_.threshold[internal], 3)), atol=1e-12
    )
    their_edge_count = len(re.findall(r"^\d+ -> \d+", their_dot, re.M))
    assert their_edge_count == len(edges)


def test_multiway_nodes_have_an_edge_per_branch_and_mark_the_default():
    model = _weather_multiway()
    tree = model.tree_
    source = export_graphviz(model, class_names=["stay in", "play"], filled=True, rounded=True)
    labels, colors, edges = _parse_dot(source)
    _check_with_pydot(source, len(labels), len(edges))
    assert sorted(labels) == list(range(tree.node_count))
    multiway = np.flatnonzero(tree.split_kind == 3)
    assert multiway.size >= 2  # outlook at the root, humidity below
    assert labels[0].splitlines()[0] == "outlook"
    root_edges = {b: text for a, b, text in edges if a == 0}
    assert set(root_edges) == set(tree.children_of(0).tolist())
    assert sorted(t.splitlines()[0] for t in root_edges.values()) == [
        "= overcast",
        "= rain",
        "= sunny",
    ]
    for node in multiway:  # exactly one default edge per multiway node
        texts = [text for a, _, text in edges if a == node]
        assert len(texts) == len(tree.children_of(node))
        # (no missing value in training: the default edge does not speak of them)
        assert sum(t.endswith("\n(or another category)") for t in texts) == 1
    # The same wording as export_text: "outlook = rain" there is "= rain" under "outlook".
    text_lines = {line.split("--- ", 1)[1] for line in export_text(model).splitlines()}
    for a, _, text in edges:
        if a not in multiway:
            continue
        feature = labels[a].splitlines()[0]
        assert f"{feature} {text.replace(chr(10), ' ')}" in text_lines
    assert all(c is not None for c in colors.values()) and 'style="filled, rounded"' in source
    leaves = tree.children_left == -1
    assert {labels[n].splitlines()[-1] for n in np.flatnonzero(leaves)} <= {
        "class = stay in",
        "class = play",
    }


def test_subset_and_numeric_nodes_name_the_missing_side():
    model = _subset_and_missing()
    tree = model.tree_
    source = export_graphviz(model, feature_names=["colour", "size"], precision=2)
    labels, _, edges = _parse_dot(source)
    assert len(labels) == tree.node_count and len(edges) == tree.node_count - 1
    _check_with_pydot(source, len(labels), len(edges))
    kinds = {int(k) for k in tree.split_kind[tree.children_left >= 0]}
    assert kinds == {1, 2}  # numeric and categorical subset nodes
    text_lines = {line.split("--- ", 1)[1] for line in export_text(model).splitlines()}
    for node in np.flatnonzero(tree.children_left >= 0):
        condition = labels[node].splitlines()[0]
        out = {b: text for a, b, text in edges if a == node}
        left, right = tree.children_left[node], tree.children_right[node]
        assert out[left].splitlines()[0] == "True" and out[right].splitlines()[0] == "False"
        missing_side = left if tree.missing_go_to_left[node] else right
        assert out[missing_side].endswith("\nor missing")
        assert "or missing" not in out[right if missing_side == left else left]
        if tree.split_kind[node] == 2:  # worded exactly as export_text words it
            assert condition.startswith("colour in {")
            suffix = " or missing" if tree.missing_go_to_left[node] else ""
            assert condition + suffix in text_lines
        else:
            assert re.fullmatch(r"size <= -?\d+(\.\d{1,2})?", condition)
    hidden = export_graphviz(
        model, feature_names=["colour", "size"], precision=2, show_missing=False
    )
    assert "or missing" not in hidden
    assert _parse_dot(hidden)[0] == labels  # the boxes do not change


def test_names_with_quotes_backslashes_and_newlines_give_valid_dot():
    odd = ('a"b', "back\\slash", "two\nlines", "ends\\")
    model = _subset_and_missing(names=odd)
    classes = ['say "no"', "C:\\yes\\"]
    source = export_graphviz(model, feature_names=['col"our', "size\\"], class_names=classes)
    labels, _, edges = _parse_dot(source)
    graph = _check_with_pydot(source, len(labels), len(edges))
    shown = "\n".join(labels.values())
    assert "value = [31.0" not in shown and "value = [31, 82]" in shown  # whole weights
    # The root's set, read back from the DOT string, is export_text's, names intact.
    text = export_text(model, feature_names=['col"our', "size\\"]).split("\n|   ")[0]
    condition = labels[0].split("\ngini")[0]
    assert text.removeprefix("|--- ").removesuffix(" or missing") == condition
    assert condition in ('col"our in {a"b, ends\\}', 'col"our in {back\\slash, two\nlines}')
    assert 'class = say "no"' in shown and "class = C:\\yes\\" in shown
    assert "size\\ <= " in shown
    assert "two\\nlines" in source  # a line break in a name: a DOT line break
    if graph is not None:  # pydot reads the labels back as written
        label = graph.get_node("0")[0].get_label()
        assert label == '"' + re.search(r"^0 \[label=" + _QUOTED, source, re.M).group(1) + '"'


def test_max_depth_cuts_subtrees_into_ellipsis_boxes():
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=4, device="cpu").fit(X, y)
    tree = model.tree_
    source = export_graphviz(model, max_depth=1, filled=True)
    labels, colors, edges = _parse_dot(source)
    shown = np.flatnonzero(tree.depth <= 1)
    stubs = [c for n in shown if tree.depth[n] == 1 for c in tree.children_of(n)]
    assert sorted(labels) == sorted(shown.tolist() + stubs)
    assert stubs and all(labels[s] == "(...)" and colors[s] == "#c0c0c0" for s in stubs)
    assert len(edges) == len(labels) - 1
    assert export_graphviz(model, max_depth=0).count("(...)") == 2


def test_label_impurity_ids_proportion_and_colours():
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    labels, colors, _ = _parse_dot(export_graphviz(model))
    assert labels[0] == "x[2] <= 2.45\ngini = 0.667\nsamples = 150\nvalue = [50, 50, 50]\nclass = 0"
    assert set(colors.values()) == {None}
    labels, _, _ = _parse_dot(export_graphviz(model, label="root", node_ids=True))
    assert labels[0].startswith("node #0\nx[2] <= 2.45\ngini = ")
    assert labels[1].splitlines()[:2] == ["#1", "0.0"] and "samples" not in labels[1]
    labels, _, _ = _parse_dot(export_graphviz(model, label="none", impurity=False))
    assert "samples" not in "".join(labels.values()) and "gini" not in "".join(labels.values())
    labels, _, _ = _parse_dot(export_graphviz(model, proportion=True, precision=2))
    assert "samples = 100.0%" in labels[0] and "value = [0.33, 0.33, 0.33]" in labels[0]
    filled = export_graphviz(model, filled=True)
    labels, colors, edges = _parse_dot(filled)
    # filled=True adds colours and nothing else: the same boxes and edges.
    plain_labels, plain_colors, plain_edges = _parse_dot(export_graphviz(model))
    assert labels == plain_labels and edges == plain_edges
    assert set(plain_colors.values()) == {None} and None not in colors.values()
    assert colors[0] == "#ffffff"  # a three-way tie: no majority, no colour
    # Each class's full colour, from the pure leaves of a fully grown tree (one hue per
    # class); a node's colour is its majority class's, mixed with white as much as the
    # majority's lead over the runner-up falls short of the whole node.
    full_tree = DecisionTreeClassifier(device="cpu").fit(X, y)
    full_labels, full_colors, _ = _parse_dot(export_graphviz(full_tree, filled=True))
    by_class = {}
    for node in np.flatnonzero(full_tree.tree_.impurity == 0):
        by_class.setdefault(full_labels[node].splitlines()[-1], set()).add(full_colors[node])
    assert sorted(by_class) == ["class = 0", "class = 1", "class = 2"]
    assert all(len(c) == 1 for c in by_class.values())
    full_colour = {name[len("class = ") :]: _rgb(c) for name, (c,) in by_class.items()}
    assert len(set(full_colour.values())) == 3 and (255, 255, 255) not in full_colour.values()
    for node, label in labels.items():
        counts = [float(v) for v in _field(label, "value")[1:-1].split(", ")]
        top, second = sorted(counts)[-1], sorted(counts)[-2]
        lead = (top - second) / sum(counts)
        winner = label.splitlines()[-1][len("class = ") :]
        expected = [255 - lead * (255 - c) for c in full_colour[winner]]
        assert np.allclose(_rgb(colors[node]), expected, atol=1), (node, colors[node], expected)
    # A regressor: one hue, from white (the lowest value among the nodes) to the full
    # colour (the highest), in proportion to the node's value.
    regressor = DecisionTreeRegressor(max_depth=2, device="cpu").fit(X, y)
    labels, colors, _ = _parse_dot(export_graphviz(regressor, filled=True))
    assert labels[0].startswith("x[2] <= 2.45\nsquared_error = 0.667\n")
    values = {node: float(_field(label, "value")) for node, label in labels.items()}
    low, high = min(values.values()), max(values.values())
    assert low < high
    top = _rgb(colors[max(values, key=values.get)])
    assert _rgb(colors[min(values, key=values.get)]) == (255, 255, 255) and top != (255, 255, 255)
    for node, value in values.items():
        strength = (value - low) / (high - low)
        expected = [255 - strength * (255 - c) for c in top]
        assert np.allclose(_rgb(colors[node]), expected, atol=1), (node, colors[node], expected)


def test_out_file_path_is_written_atomically_and_file_objects_work(tmp_path, monkeypatch):
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    source = export_graphviz(model)
    target = tmp_path / "tree.dot"
    target.write_text("old")
    assert export_graphviz(model, target) is None
    assert target.read_text() == source and os.listdir(tmp_path) == ["tree.dot"]
    assert export_graphviz(model, str(tmp_path / "b.dot"), filled=True) is None
    assert (tmp_path / "b.dot").read_text() == export_graphviz(model, filled=True)
    buffer = io.StringIO()
    export_graphviz(model, buffer)
    assert buffer.getvalue() == source

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        export_graphviz(model, target, filled=True)
    assert target.read_text() == source  # untouched, and no temporary file left behind
    assert sorted(os.listdir(tmp_path)) == ["b.dot", "tree.dot"]


def test_bad_arguments():
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=2, device="cpu").fit(X, y)
    with pytest.raises(NotFittedError, match="export_graphviz: .*not fitted yet"):
        export_graphviz(DecisionTreeClassifier())
    with pytest.raises(ValueError, match="feature_names has 1 names"):
        export_graphviz(model, feature_names=["a"])
    with pytest.raises(ValueError, match="class_names has 2 names"):
        export_graphviz(model, class_names=["a", "b"])
    with pytest.raises(ValueError, match="label must be"):
        export_graphviz(model, label="some")
    with pytest.raises(ValueError, match="precision"):
        export_graphviz(model, precision=-1)
    with pytest.raises(ValueError, match="max_depth"):
        export_graphviz(model, max_depth=-1)


def test_cuda_tree_renders_as_the_cpu_tree():
    """One small categorical tree grown by the CUDA backend (the simulator without a GPU)."""
    from gpu_tree.backends.cuda import cuda_status

    usable, reason, _ = cuda_status()
    if not usable:
        pytest.skip(f"CUDA backend not usable: {reason}")
    frame, y = _subset_and_missing_data(n=90, seed=2)
    params = {"max_depth": 2, "categorical_features": ["colour"], "device": "cuda"}
    cuda = DecisionTreeClassifier(**params).fit(frame, y)
    cpu = DecisionTreeClassifier(**{**params, "device": "cpu"}).fit(frame, y)
    assert cuda.device_ == "cuda" and (cuda.tree_.split_kind == 2).any()
    assert cuda.missing_in_training_.tolist() == cpu.missing_in_training_.tolist() == [True, True]
    options = {"filled": True, "node_ids": True, "class_names": ["no", "yes"]}
    assert export_graphviz(cuda, **options) == export_graphviz(cpu, **options)
    if _matplotlib() is not None:
        assert _texts(gpu_plot_tree(cuda, ax=_axes())) == _texts(gpu_plot_tree(cpu, ax=_axes()))


# -- plot_tree -------------------------------------------------------------------------------
def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    return matplotlib


def _axes(figsize=(10, 6)):
    from matplotlib import pyplot as plt

    return plt.figure(figsize=figsize).add_subplot()


def _texts(artists):
    return [a.get_text() for a in artists]


@pytest.fixture
def plt():
    pytest.importorskip("matplotlib")
    _matplotlib()
    from matplotlib import pyplot

    yield pyplot
    pyplot.close("all")


@pytest.mark.parametrize("which", ["multiway", "subset"])
def test_plot_draws_a_box_per_node_and_a_label_per_edge(plt, which, tmp_path):
    from matplotlib.text import Annotation

    model = _weather_multiway() if which == "multiway" else _subset_and_missing()
    labels, _, edges = _parse_dot(export_graphviz(model, filled=True))
    fig, ax = plt.subplots(figsize=(10, 6))
    artists = gpu_plot_tree(model, filled=True, rounded=True, ax=ax)
    boxes = [a for a in artists if isinstance(a, Annotation)]
    edge_texts = [a for a in artists if not isinstance(a, Annotation)]
    assert len(boxes) == len(labels) == model.tree_.node_count
    assert _texts(boxes) == list(labels.values())  # the same boxes, in preorder
    assert _texts(edge_texts) == [text for _, _, text in edges]
    assert artists[0].arrow_patch is None and all(b.arrow_patch for b in boxes[1:])
    if which == "multiway":
        assert any(t.startswith("= sunny") for t in _texts(edge_texts))
        assert sum(t.endswith("\n(or another category)") for t in _texts(edge_texts)) >= 2
    else:
        assert any(t.startswith("colour in {") for t in _texts(boxes))
        assert any(t == "True\nor missing" for t in _texts(edge_texts))
    path = tmp_path / "tree.png"
    fig.savefig(path)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000


def test_plot_layout_centres_parents_over_their_children(plt):
    model = _weather_multiway()
    tree = model.tree_
    artists = gpu_plot_tree(model, ax=_axes(), fontsize=7)
    boxes = artists[: tree.node_count]
    # Preorder box i is the tree node listed i-th by export_graphviz.
    ids = list(_parse_dot(export_graphviz(model))[0])
    position = {node: box.xyann for node, box in zip(ids, boxes, strict=True)}
    assert all(box.get_fontsize() == 7 for box in boxes)
    leaves = [n for n in ids if tree.children_left[n] == -1]
    xs = [position[n][0] for n in leaves]
    np.testing.assert_allclose(np.diff(xs), 1 / len(leaves))  # evenly spread, left to right
    for node in ids:
        kids = tree.children_of(node)
        if kids.size:
            assert position[node][0] == pytest.approx(
                (position[kids[0]][0] + position[kids[-1]][0]) / 2
            )
            assert all(position[k][1] < position[node][1] for k in kids)


def test_plot_truncates_and_keeps_names_literal(plt, tmp_path):
    odd = ("$x_{", "cost $5", "a\\b", "d")
    model = _subset_and_missing(names=odd)
    ax = _axes((6, 4))
    artists = gpu_plot_tree(model, max_depth=1, node_ids=True, precision=1, ax=ax)
    texts = _texts(artists)
    assert "(...)" in texts and texts[0].startswith("node #0\n")
    ax.figure.savefig(tmp_path / "odd.png")  # "$x_{" would break mathtext if parsed
    assert (tmp_path / "odd.png").read_bytes().startswith(PNG_MAGIC)
    # Without an axes it draws on the current one.
    assert gpu_plot_tree(model, max_depth=0)[0].axes is plt.gca()


def test_plot_without_matplotlib_says_how_to_install_it(monkeypatch):
    X, y = datasets.load_iris(return_X_y=True)
    model = DecisionTreeClassifier(max_depth=1, device="cpu").fit(X, y)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(
        ImportError,
        match=r'pip install matplotlib \(or, in a gpu_tree checkout, pip install "\.\[plot\]"\)',
    ):
        gpu_plot_tree(model)
