"""Keep Spark's per-task garbage collection in a reused Python worker from rescanning its modules.

PySpark's daemon runs `gc.collect()` after every task of a reused worker. A full collection
walks every container object the process holds, and most of those are there for good: the
modules of pyspark, pyarrow, confluent-kafka, pydantic and streamsift, the pipeline's
settings. A live pipeline runs a few tasks a second, each paying for them again (measured in
docs/benchmarks.md, round three). `freeze_once` moves what the worker holds when its first
task starts into the permanent generation (`gc.freeze`), which later collections skip; objects
made after it are collected as before, and frozen ones are still freed when their last
reference goes (only cycles among them wait).
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_once() -> None:
    """Freeze this process's objects the first time it is called (then do nothing)."""
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True
