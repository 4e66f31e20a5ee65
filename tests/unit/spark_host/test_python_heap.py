"""A reused Python worker freezes what it holds at the start of its first tasks only."""

from __future__ import annotations

import gc
import importlib

from streamsift.spark_host import python_heap


def test_the_first_tasks_freeze_what_the_worker_holds_and_later_ones_do_not():
    heap = importlib.reload(python_heap)  # a fresh worker: no task seen yet
    try:
        held = []
        for _ in range(heap.FREEZES):
            held.append([[i] for i in range(1_000)])  # e.g. modules the task imported
            before = gc.get_freeze_count()
            heap.freeze_heap()
            assert gc.get_freeze_count() >= before + 1_000
        held.append([[i] for i in range(1_000)])  # a later task's objects stay collectable
        before = gc.get_freeze_count()
        heap.freeze_heap()
        assert gc.get_freeze_count() < before + 1_000  # (frozen ones may have been freed)
    finally:
        gc.unfreeze()
        importlib.reload(python_heap)
