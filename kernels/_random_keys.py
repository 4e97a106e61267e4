"""The counter-based generator of a fit's random draws, written once in plain Python
on uint64 scalars and compiled where it is used: :mod:`gpu_tree.kernels.cpu` (numba
``njit``, and array versions for the grower's numpy code) and the subtree finisher.

SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014) mixes keys built from a seed, a tree index and the path from
the root (``gpu_tree.growing.random_draws`` describes the keys). Every operation wraps
modulo 2**64.
"""

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: SplitMix64's increment
MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
MIX_2 = np.uint64(0x94D049BB133111EB)
# Salts that keep the streams of different kinds of draw apart for one node.
FEATURE_SALT = np.uint64(0x5851F42D4C957F2D)
THRESHOLD_SALT = np.uint64(0x2545F4914F6CDD1D)
SHIFT_30 = np.uint64(30)
SHIFT_27 = np.uint64(27)
SHIFT_31 = np.uint64(31)
ONE = np.uint64(1)
# A draw as a float in [0, 1): its top 53 bits (a float64's precision) times 2**-53.
UNIT_SHIFT = np.uint64(11)
UNIT_SCALE = 2.0**-53


def unit_interval(bits):
    """A draw (uint64, or an array of them) as a float64 in [0, 1), uniformly on the
    multiples of 2**-53: plain Python that numpy runs on arrays and numba compiles."""
    return (bits >> UNIT_SHIFT) * UNIT_SCALE


def make_random_keys(compile_function):
    """The generator's functions compiled by ``compile_function`` (``numba.njit(...)``
    or ``numba.cuda.jit(device=True)``), each calling the others' compiled versions:
    (mix64, root_key, child_key, draw_score). ``compile_function`` the identity: plain
    Python, for reading."""

    @compile_function
    def mix64(x):
        """SplitMix64's finaliser: a bijection of uint64 whose outputs look independent
        for consecutive inputs."""
        x = (x ^ (x >> SHIFT_30)) * MIX_1
        x = (x ^ (x >> SHIFT_27)) * MIX_2
        return x ^ (x >> SHIFT_31)

    @compile_function
    def counter(value):
        """A small non-negative integer as a well-spread uint64: (value + 1) * golden."""
        return (np.uint64(value) + ONE) * GOLDEN

    @compile_function
    def root_key(seed, tree):
        """The key of the root of tree ``tree`` (its index in the forest) under ``seed``."""
        return mix64(mix64(np.uint64(seed)) ^ counter(tree))

    @compile_function
    def child_key(parent_key, branch):
        """The key of a node's child: 0 left, 1 right, k a multiway node's k-th child."""
        return mix64(parent_key ^ mix64(counter(branch)))

    @compile_function
    def draw_score(key, feature, salt):
        """Node ``key``'s draw for ``feature`` in the stream ``salt``."""
        return mix64(key ^ mix64(counter(feature) ^ salt))

    return mix64, root_key, child_key, draw_score
