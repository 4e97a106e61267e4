"""The tree in Graphviz's DOT language (``export_graphviz``)."""

from __future__ import annotations

from gpu_tree.model.export.graph import boxes_and_edges
from gpu_tree.model.export.wording import check_fitted_and_names, chosen_tree, oblique_class_names
from gpu_tree.model.oblique import ObliqueTree
from gpu_tree.utils.atomic_files import atomic_text


def _dot_quote(lines):
    """A DOT double-quoted string showing ``lines`` one per line: backslashes and quotes
    escaped, line breaks inside a name shown as line breaks."""
    escaped = []
    for line in lines:
        text = str(line).replace("\\", "\\\\").replace('"', '\\"')
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
        escaped.append(text)
    return '"' + "\\n".join(escaped) + '"'


def dot_source(nodes, edges, *, filled, rounded):
    """The DOT statements of ``boxes_and_edges``'s boxes and edges."""
    styles = [s for s, on in (("filled", filled), ("rounded", rounded)) if on]
    node_style = f', style="{", ".join(styles)}"' if styles else ""
    out = [
        "digraph Tree {",
        f'node [shape=box{node_style}, color="black", fontname="helvetica"] ;',
        'edge [fontname="helvetica"] ;',
    ]
    edge_of = {edge.child: edge for edge in edges}
    for box in nodes:
        fill = f', fillcolor="{box.color}"' if box.color else ""
        out.append(f"{box.node} [label={_dot_quote(box.lines)}{fill}] ;")
        if box.parent >= 0:
            edge = _dot_quote(edge_of[box.node].lines)
            out.append(f"{box.parent} -> {box.node} [label={edge}] ;")
    out.append("}")
    return "\n".join(out) + "\n"


def export_graphviz(
    estimator,
    out_file=None,
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
    show_missing=True,
    tree_index=None,
):
    """The tree in Graphviz's DOT language (render it with ``dot -Tpng tree.dot``).

    Each box shows the split (a binary node's left condition: "x <= t", "x in {...}";
    a multiway node's feature), the impurity, the samples, the value and, for a
    classifier, the majority class. Edges under a binary node read "True" (left) and
    "False"; edges under a multiway node name their categories. "or missing" marks the
    edge missing values take, under splits of features that had missing values in
    training; a multiway node's default edge takes unseen categories (and missing
    values).

    Parameters
    ----------
    estimator : fitted DecisionTreeClassifier, DecisionTreeRegressor or random forest
    out_file : None, path or file-like object
        None returns the DOT source; a path is written atomically (a temporary file in
        the same folder, then renamed); a file-like object is written to.
    max_depth : int or None
        Nodes deeper than this are drawn as one "(...)" box per cut subtree.
    feature_names, class_names : sequences of str, optional
        Default: the DataFrame's column names (else x[0], x[1], ..., as scikit-learn
        names them; an oblique tree's x0, x1, ...) and ``classes_``.
    label : {"all", "root", "none"}
        Which boxes name their numbers ("samples = 10" or "10").
    filled : bool
        Colour boxes by majority class (regression: by value); the palette is fixed.
    impurity, node_ids, proportion : bool
        Show the impurity; show node ids; show samples and class values as fractions.
    rounded : bool
        Rounded boxes.
    precision : int
        Decimals of thresholds, impurities and values (trailing zeros dropped).
    show_missing : bool
        Mark the edge missing values take (where the feature had missing values in
        training; a model saved without that record: every split). False: nowhere.
    tree_index : int or None
        A forest's tree to draw, by its index in ``estimators_`` (required for a forest;
        left out for a single tree).

    Returns
    -------
    str or None
        The DOT source when ``out_file`` is None.
    """
    chosen = chosen_tree(estimator, tree_index, "export_graphviz")
    if isinstance(getattr(chosen, "tree_", None), ObliqueTree):
        # Oblique trees: boxes with the condition, impurity, samples, value and class.
        source = chosen.tree_.export_graphviz(
            feature_names=check_fitted_and_names(
                chosen, feature_names, class_names, "export_graphviz"
            ),
            class_names=oblique_class_names(chosen, class_names),
            precision=precision,
            criterion=getattr(chosen, "criterion", "impurity"),
        )
        return _write_dot(source, out_file)
    nodes, edges = boxes_and_edges(
        chosen,
        "export_graphviz",
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
    return _write_dot(dot_source(nodes, edges, filled=filled, rounded=rounded), out_file)


def _write_dot(source, out_file):
    if out_file is None:
        return source
    if hasattr(out_file, "write"):
        out_file.write(source)
    else:
        with atomic_text(out_file, newline="\n") as out:
            out.write(source)
    return None
