"""The entropy criteria's log2 (kernels/log2.py): the same bits compiled for the CPU,
for CUDA and on arrays, nearly correctly rounded, exact on powers of two."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from numba import njit

from gpu_tree.kernels.cuda.api import cuda
from gpu_tree.kernels.cuda.split_scan import _product
from gpu_tree.kernels.log2 import log2_of_array, make_log2

RNG = np.random.default_rng(20261128)
VALUES = {
    "integers": np.arange(1, 1 << 16, dtype=np.float64),
    "fractions": RNG.uniform(0.0, 1.0, 1 << 15),
    "wide": np.exp(RNG.uniform(-700.0, 700.0, 1 << 15)),
    "near one": 1.0 + RNG.uniform(-1e-3, 1e-3, 1 << 15),
    "subnormal": RNG.uniform(0.0, 2.0**-1022, 1 << 10),
    "powers of two": np.ldexp(1.0, np.arange(-1074, 1024)),
}

compiled = njit(inline="always")
plain_log2 = make_log2(compiled, compiled(lambda a, b: a * b))
table_log2 = make_log2(compiled, compiled(lambda a, b: a * b), integer_table_size=4096)


@njit
def _each(values, out, use_table):
    for i in range(values.size):
        out[i] = table_log2(values[i]) if use_table else plain_log2(values[i])


def each_compiled(values, use_table=False):
    out = np.empty_like(values)
    _each(values, out, use_table)
    return out


def correctly_rounded(value: float) -> float:
    with localcontext() as context:
        context.prec = 60
        return float(Decimal(value).ln() / Decimal(2).ln())


@pytest.mark.parametrize("name", VALUES)
def test_compiled_and_array_give_the_same_bits(name):
    values = VALUES[name]
    on_arrays = log2_of_array(values)
    np.testing.assert_array_equal(each_compiled(values), on_arrays)
    np.testing.assert_array_equal(each_compiled(values, use_table=True), on_arrays)


def test_the_integer_table_holds_the_computed_values():
    integers = np.arange(1, 5000, dtype=np.float64)  # past the table's 4096 too
    np.testing.assert_array_equal(
        each_compiled(integers, use_table=True), each_compiled(integers, use_table=False)
    )


def test_powers_of_two_give_their_exponent():
    exponents = np.arange(-1074, 1024)
    np.testing.assert_array_equal(log2_of_array(np.ldexp(1.0, exponents)), exponents)
    # The information gain of one perfect split of 8 rows: 1 bit exactly (libdevice's
    # log2(8) was 2.9999999999999996 on an H200).
    assert each_compiled(np.array([8.0]))[0] == 3.0


@pytest.mark.parametrize("name", ["integers", "fractions", "wide", "subnormal"])
def test_correctly_rounded_on_samples(name):
    values = VALUES[name]
    sample = values[:2000] if name == "integers" else values[:: max(1, values.size // 2000)]
    expected = np.array([correctly_rounded(v) for v in sample])
    np.testing.assert_array_equal(log2_of_array(sample), expected)


def test_within_one_unit_in_the_last_place_near_one():
    # The results are tiny here (about 1e-3 and below): the last rounding's 70 bits
    # are fewest relative to them, and one value in about 20,000 rounds the other way.
    sample = VALUES["near one"][:3000]
    expected = np.array([correctly_rounded(v) for v in sample])
    got = log2_of_array(sample)
    assert np.all(np.abs(got - expected) <= np.spacing(np.abs(expected)))
    assert np.count_nonzero(got != expected) <= 3


# Module globals: the simulator runs a kernel with a stand-in for the module its
# globals name ``cuda``.
device_log2 = make_log2(cuda.jit(device=True), _product)


def _each_on_device(values, out):
    i = cuda.grid(1)
    if i < values.size:
        out[i] = device_log2(values[i])


def test_cuda_gives_the_cpus_bits():
    each_on_device = cuda.jit(_each_on_device)
    values = np.concatenate(
        [VALUES["integers"][:300], VALUES["fractions"][:300], VALUES["powers of two"][::40]]
    )
    out = np.zeros_like(values)
    each_on_device[(values.size + 127) // 128, 128](values, out)
    np.testing.assert_array_equal(out, log2_of_array(values))


def test_the_glibc_log2_rounds_some_integers_differently():
    # Why the kernels carry their own log2: the platform's is not correctly rounded
    # everywhere (nor the same on every device), and a table of it would not be either.
    integers = VALUES["integers"]
    ours = log2_of_array(integers)
    platform = np.array([math.log2(v) for v in integers])
    differ = np.flatnonzero(ours != platform)
    assert differ.size < 50  # a few dozen of 65,535 on glibc 2.3x
    assert np.all(np.abs(ours[differ] - platform[differ]) <= np.spacing(ours[differ]))


def test_zero_negative_infinite_and_nan_get_the_platforms_answers():
    special = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 5.0, 0.3])
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.concatenate([np.log2(special[:6]), log2_of_array(special[6:])])
        np.testing.assert_array_equal(log2_of_array(special), expected)
        np.testing.assert_array_equal(each_compiled(special), expected)
        np.testing.assert_array_equal(each_compiled(special, use_table=True), expected)
