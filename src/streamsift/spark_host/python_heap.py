"""Keep Spark's per-task garbage collection in a reused Python worker from rescanning its modules.

PySpark's daemon runs `gc.collect()` after every task of a reused worker. A full collection
walks every container object the process holds, and most of those are there for good: the
modules of pyspark, pyarrow, confluent-kafka, pydantic and streamsift, the pipeline's
settings. A live pipeline runs a few tasks a second, each paying for them again (measured in
docs/benchmarks.md, round three). `freeze_heap` moves what the worker holds when its first
task starts into the permanent generation (`gc.freeze`), which later collections skip; objects
made after it are collected as before, and frozen ones are still freed when their last
reference goes (only cycles among them wait). The first task imports the data path lazily
(the processor, the parser, RocksDB, pyarrow.compute: ~29,000 objects), so the next tasks
freeze again, after the daemon's collection has taken the first task's garbage (measured in
docs/benchmarks.md, round six).
"""

from __future__ import annotations

import gc

FREEZES = 3  # tasks whose start freezes what the worker holds
_freezes = 0


def freeze_heap() -> None:
    """Freeze this process's objects at the start of its first `FREEZES` tasks."""
    global _freezes
    if _freezes < FREEZES:
        gc.freeze()
        _freezes += 1
