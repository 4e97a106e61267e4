"""kernels/_random_split.py: extremely randomised trees' split drawn from a node's rows
equals the split of the compact histogram those rows make (the level-wise path's)."""

import math

import numpy as np
import pytest
from numba import njit

from gpu_tree.kernels import _random_split

random_split_of_feature, random_split_of_rows = _random_split.make_random_split(njit)


def _compact_histogram(rows, codes, stats, f, use_missing, missing_code):
    """The node's compact histogram of feature f (present codes in order) and its missing
    rows' statistics: what the finisher built before drawing the split."""
    node_codes = codes[f, rows]
    present = ~((node_codes == missing_code) & use_missing)
    bin_codes = np.unique(node_codes[present])
    hist = np.zeros((1, 1, max(bin_codes.size, 1), stats.shape[1]), dtype=np.int64)
    for p, code in enumerate(bin_codes):
        hist[0, 0, p] = stats[rows[present & (node_codes == code)]].sum(axis=0)
    missing = stats[rows[~present]].sum(axis=0)
    return hist, bin_codes, missing


def _node(rng, n_rows, n_codes, use_missing, missing_code):
    codes = rng.integers(0, n_codes, size=(2, n_rows)).astype(np.int64)
    if use_missing:
        codes[1, rng.random(n_rows) < 0.2] = missing_code
    stats = np.column_stack([rng.integers(0, 3, n_rows), rng.integers(1, 4, n_rows)])
    rows = rng.permutation(n_rows)[: int(rng.integers(1, n_rows + 1))]
    return codes, stats.astype(np.int64), rows


def _bounds(rng, n_bins, open_ends):
    """Each code's lowest and highest value, increasing (quantile bins: open outer ends)."""
    values = np.sort(rng.normal(size=2 * n_bins))
    lower, upper = values[0::2].copy(), values[1::2].copy()
    if open_ends:
        lower[0], upper[-1] = -math.inf, math.inf
    return lower, upper


@pytest.mark.parametrize("seed", range(40))
def test_the_split_of_the_rows_is_the_split_of_their_compact_histogram(seed):
    rng = np.random.default_rng(seed)
    n_codes = int(rng.integers(1, 12))
    use_missing = bool(rng.integers(0, 2))
    missing_code = n_codes  # the last bin
    codes, stats, rows = _node(rng, int(rng.integers(1, 60)), n_codes, use_missing, missing_code)
    lower, upper = _bounds(rng, n_codes + 1, open_ends=bool(rng.integers(0, 2)))
    for f in range(2):
        for uniform in (0.0, rng.random(), 0.999999):
            hist, bin_codes, missing = _compact_histogram(
                rows, codes, stats, f, use_missing, missing_code
            )
            expected_hist = np.zeros((2, 2), dtype=np.int64)
            expected_code = np.full(3, -7, dtype=np.int64)
            present = random_split_of_feature(
                hist,
                0,
                0,
                bin_codes.size,
                -1,
                bin_codes,
                lower[bin_codes] if bin_codes.size else lower,
                upper[bin_codes] if bin_codes.size else upper,
                uniform,
                expected_hist,
                expected_code,
                np.empty(4),
            )
            order = np.concatenate([[-1], rows, [-1]])  # the node: a range of a longer list
            out_missing = np.full(2, -7, dtype=np.int64)
            out_hist = np.full((2, 2), -7, dtype=np.int64)
            out_code = np.full(3, -7, dtype=np.int64)
            filled = random_split_of_rows(
                order,
                codes,
                stats,
                f,
                1,
                1 + rows.size,
                use_missing,
                missing_code,
                lower,
                upper,
                uniform,
                out_missing,
                out_hist,
                out_code,
            )
            np.testing.assert_array_equal(out_missing, missing)
            np.testing.assert_array_equal(out_hist, expected_hist)
            has_missing = bool(np.any(missing != 0))
            assert filled == min(bin_codes.size, 2) + has_missing
            assert (filled > 1) == (bin_codes.size + has_missing > 1)
            if present:
                np.testing.assert_array_equal(out_code, expected_code)
            else:
                assert bin_codes.size == 0 and out_code[2] == -1


def test_the_threshold_is_drawn_between_the_inner_edges_of_open_outer_bins():
    assert _random_split.draw_threshold(-math.inf, 1.0, 3.0, math.inf, 0.5) == 2.0
    assert _random_split.draw_threshold(0.0, 1.0, 3.0, 4.0, 0.25) == 1.0
