"""Software prefetch for the compiled CPU kernels: a hint that an array element will be
read soon, so that its cache line is on its way while the loop works on earlier rows.

The histogram and partition kernels read each row of a node through its index
(``X_binned[f, sample_indices[j]]``): below the first few levels a node's rows lie far
apart, every row is a cache miss, and a loop that waits for each miss in turn is bound by
memory latency rather than bandwidth. Asking for the row a few iterations ahead keeps
several misses in flight: 3x faster histograms of 4.4 million rows scattered over 1,591
nodes (bench/RESULTS.md). numba has no prefetch of its own; these intrinsics
emit LLVM's ``llvm.prefetch`` (read, high locality, data cache), which compiles to
nothing on a target without one and never faults; the kernels ask only for rows they
will read.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import python_mode

# How many rows ahead the kernels ask for: enough to cover a memory latency at a few
# nanoseconds per row, few enough that the lines are still cached when read.
ROWS_AHEAD = 24


def _emit_prefetch(context, builder, signature, args):
    array_type = signature.args[0]
    array = context.make_array(array_type)(context, builder, args[0])
    indices = [
        context.cast(builder, value, value_type, types.intp)
        for value, value_type in zip(args[1:], signature.args[1:], strict=True)
    ]
    pointer = cgutils.get_item_pointer(context, builder, array_type, array, indices)
    byte_pointer = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    function_type = ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32])
    function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0i8")
    # (address, read = 0, locality 3 = keep in every cache level, data cache = 1)
    builder.call(function, [builder.bitcast(pointer, byte_pointer), i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


@intrinsic
def prefetch_item(typingctx, array, index):
    """Hint that ``array[index]`` (1-D) will be read soon."""
    return types.void(array, index), _emit_prefetch


@intrinsic
def prefetch_item_2d(typingctx, array, row, column):
    """Hint that ``array[row, column]`` (2-D) will be read soon."""
    return types.void(array, row, column), _emit_prefetch


def _no_prefetch(*args):
    """The prefetches run as Python (kernels/python_mode.py): a hint, with nothing to do."""


python_mode.python_equivalent(prefetch_item, _no_prefetch)
python_mode.python_equivalent(prefetch_item_2d, _no_prefetch)
