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

The subtree finisher draws the same split from a node's rows, without its histogram
(:func:`make_random_split`'s ``random_split_of_rows``): two passes over the rows, where
building the feature's compact histogram and walking its present bins cost several.

:mod:`gpu_tree.kernels.cpu` compiles these with ``numba.njit`` (inlined,
:func:`make_random_split`); they read only their arguments.
"""

import math


def draw_threshold(first_lower, first_upper, last_lower, last_upper, uniform):
    """The threshold drawn by ``uniform`` in [0, 1) between a node's lowest and highest
    value, as far as its first and last present bins (their lowest and highest values)
    tell. A quantile-binned feature's outer bins are open (lowest bound -inf, highest
    +inf: bin edges, not values): there the bin's inner edge stands for the node's
    extreme value. Drawing between infinite bounds gave a NaN or infinite threshold,
    hence a split after the first present bin (or before the last) at every node holding
    an outer bin."""
    low = first_lower
    if low == -math.inf:
        low = first_upper
    high = last_upper
    if high == math.inf:
        high = last_lower
    return low + uniform * (high - low)


def make_random_split(device_function):
    """``(random_split_of_feature, random_split_of_rows)``, compiled by
    ``device_function`` (``draw_threshold`` with them)."""
    threshold_between = device_function(draw_threshold)

    @device_function
    def random_split_of_feature(
        hist,
        slot,
        f,
        n_bins,
        missing_bin,
        codes,
        lower,
        upper,
        uniform,
        out_hist,
        out_code,
        out_bounds,
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
        threshold = threshold_between(lower[first], upper[first], lower[last], upper[last], uniform)
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

    @device_function
    def random_split_of_rows(
        rows,
        codes,
        stats,
        f,
        start,
        end,
        use_missing,
        missing_code,
        lower,
        upper,
        uniform,
        out_missing,
        out_hist,
        out_code,
    ):
        """:func:`random_split_of_feature`'s split of feature ``f`` in the node of rows
        ``rows[start:end]`` (in any order), from the rows themselves: the same
        ``out_hist`` and ``out_code`` as that of the node's compact histogram (its present
        codes in order). ``codes`` (features, rows): the rows' codes, ``missing_code``
        the missing values' where ``use_missing``; ``stats`` (rows, channels); ``lower``
        and ``upper``: the feature's lowest and highest value by code. Also writes
        ``out_missing`` (channels): the missing rows' statistics.

        Pass 1 finds the lowest and highest present code, which bound the draw. The
        present codes' highest values increase with the code, so the codes the split
        sends left (the lowest, and every other but the highest at or below the
        threshold) are a prefix of them: pass 2 sums each row into its side by its own
        code, and takes the split code (the highest code of the left side) and the one
        after it (the lowest of the right side) on the way.

        Returns the feature's filled bins as the histogram's count them, present codes
        counted up to 2, plus 1 where missing rows are: above 1, the feature is not
        constant in the node."""
        n_channels = stats.shape[1]
        for c in range(n_channels):
            out_missing[c] = 0
            out_hist[0, c] = 0
            out_hist[1, c] = 0
        first = -1
        last = -1
        has_missing = False
        for j in range(start, end):
            i = rows[j]
            code = codes[f, i]
            if use_missing and code == missing_code:
                has_missing = True
                for c in range(n_channels):
                    out_missing[c] += stats[i, c]
            elif first < 0:
                first = code
                last = code
            elif code < first:
                first = code
            elif code > last:
                last = code
        out_code[2] = -1
        if first < 0:  # no present value: no candidate
            return 1 if has_missing else 0
        threshold = threshold_between(lower[first], upper[first], lower[last], upper[last], uniform)
        split = first
        following = -1
        for j in range(start, end):
            i = rows[j]
            code = codes[f, i]
            if use_missing and code == missing_code:
                continue
            if code == first or (code != last and upper[code] <= threshold):
                split = max(split, code)
                side = 0
            else:
                if following < 0 or code < following:
                    following = code
                side = 1
            for c in range(n_channels):
                out_hist[side, c] += stats[i, c]
        out_code[0] = split
        out_code[1] = last
        if following >= 0:
            out_code[2] = following
        return (1 if first == last else 2) + (1 if has_missing else 0)

    return random_split_of_feature, random_split_of_rows
