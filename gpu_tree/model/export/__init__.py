"""Views of a fitted tree (text, Graphviz DOT, a matplotlib drawing, a PNG) and its
serving formats (ONNX, Treelite).

``export_text`` (:mod:`.text`) follows scikit-learn's layout (one line per branch, ``|---``
indents), extended to every node kind: numeric thresholds, categorical subsets ("colour
in {red, blue}"), one line per branch of a multiway (ID3) node, and where missing values go
(on the splits of features that had missing values in training). ``export_graphviz``
(:mod:`.dot`) and ``plot_tree`` (:mod:`.plot`) draw the same tree as boxes and labelled
edges (:mod:`.graph`); all of them word the split conditions through
:func:`.wording.node_branches`. ``export_png`` (:mod:`.png`) writes a drawing sized to the
tree (through Graphviz's ``dot`` where installed, else matplotlib), and refuses, before
rendering anything, a tree too large to read in one picture. Each takes a single tree
estimator, or a random forest and ``tree_index``, the index of the tree to show in its
``estimators_``.

The modules, one format each, over what they share: ``wording`` (names, the chosen tree,
the branches' words), then ``text``; ``graph`` (boxes and edges), then ``dot``, ``plot``
and ``png``, which draws with either of them.

For serving, ``export_onnx`` (:mod:`.onnx_format`: an ``ai.onnx.ml`` opset-5
``TreeEnsemble``, or the older operators of :mod:`.onnx_legacy`, over the tests of
:mod:`.onnx_trees` and the oblique projections of :mod:`.onnx_oblique`) and
``export_treelite`` (:mod:`.treelite_format`, Treelite's ``ModelBuilder``) translate a
whole tree or forest, over :mod:`.portable` (the trees, the refusals, float32
thresholds, and ``export_inputs``, the coded rows both read).
"""
