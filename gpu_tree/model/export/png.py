"""A PNG drawing sized to the tree (``export_png``), or a refusal before any rendering of
a tree too large to read in one picture (:class:`TreeTooLargeToDraw`)."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import numpy as np

from gpu_tree.model.export.dot import dot_source
from gpu_tree.model.export.graph import EDGE_TEXT_SCALE, boxes_and_edges, check_graph_options
from gpu_tree.model.export.plot import draw_graph
from gpu_tree.model.export.wording import check_fitted_and_names, chosen_tree
from gpu_tree.model.tree import TREE_LEAF
from gpu_tree.utils.atomic_files import atomic_path
from gpu_tree.utils.install_hints import install_hint

# The most leaf boxes (the tree's leaves, and the "(...)" boxes standing for cut subtrees)
# a PNG shows side by side. At the drawing's 10-point text a leaf box ("value = [1234,
# 567]", "squared_error = 12.345") is 1.6 to 2.3 inches wide, so 64 of them make an image
# 10,000 to 15,000 pixels wide at 100 dpi: about the most that image viewers and browsers
# open (16,384 pixels a side is a common limit) and a reader can still pan across. More
# leaves would need smaller text than can be read; the text and DOT exports show any tree.
MAX_PNG_LEAVES = 64
MAX_PNG_PIXELS = 16_384  # on either side: long labels can make even fewer leaves too wide
PNG_DPI = 100
PNG_FONT_POINTS = 10.0
# A box line longer than this (a category set: "education in {10th, 11th, ...}") is
# wrapped in the PNG: one long line would widen every leaf slot of the picture.
PNG_LINE_CHARACTERS = 40
# Text measures, in ems of the font: DejaVu Sans (matplotlib's default) and Helvetica
# average about 0.6 em a character over digits, letters and spaces; a line is 1.2 em
# high; a box adds its padding (0.3 em a side) and a gap to its neighbour.
_CHAR_EMS = 0.6
_LINE_EMS = 1.2
_BOX_EMS = 1.4
_LEVEL_GAP_EMS = 2.0
_DOT_TIMEOUT_SECONDS = 300


class TreeTooLargeToDraw(ValueError):
    """``export_png``'s refusal, raised before any rendering: the drawing would be
    unreadable. ``fitting_depth`` is the deepest ``max_depth`` whose drawing is readable
    (None where even the root's level is not).

    A ``ValueError``; its message is :meth:`advice` in ``export_png``'s words.

    Parameters
    ----------
    problem : str
        Why the drawing would be unreadable (too many leaf boxes side by side, or too
        many pixels a side); kept as ``problem``.
    fitting_depth : int or None
        Kept as ``fitting_depth``.
    """

    def __init__(self, problem: str, fitting_depth: int | None):
        self.problem = problem
        self.fitting_depth = fitting_depth
        super().__init__(self.advice("max_depth=", "export_text or export_graphviz"))

    def advice(self, depth_option: str, whole_tree: str) -> str:
        """The message, in the caller's words: the problem, then what draws instead.

        Parameters
        ----------
        depth_option : str
            How the caller cuts the tree, followed by the depth: "max_depth=" (the
            function) or "--max-depth " (the command line).
        whole_tree : str
            What shows all of the tree as text or DOT, e.g. "export_text or
            export_graphviz".

        Returns
        -------
        str
            The problem, and the ``fitting_depth`` to draw with (where there is one) or
            ``whole_tree``.
        """
        if self.fitting_depth is None:
            return f"{self.problem}; show it with {whole_tree} instead"
        return (
            f"{self.problem}; draw its top with {depth_option}{self.fitting_depth}, or "
            f"show the whole tree with {whole_tree}"
        )


def _leaf_boxes_by_depth(tree) -> np.ndarray:
    """leaf_boxes[d]: the boxes at the bottom of a drawing cut at ``max_depth=d``, for d =
    0 .. the tree's depth: its leaves down to depth d, and a "(...)" box for each node at
    depth d + 1 (the root of a cut subtree)."""
    depth = np.asarray(tree.depth, dtype=np.int64)
    n_levels = int(depth.max()) + 1
    leaves = np.asarray(tree.children_left) == TREE_LEAF
    leaves_down_to = np.cumsum(np.bincount(depth[leaves], minlength=n_levels))
    nodes_at = np.bincount(depth, minlength=n_levels + 1)
    return leaves_down_to[:n_levels] + nodes_at[1 : n_levels + 1]


def _wrapped(lines, width):
    """Text lines of at most ``width`` characters where they can be broken (at spaces):
    a line break inside a name stays one."""
    out = []
    for line in lines:
        for part in str(line).split("\n"):
            out.extend(
                textwrap.wrap(part, width, break_long_words=False, break_on_hyphens=False) or [part]
            )
    return out


def _png_graph(estimator, depth, graph_options):
    """``boxes_and_edges``'s boxes and edges cut at ``depth``, their lines wrapped for the PNG."""
    nodes, edges = boxes_and_edges(estimator, "export_png", max_depth=depth, **graph_options)
    nodes = [box._replace(lines=_wrapped(box.lines, PNG_LINE_CHARACTERS)) for box in nodes]
    edges = [edge._replace(lines=_wrapped(edge.lines, PNG_LINE_CHARACTERS)) for edge in edges]
    return nodes, edges


def _drawing_inches(nodes, edges) -> tuple[float, float]:
    """(width, height) of a drawing of these boxes at PNG_FONT_POINTS, laid out as
    ``tidy_positions`` lays them out: leaf slots wide enough that every box, and the label
    of the edge above it, fits the slots below it; levels tall enough for the tallest box
    and edge label."""
    children = {}
    for box in nodes:
        if box.parent >= 0:
            children.setdefault(box.parent, []).append(box.node)
    slots = {}
    for box in reversed(nodes):  # children before their parent
        kids = children.get(box.node)
        slots[box.node] = sum(slots[k] for k in kids) if kids else 1

    def width(lines, scale):
        return (max(map(len, lines)) * _CHAR_EMS + _BOX_EMS) * scale

    slot_ems = max(width(box.lines, 1.0) / slots[box.node] for box in nodes)
    for edge in edges:
        slot_ems = max(slot_ems, width(edge.lines, EDGE_TEXT_SCALE) / slots[edge.child])
    tallest_box = max(len(box.lines) for box in nodes)
    tallest_edge = max((len(edge.lines) for edge in edges), default=0)
    level_ems = (tallest_box + EDGE_TEXT_SCALE * tallest_edge) * _LINE_EMS + _LEVEL_GAP_EMS
    n_levels = max(box.depth for box in nodes) + 1
    em = PNG_FONT_POINTS / 72.0  # inches
    return slot_ems * slots[nodes[0].node] * em, level_ems * n_levels * em


def _png_problem(estimator, depth, leaf_boxes, graph_options):
    """Why a drawing cut at ``depth`` would be unreadable (None: it would not be); with
    the boxes, edges and size (inches) of the drawing where it was laid out."""
    if leaf_boxes[depth] > MAX_PNG_LEAVES:
        problem = (
            f"the tree would be drawn with {leaf_boxes[depth]:,} leaf boxes side by side, "
            f"more than the {MAX_PNG_LEAVES} a readable PNG holds"
        )
        return problem, None
    nodes, edges = _png_graph(estimator, depth, graph_options)
    inches = _drawing_inches(nodes, edges)
    pixels = [round(PNG_DPI * side) for side in inches]
    if max(pixels) > MAX_PNG_PIXELS:
        problem = (
            f"at readable {PNG_FONT_POINTS:g}-point text the drawing would be "
            f"{pixels[0]:,} x {pixels[1]:,} pixels, more than the {MAX_PNG_PIXELS:,} a side "
            "that image viewers open"
        )
        return problem, None
    return None, (nodes, edges, inches)


def export_png(
    estimator,
    out_file,
    *,
    max_depth=None,
    feature_names=None,
    class_names=None,
    filled=True,
    precision=3,
    show_missing=True,
    renderer="auto",
    tree_index=None,
) -> str:
    """Draw the tree into the PNG file ``out_file``, sized to the tree, and return the
    renderer used ("dot" or "matplotlib").

    The boxes and edges read as :func:`export_graphviz`'s, with lines longer than
    ``PNG_LINE_CHARACTERS`` wrapped. The text is a readable 10 points at 100 dpi; the
    picture is as wide as the leaf boxes shown need and as tall as the levels shown need.
    A tree that would draw more than ``MAX_PNG_LEAVES`` leaf boxes side by side (or an
    image wider or taller than ``MAX_PNG_PIXELS``) is refused with
    :class:`~gpu_tree.model.export.png.TreeTooLargeToDraw` before anything is
    rendered; its message names the deepest ``max_depth`` that draws readably.

    Parameters
    ----------
    estimator : fitted tree estimator or random forest
        A decision tree or extra tree (classifier or regressor), or a random forest or
        extra-trees ensemble with ``tree_index``; an unfitted one raises scikit-learn's
        ``NotFittedError``.
    out_file : path
        Written atomically (a temporary file in the same folder, then renamed).
    max_depth, feature_names, class_names, filled, precision, show_missing
        As :func:`export_graphviz`.
    renderer : {"auto", "dot", "matplotlib"}
        ``dot``: Graphviz's ``dot`` program (on the PATH) lays out and draws the boxes;
        ``matplotlib``: :func:`plot_tree`'s drawing on a figure of the computed size.
        ``auto``: ``dot`` where it is installed, else matplotlib.
    tree_index : int or None
        A forest's tree to draw (required for a forest; left out for a single tree).

    Returns
    -------
    str
        The renderer that drew the file: "dot" or "matplotlib".

    Raises
    ------
    TreeTooLargeToDraw
        The drawing would be unreadable; nothing is written.
    FileNotFoundError
        ``renderer="dot"`` without Graphviz's ``dot`` on the PATH.
    ImportError
        Neither ``dot`` nor matplotlib is installed.
    """
    estimator = chosen_tree(estimator, tree_index, "export_png")
    if renderer not in ("auto", "dot", "matplotlib"):
        raise ValueError(f"renderer must be 'auto', 'dot' or 'matplotlib', got {renderer!r}")
    graph_options = dict(
        feature_names=feature_names,
        class_names=class_names,
        label="all",
        filled=filled,
        impurity=True,
        node_ids=False,
        proportion=False,
        precision=precision,
        show_missing=show_missing,
    )
    check_fitted_and_names(estimator, feature_names, class_names, "export_png")
    check_graph_options("all", precision, max_depth)
    dot = shutil.which("dot") if renderer in ("auto", "dot") else None
    if renderer == "dot" and dot is None:
        raise FileNotFoundError(
            "renderer='dot' needs Graphviz's dot program on the PATH (install Graphviz)"
        )
    if dot is None:
        try:
            from matplotlib.figure import Figure
        except ImportError as error:
            raise ImportError(
                "export_png needs Graphviz's dot program or matplotlib: install Graphviz, "
                f"or {install_hint('plot')}"
            ) from error
    leaf_boxes = _leaf_boxes_by_depth(estimator.tree_)
    deepest = len(leaf_boxes) - 1
    depth = deepest if max_depth is None else min(int(max_depth), deepest)
    problem, drawing = _png_problem(estimator, depth, leaf_boxes, graph_options)
    if problem is not None:
        fitting = next(
            (
                d
                for d in range(depth - 1, -1, -1)
                if _png_problem(estimator, d, leaf_boxes, graph_options)[0] is None
            ),
            None,
        )
        raise TreeTooLargeToDraw(problem, fitting)
    nodes, edges, (width, height) = drawing
    if dot is not None:
        _render_with_dot(dot, dot_source(nodes, edges, filled=filled, rounded=False), out_file)
        return "dot"
    figure = Figure(figsize=(max(width, 2.0), max(height, 1.5)), dpi=PNG_DPI)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    draw_graph(axes, nodes, edges, fontsize=PNG_FONT_POINTS, rounded=False)
    with atomic_path(out_file) as temporary:
        figure.savefig(temporary, format="png", dpi=PNG_DPI)
    return "matplotlib"


def _render_with_dot(dot, source, out_file):
    """Graphviz's ``dot`` draws ``source`` into ``out_file`` (atomically), at the text size
    and resolution of the matplotlib drawing."""
    with atomic_path(out_file) as temporary:
        command = [
            dot,
            "-Tpng",
            f"-Gdpi={PNG_DPI}",
            f"-Nfontsize={PNG_FONT_POINTS:g}",
            f"-Efontsize={EDGE_TEXT_SCALE * PNG_FONT_POINTS:g}",
            "-o",
            temporary,
        ]
        try:
            result = subprocess.run(
                command,
                input=source,
                capture_output=True,
                text=True,
                encoding="utf-8",
                timeout=_DOT_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise OSError(
                f"Graphviz's dot took more than {_DOT_TIMEOUT_SECONDS} s to draw the tree; "
                "draw less of it (max_depth)"
            ) from None
        if result.returncode != 0:
            said = " ".join(result.stderr.split())[-300:] or "no message"
            raise OSError(f"Graphviz's dot failed (exit status {result.returncode}): {said}")
