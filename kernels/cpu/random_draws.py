"""The per-node random draws on the CPU (``kernels/_random_keys.py``, compiled): the
keys of roots and children, and each node's draw per feature."""

from numba import njit

from .. import _random_keys as _keys
from .. import compilation

# The draws' generator (_random_keys.py), compiled; the grower's numpy code takes arrays.
_, root_key, child_key, draw_score = _keys.make_random_keys(njit(inline="always"))
# The streams of the per-node draws (which features, extra trees' thresholds).
FEATURE_SALT, THRESHOLD_SALT = _keys.FEATURE_SALT, _keys.THRESHOLD_SALT
# A draw as a uniform float in [0, 1) (numpy arrays here; the finisher compiles it).
unit_interval = _keys.unit_interval


@njit(cache=True)
def root_keys(seed, trees, out):
    """``out[k]``: the root key of tree ``trees[k]``."""
    for k in range(trees.shape[0]):
        out[k] = root_key(seed, trees[k])


@njit(cache=True)
def child_keys(parent_keys, branches, out):
    """``out[k]``: the key of child ``branches[k]`` of the node keyed ``parent_keys[k]``."""
    for k in range(parent_keys.shape[0]):
        out[k] = child_key(parent_keys[k], branches[k])


@njit(cache=True)
def draw_scores(keys, n_features, salt, out):
    """``out[k, f]``: node ``keys[k]``'s draw for feature f in the stream ``salt``."""
    for k in range(keys.shape[0]):
        for f in range(n_features):
            out[k, f] = draw_score(keys[k], f, salt)


# The first kernel to miss the disk cache says, on a terminal, that numba is compiling.
compilation.watch(globals())
