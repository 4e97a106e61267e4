"""The tree walk (``_tree_walk.py``) as plain Python, and its node table's layout, without
numba.

Importing numba, the compiled kernels, and the first call of a cached kernel (numba then
loads its implementations, SciPy's BLAS among them) take about a second on a busy machine:
more than walking a few rows in Python. ``gputree predict`` walks a small batch so
(``gpu_tree.model.saved``), reading a model file needs the layout only, and both need no
numba. The walk is the kernels' own source, uncalled by numba: the same rules, so the
same leaves (tests/app/test_cli_startup.py compares them on numeric, subset and multiway
splits with missing values).
"""

from . import _tree_walk as _walk

# The columns of the node table the walk reads (Tree.walk_arrays builds it); the compiled
# kernels' WALK_NODE_COLUMNS is this tuple.
WALK_NODE_COLUMNS = _walk.NODE_COLUMNS

# leaf_of_row(X, i, *tree.walk_arrays(), root): the leaf row i of a dense X reaches from
# node ``root`` (0, or a forest's tree's root in its packed table).
leaf_of_row = _walk.make_leaf_of_row(_walk.in_category_set, _walk.dense_value)
