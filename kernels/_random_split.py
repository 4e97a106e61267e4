"""Extremely randomised trees' split of one feature in one node, written once for the
level-wise search (``kernels.cpu.histograms.random_split_histograms``) and the compiled subtree
finisher (``kernels/cpu/subtrees.py``), so that both draw the same split.

Geurts, Ernst and Wehenkel, "Extremely randomized trees" (Machine Learning 63, 2006): the
node draws one threshold uniformly between its lowest and highest value of the feature.
In histogram mode the split follows the last present bin whose highest value lies at or
below the threshold (at least the first present bin, at most the one before the last),
and the feature's histogram collapses to two bins: the present bins up to the split, and
the rest. The split search then scores that two-bin histogram as any other, missing
values on either side.

:mod:`gpu_tree.kernels.cpu` compiles :func:`random_split_of_feature` with ``numba.njit``
(inlined); it reads only its arguments.
"""

import math


def random_split_of_feature(
    hist, slot, f, n_bins, missing_bin, codes, lower, upper, uniform, out_hist, out_code, out_bounds
):
    """Collapse bins ``0 .. n_bins - 1`` of feature ``f`` of histogram slot ``slot``
    (``hist`` (slots, features, bins, channels); bin ``missing_bin`` skipped, -1: none)
    to the random split drawn by ``uniform`` in [0, 1).

    ``codes``, ``lower``, ``upper``: each bin's code, lowest and highest value (1-D, by
    bin; a quantile-binned feature's edges, -inf below its first bin and +inf above its
    last, where the inner edge bounds the draw). Writes ``out_hist`` (2, channels): the
    present bins up to the split, then the rest (zeroed here); ``out_code`` (3,): the
    split bin's code, the last present bin's (a split after bin 1 sends every present
    value left) and the code of the present bin after the split (-1: none);
    ``out_bounds`` (4,): the lowest value of the first present bin, the highest of the
    split bin, the lowest of the bin after it and the highest of the last. A feature
    with fewer than two present bins gets every row in bin 0 (no candidate but, with
    missing values, every present value against them).
    Returns whether the feature has a present bin (else only ``out_hist`` is written).
    """
    n_channels = hist.shape[3]
    for side in range(2):
        for c in range(n_channels):
            out_hist[side, c] = 0
    first = -1
    last = -1
    for b in range(n_bins):
        if b == missing_bin:
            continue
        for c in range(n_channels):
            if hist[slot, f, b, c] != 0:
                if first < 0:
                    first = b
                last = b
                break
    out_code[2] = -1
    if first < 0:  # no present value: no candidate
        return False
    # The node's lowest and highest value, as far as its bins tell. A quantile-binned
    # feature's outer bins are open (lowest bound -inf, highest +inf: bin edges, not
    # values): there the bin's inner edge stands for the node's extreme value. Drawing
    # between infinite bounds gave a NaN or infinite threshold, hence a split after the
    # first present bin (or before the last) at every node holding an outer bin.
    low = lower[first]
    if low == -math.inf:
        low = upper[first]
    high = upper[last]
    if high == math.inf:
        high = lower[last]
    threshold = low + uniform * (high - low)
    split = first  # the last present bin at or below the threshold
    following = -1  # the present bin after it
    for b in range(first, last + 1):
        if b == missing_bin:
            continue
        present = False
        for c in range(n_channels):
            if hist[slot, f, b, c] != 0:
                present = True
                break
        if not present:
            continue
        if b != first and upper[b] <= threshold and b != last:
            split = b
        elif b > split and following < 0:
            following = b
        side = 0 if b <= split else 1
        for c in range(n_channels):
            out_hist[side, c] += hist[slot, f, b, c]
    out_code[0] = codes[split]
    out_code[1] = codes[last]
    out_bounds[0] = lower[first]
    out_bounds[1] = upper[split]
    out_bounds[3] = upper[last]
    if following >= 0:
        out_code[2] = codes[following]
        out_bounds[2] = lower[following]
    return True
