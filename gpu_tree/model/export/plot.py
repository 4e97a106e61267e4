"""The tree drawn with matplotlib (``plot_tree``): leaves spread evenly, each parent
centred over its children."""

from __future__ import annotations

import numpy as np

from gpu_tree.model.export.graph import EDGE_TEXT_SCALE, boxes_and_edges
from gpu_tree.model.export.wording import chosen_tree
from gpu_tree.utils.install_hints import install_hint


def tidy_positions(nodes):
    """(x, y) in axes fractions: leaves spread evenly left to right, each parent centred
    over its first and last child, one level per depth (any number of children)."""
    children = {}
    for box in nodes:
        if box.parent >= 0:
            children.setdefault(box.parent, []).append(box.node)
    x = {}
    leaves = [box.node for box in nodes if box.node not in children]  # preorder: left to right
    for slot, node in enumerate(leaves):
        x[node] = (slot + 0.5) / len(leaves)
    for box in reversed(nodes):  # children before their parent
        kids = children.get(box.node)
        if kids:
            x[box.node] = (x[kids[0]] + x[kids[-1]]) / 2
    n_levels = max(box.depth for box in nodes) + 1
    positions = {box.node: (x[box.node], 1.0 - (box.depth + 0.5) / n_levels) for box in nodes}
    return positions, len(leaves), n_levels


def _auto_fontsize(ax, nodes, n_slots, n_levels):
    """The largest font (<= 12 pt) at which the widest box fits its leaf slot and the
    tallest box about half its level."""
    extent = ax.get_window_extent()
    widest = max(len(line) for box in nodes for line in box.lines)
    tallest = max(len(box.lines) for box in nodes)
    by_width = extent.width / n_slots * 0.9 / (0.58 * max(widest, 1))
    by_height = extent.height / n_levels * 0.55 / (1.3 * tallest)
    return float(np.clip(min(by_width, by_height) * 72.0 / ax.figure.dpi, 1.0, 12.0))


def plot_tree(
    estimator,
    *,
    max_depth=None,
    feature_names=None,
    class_names=None,
    label="all",
    filled=False,
    impurity=True,
    node_ids=False,
    proportion=False,
    rounded=False,
    precision=3,
    ax=None,
    fontsize=None,
    show_missing=True,
    tree_index=None,
):
    """Draw the tree with matplotlib (``pip install matplotlib``).

    The boxes and edge labels read as ``export_graphviz``'s (see there for the options).
    The layout spreads the leaves evenly and centres each parent over its children, so
    multiway nodes draw as well as binary ones.

    Parameters
    ----------
    estimator : fitted tree estimator or random forest
        A decision tree or extra tree (classifier or regressor), or a random forest or
        extra-trees ensemble with ``tree_index``; an unfitted one raises scikit-learn's
        ``NotFittedError``.
    max_depth : int, optional
        Nodes deeper than this are drawn as one "(...)" box per cut subtree. Default:
        the whole tree.
    feature_names : sequence of str, optional
        One name per feature, in column order (a ``ValueError`` for another count).
        Default: the DataFrame's column names, else x[0], x[1], ....
    class_names : sequence of str, optional
        A classifier's class names, in the order of ``classes_`` (default:
        ``classes_``); not for a tree of several outputs.
    label : {"all", "root", "none"}, default="all"
        Which boxes name their numbers ("samples = 10") rather than show them bare
        ("10"): every box, the root's only, or none.
    filled : bool, default=False
        Colour the boxes: a classifier's by majority class (stronger for a larger lead
        over the runner-up), a regressor's by value (stronger for higher values).
    impurity : bool, default=True
        Show each node's impurity.
    node_ids : bool, default=False
        Show each node's id ("node #3").
    proportion : bool, default=False
        Show samples as a percentage of the root's, and a classifier's class values as
        fractions, instead of counts and weighted counts.
    rounded : bool, default=False
        Boxes with rounded corners.
    precision : int, default=3
        Decimals of thresholds, impurities and values (trailing zeros dropped).
    ax : matplotlib Axes, optional
        Where to draw (default: the current axes).
    fontsize : float, optional
        Box text size in points; default: as large as fits (at most 12).
    show_missing : bool, default=True
        Mark the edge missing values take, on splits of features that had missing
        values in training (a model saved without that record: every split). False:
        nowhere.
    tree_index : int or None
        A forest's tree to draw, by its index in ``estimators_`` (required for a forest;
        left out for a single tree).

    Returns
    -------
    list of matplotlib artists
        One ``Annotation`` per box (preorder, root first), then one ``Text`` per edge
        label.
    """
    nodes, edges = boxes_and_edges(
        chosen_tree(estimator, tree_index, "plot_tree"),
        "plot_tree",
        max_depth=max_depth,
        feature_names=feature_names,
        class_names=class_names,
        label=label,
        filled=filled,
        impurity=impurity,
        node_ids=node_ids,
        proportion=proportion,
        precision=precision,
        show_missing=show_missing,
    )
    try:
        import matplotlib  # noqa: F401

        if ax is None:
            from matplotlib import pyplot as plt

            ax = plt.gca()
    except ImportError as error:
        raise ImportError(f"plot_tree needs matplotlib: {install_hint('plot')}") from error
    if fontsize is None:
        _, n_slots, n_levels = tidy_positions(nodes)
        fontsize = _auto_fontsize(ax, nodes, n_slots, n_levels)
    return draw_graph(ax, nodes, edges, fontsize=fontsize, rounded=rounded)


def draw_graph(ax, nodes, edges, *, fontsize, rounded):
    """Draw ``boxes_and_edges``'s boxes and edges on ``ax``; return the artists (boxes in preorder,
    then edge labels)."""
    positions, _, _ = tidy_positions(nodes)
    ax.set_axis_off()
    boxes, artists = {}, []
    for box in nodes:  # parents first: an edge's arrow stops at its parent's drawn box
        style = "round,pad=0.3" if rounded else "square,pad=0.3"
        common = dict(
            xycoords="axes fraction",
            textcoords="axes fraction",
            ha="center",
            va="center",
            fontsize=fontsize,
            zorder=3,
            parse_math=False,  # names are plain text, no mathtext
            bbox=dict(boxstyle=style, facecolor=box.color or "white", edgecolor="black"),
        )
        text = "\n".join(box.lines)
        if box.parent < 0:
            artist = ax.annotate(text, xy=positions[box.node], **common)
        else:
            arrow = dict(
                arrowstyle="<-",
                color="black",
                shrinkA=0,
                shrinkB=0,
                patchB=boxes[box.parent].get_bbox_patch(),
            )
            artist = ax.annotate(
                text,
                xy=positions[box.parent],
                xytext=positions[box.node],
                arrowprops=arrow,
                **common,
            )
        boxes[box.node] = artist
        artists.append(artist)
    for edge in edges:
        (x0, y0), (x1, y1) = positions[edge.parent], positions[edge.child]
        artists.append(
            ax.text(
                (x0 + x1) / 2,
                (y0 + y1) / 2,
                "\n".join(edge.lines),
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=EDGE_TEXT_SCALE * fontsize,
                zorder=4,
                parse_math=False,
                bbox=dict(
                    boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85
                ),
            )
        )
    return artists
