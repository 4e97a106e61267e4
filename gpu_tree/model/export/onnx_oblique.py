"""Oblique splits in ONNX: the graph computes each oblique node's side before the tree
operator reads it.

An oblique node sends a row left where ``coefficients @ x <= threshold``, the projection
summed by :func:`gpu_tree.model.oblique.project` in float64, one feature at a time in
feature order. The graph computes every oblique node's projection (one column each),
compares it with the node's threshold (``LessOrEqual``, then ``Not``: 1 where the row
goes right, NaN included, as ``NaN <= t`` is false in gpu_tree's walk), and appends these
side columns to the input; the tree's oblique node tests its column ``<= 0.5``
(:mod:`.onnx_trees`). The comparison is made in float64 whatever the export's dtype (a
float32 input is cast first), so a float32 export sends each float32 row where gpu_tree
sends the same numbers.

Two ways to sum the projections (``export_onnx``'s ``projection``):

- ``"exact"``: per feature used, its column (``Gather``) times its coefficients (``Mul``),
  added in feature order (``Add``): the operations of ``project`` in its order, so the
  projections are gpu_tree's bit for bit (a zero coefficient adds ``x * 0 = 0``, which
  changes no sum; inputs are finite, as gpu_tree's oblique trees take no NaN or
  infinity).
- ``"matmul"``: one ``MatMul`` of the rows by the (n_features, n_oblique) coefficients,
  summed in the runtime's order and rounding (blocked, vectorised): a projection differs from
  gpu_tree's by at most the rounding of two sums of d terms, 2·d·2⁻⁵³·Σ|c_j·x_j|, and a
  row can take the other side only where its projection lies that close to the
  threshold.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gpu_tree.model.export.portable import OBLIQUE_SPLIT, node_tests

PROJECTIONS = ("exact", "matmul")


class ObliqueSides(NamedTuple):
    """The oblique nodes of the exported trees, one projection each."""

    columns: list  # per tree, {oblique node: its side's input column}
    coefficients: np.ndarray  # (n_projections, n_features)
    thresholds: np.ndarray  # (n_projections,)


def oblique_sides(trees, n_features: int) -> ObliqueSides:
    """The projections of every oblique node of ``trees``; their side columns follow the
    ``n_features`` input columns, in tree and node order."""
    columns, coefficients, thresholds = [], [], []
    for tree in trees:
        oblique = np.flatnonzero(node_tests(tree).kind == OBLIQUE_SPLIT)
        columns.append(
            {int(node): n_features + len(thresholds) + k for k, node in enumerate(oblique)}
        )
        if oblique.size:  # an axis-parallel tree has no coefficients
            coefficients.extend(tree.coefficients[oblique])
            thresholds.extend(tree.threshold[oblique])
    coefficients = np.asarray(coefficients, dtype=np.float64).reshape(-1, n_features)
    return ObliqueSides(columns, coefficients, np.asarray(thresholds, dtype=np.float64))


def side_graph(sides: ObliqueSides, dtype: str, projection: str):
    """(nodes, initializers, name): the graph nodes that append the side columns to the
    input ``X`` (of ``dtype``), their constants, and the name of the widened input;
    ``projection``: one of :data:`PROJECTIONS`."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, initializers = [], []
    rows = "X"
    if dtype != "float64":
        rows = "X_float64"
        nodes.append(helper.make_node("Cast", ["X"], [rows], to=TensorProto.DOUBLE))
    if projection == "matmul":
        initializers.append(numpy_helper.from_array(sides.coefficients.T.copy(), "coefficients"))
        nodes.append(helper.make_node("MatMul", [rows, "coefficients"], ["projections"]))
    else:
        total = None
        used = np.flatnonzero(np.any(sides.coefficients != 0, axis=0))
        for j in used.tolist():
            initializers.append(numpy_helper.from_array(np.array([j], np.int64), f"feature_{j}"))
            initializers.append(
                numpy_helper.from_array(sides.coefficients[:, j].copy(), f"coefficients_{j}")
            )
            nodes.append(helper.make_node("Gather", [rows, f"feature_{j}"], [f"x_{j}"], axis=1))
            nodes.append(helper.make_node("Mul", [f"x_{j}", f"coefficients_{j}"], [f"term_{j}"]))
            if total is not None:
                nodes.append(helper.make_node("Add", [total, f"term_{j}"], [f"sum_{j}"]))
            total = f"term_{j}" if total is None else f"sum_{j}"
        nodes.append(helper.make_node("Identity", [total], ["projections"]))
    initializers.append(numpy_helper.from_array(sides.thresholds, "oblique_thresholds"))
    proto_dtype = TensorProto.DOUBLE if dtype == "float64" else TensorProto.FLOAT
    nodes += [
        helper.make_node("LessOrEqual", ["projections", "oblique_thresholds"], ["goes_left"]),
        helper.make_node("Not", ["goes_left"], ["goes_right"]),
        helper.make_node("Cast", ["goes_right"], ["sides"], to=proto_dtype),
        helper.make_node("Concat", ["X", "sides"], ["X_with_sides"], axis=1),
    ]
    return nodes, initializers, "X_with_sides"
