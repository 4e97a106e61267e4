"""The shared thread pool (gpu_tree.utils.threads): small work stays in the calling thread,
large work is handed out, results keep their order, and a forked child gets a pool of its
own (the parent's threads do not run there)."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from gpu_tree.utils import threads


def _where(item):
    return item, threading.current_thread().name


def test_small_work_runs_in_the_calling_thread_in_order():
    results = threads.parallel_map(_where, range(8), threads.PARALLEL_MIN_ELEMENTS - 1)
    assert [item for item, _ in results] == list(range(8))
    assert {name for _, name in results} == {threading.current_thread().name}


@pytest.mark.skipif(threads.CPU_THREADS < 2, reason="one core: everything runs serially")
def test_large_work_goes_to_the_shared_pool_in_order():
    results = threads.parallel_map(_where, range(8), threads.PARALLEL_MIN_ELEMENTS)
    assert [item for item, _ in results] == list(range(8))
    assert all(name.startswith("gpu_tree") for _, name in results)
    again = threads.parallel_map(_where, range(8), threads.PARALLEL_MIN_ELEMENTS)
    # One pool for every call: its threads are reused, not started per call.
    assert {name for _, name in again} <= {f"gpu_tree_{k}" for k in range(threads.CPU_THREADS)}


def _child_map(queue):
    results = threads.parallel_map(_where, range(4), threads.PARALLEL_MIN_ELEMENTS)
    queue.put([item for item, _ in results])


@pytest.mark.skipif(threads.CPU_THREADS < 2, reason="one core: everything runs serially")
def test_a_forked_child_builds_a_pool_of_its_own():
    threads.parallel_map(_where, range(4), threads.PARALLEL_MIN_ELEMENTS)  # the parent's pool
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_map, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=60) == [0, 1, 2, 3]
    finally:
        child.join(timeout=60)
    assert child.exitcode == 0
