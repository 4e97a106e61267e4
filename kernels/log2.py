"""log2 of a positive double, computed by the same arithmetic on every device: the
entropy criteria's logarithm.

The CPU's ``log2`` (glibc's, and NumPy's own) and a GPU's (libdevice's) are different
programs. libdevice's differed from glibc's in the last bit on 22 % of 8.4 million
values on an H200, ``log2(8)`` among them (2.9999999999999996, not 3): an information
gain that is exactly 1 bit fell below ``min_impurity_decrease=1.0`` and a best-first
tree took another leaf (bench/RESULTS.md). This one is written in additions,
subtractions, products that are never fused into an addition (``product``), a
``frexp`` and a table, each of which IEEE 754 rounds the same way everywhere, so the CPU
kernels, the CUDA kernels, the simulator and the vectorised reference
(:func:`log2_of_array`) give the same bits for every input.

It is nearly correctly rounded: the sum below carries about 70 bits before its last
rounding, so a result differs from the correctly rounded one only when the true value
lies within about 2**-17 units in the last place of a rounding boundary (none of a
million integers and a million uniform draws; tests/kernels/test_log2.py). Powers of two
give their exponent exactly.

The method (Tang's table-driven logarithm, in double-double arithmetic):
x = m * 2**e with m in [1, 2); c = 1 + i/128, the table's centre at or below m (m's
first 7 bits after the point); u = (m - c) / c in [0, 2**-7), as a double-double
(Dekker's exact products: c has 8 significant bits). Then

    log2(x) = e + log2(c) + ln(1 + u) / ln(2),
    ln(1 + u) = u - u**2/2 + u**3 (1/3 - u/4 + ... + u**8/11),

log2(c) from the table as a double-double (computed once, to 60 digits, by
:mod:`decimal`), the two leading terms of the series in double-double, the rest in
double (each below 2**-21 of the result), and 1/ln(2) as a double-double.

Zero, negative, infinite and NaN arguments get the platform's answers (-inf, NaN, inf,
NaN); the criteria never pass them (0 log 0 = 0 is theirs to handle).
"""

import functools
import math
from decimal import Decimal, localcontext

import numpy as np

TABLE_BITS = 7
TABLE_SIZE = 1 << TABLE_BITS
# Veltkamp's splitting constant for doubles: 2**27 + 1.
SPLITTER = 134217729.0


def _tables():
    """Each centre c = 1 + i/128, 1/c rounded, and log2(c) as a double-double."""
    with localcontext() as context:
        context.prec = 60
        ln2 = Decimal(2).ln()
        centres = [1 + Decimal(i) / TABLE_SIZE for i in range(TABLE_SIZE)]
        logs = [c.ln() / ln2 for c in centres]
        high = [float(v) for v in logs]
        low = [float(v - Decimal(h)) for v, h in zip(logs, high, strict=True)]
        inverse_ln2 = 1 / ln2
        inverse_ln2_high = float(inverse_ln2)
        inverse_ln2_low = float(inverse_ln2 - Decimal(inverse_ln2_high))
    centre_values = np.array([float(c) for c in centres])
    return (
        centre_values,
        1.0 / centre_values,
        np.array(high),
        np.array(low),
        inverse_ln2_high,
        inverse_ln2_low,
    )


CENTRES, INVERSES, LOG2_HIGH, LOG2_LOW, INVERSE_LN2_HIGH, INVERSE_LN2_LOW = _tables()
# 1/ln(2)'s high part, split into halves of 26 bits (Dekker's product by a constant).
INVERSE_LN2_HIGH_TOP = float(np.float64(SPLITTER * INVERSE_LN2_HIGH)) - float(
    np.float64(SPLITTER * INVERSE_LN2_HIGH) - INVERSE_LN2_HIGH
)
INVERSE_LN2_HIGH_REST = INVERSE_LN2_HIGH - INVERSE_LN2_HIGH_TOP
# ln(1 + u)'s terms from u**3 on: (-1)**(k+1) / k, k = 3..11, rounded.
SERIES = tuple(float((-1) ** (k + 1) / Decimal(k)) for k in range(3, 12))
S3, S4, S5, S6, S7, S8, S9, S10, S11 = SERIES


def make_log2_of_parts(compile_function, product):
    """log2(x) from x's parts: ``(m, e, c, 1/c, log2(c) high, log2(c) low)`` with
    x = m 2**e, m in [1, 2), c the table's centre for m (:func:`make_log2` finds them).
    Compiled by ``compile_function`` (``njit``, ``cuda.jit(device=True)``, or nothing:
    then it takes NumPy or CuPy arrays as well as numbers)."""

    @compile_function
    def split(a):
        """a = top + rest, each of at most 26 significant bits (Veltkamp)."""
        t = product(SPLITTER, a)
        top = t - (t - a)
        return top, a - top

    @compile_function
    def two_sum(a, b):
        """a + b = s + error exactly (Knuth)."""
        s = a + b
        b_part = s - a
        return s, (a - (s - b_part)) + (b - b_part)

    @compile_function
    def log2_of_parts(m, exponent, centre, inverse, log2_high, log2_low):
        d = m - centre  # exact: both lie in [1, 2) and share the leading bits
        u = product(d, inverse)
        u_top, u_rest = split(u)
        # d - u c, exactly (c has 8 significant bits, so u_top c and u_rest c are exact).
        remainder = (d - product(u_top, centre)) - product(u_rest, centre)
        u_low = product(remainder, inverse)
        # u**2 as a double-double (Dekker's product of u by itself).
        square = product(u, u)
        square_low = (
            ((product(u_top, u_top) - square) + product(2.0 * u_top, u_rest))
            + product(u_rest, u_rest)
        ) + product(2.0 * u, u_low)
        tail = S11
        tail = product(tail, u) + S10
        tail = product(tail, u) + S9
        tail = product(tail, u) + S8
        tail = product(tail, u) + S7
        tail = product(tail, u) + S6
        tail = product(tail, u) + S5
        tail = product(tail, u) + S4
        tail = product(tail, u) + S3
        tail = product(tail, product(square, u))
        # ln(1 + u) = u - u**2/2 + tail, as high + low.
        ln_high, ln_low = two_sum(u, product(-0.5, square))
        ln_low = ln_low + ((u_low - product(0.5, square_low)) + tail)
        ln_sum = ln_high + ln_low
        ln_low = ln_low - (ln_sum - ln_high)
        ln_high = ln_sum
        # times 1/ln(2), as high + low (Dekker's product by the split constant).
        top, rest = split(ln_high)
        scaled = product(ln_high, INVERSE_LN2_HIGH)
        scaled_low = (
            (
                (product(top, INVERSE_LN2_HIGH_TOP) - scaled)
                + product(top, INVERSE_LN2_HIGH_REST)
                + product(rest, INVERSE_LN2_HIGH_TOP)
            )
            + product(rest, INVERSE_LN2_HIGH_REST)
        ) + (product(ln_high, INVERSE_LN2_LOW) + product(ln_low, INVERSE_LN2_HIGH))
        # e + log2(c) + the scaled series, summed from the small end's errors up.
        fraction, fraction_low = two_sum(log2_high, scaled)
        fraction_low = fraction_low + (log2_low + scaled_low)
        total, total_low = two_sum(exponent, fraction)
        return total + (total_low + fraction_low)

    return log2_of_parts


def make_log2(device_function, product, integer_table_size=0):
    """The compiled ``log2(x)`` for one device: ``device_function`` compiles (``njit`` or
    ``cuda.jit(device=True)``), ``product`` multiplies without fusing (as in
    kernels/_split_scan.py).

    ``integer_table_size``: the integers below it read their log2 from a table that this
    same arithmetic filled (the same bits), where the rest compute it: the CPU's cheap
    path for unweighted class counts, which are integers (the computation costs about
    four times glibc's log2; a GPU has the arithmetic to spare, and a table in its
    constant memory would serialise a warp's lanes)."""
    log2_of_parts = make_log2_of_parts(device_function, product)
    centres, inverses, highs, lows = CENTRES, INVERSES, LOG2_HIGH, LOG2_LOW
    table_size = int(integer_table_size)
    integers = _computed_log2(np.arange(1, max(table_size, 2), dtype=np.float64), np)
    integer_logs = np.concatenate(([-np.inf], integers))

    @device_function
    def log2(x):
        if 0.0 <= x < table_size and x == math.floor(x):
            return integer_logs[int(x)]
        if not (x > 0.0 and x < math.inf):  # the platform's answers, without its code
            if x == 0.0:
                return -math.inf
            return math.inf if x == math.inf else math.nan
        fraction, exponent = math.frexp(x)
        m = fraction + fraction
        i = int((m - 1.0) * TABLE_SIZE)
        return log2_of_parts(m, float(exponent - 1), centres[i], inverses[i], highs[i], lows[i])

    return log2


def _plain_product(a, b):
    return a * b


_LOG2_OF_ARRAY_PARTS = make_log2_of_parts(lambda function: function, _plain_product)
# The vectorised search's counts (unweighted: integers) below this many read their log2
# from a table: computed, each costs some 50 array operations, and an exact-mode entropy
# fit took 4 times as long as with the platform's log2.
ARRAY_INTEGER_TABLE_SIZE = 1 << 16


def _computed_log2(x, xp):
    fraction, exponent = xp.frexp(x)
    m = fraction + fraction
    i = ((m - 1.0) * TABLE_SIZE).astype(np.int64)
    tables = [xp.asarray(table)[i] for table in (CENTRES, INVERSES, LOG2_HIGH, LOG2_LOW)]
    return _LOG2_OF_ARRAY_PARTS(m, (exponent - 1).astype(np.float64), *tables)


@functools.cache
def _integer_logs(xp):
    """log2 of 0 (-inf, never read), 1, ..., ARRAY_INTEGER_TABLE_SIZE - 1, on xp's device."""
    integers = np.arange(1, ARRAY_INTEGER_TABLE_SIZE, dtype=np.float64)
    return xp.asarray(np.concatenate(([-np.inf], _computed_log2(integers, np))))


def log2_of_array(x, xp=np):
    """:func:`make_log2`'s log2, elementwise, on a NumPy or CuPy array (the vectorised
    split search's; the same bits as the kernels')."""
    x = xp.asarray(x, dtype=np.float64)
    small_integer = (x >= 0.0) & (x < ARRAY_INTEGER_TABLE_SIZE) & (x == xp.floor(x))
    if bool(small_integer.all()):
        return _integer_logs(xp)[x.astype(np.int64)]
    out = xp.empty_like(x)
    out[small_integer] = _integer_logs(xp)[x[small_integer].astype(np.int64)]
    computed = ~small_integer & (x > 0.0) & (x < np.inf)
    out[computed] = _computed_log2(x[computed], xp)
    # 0, negative, infinite and NaN values: the platform's answers (-inf, NaN, inf, NaN).
    outside = ~small_integer & ~computed
    out[outside] = xp.log2(x[outside])
    return out
