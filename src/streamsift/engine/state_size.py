"""How big a pipeline's state is, for its status: the dedup RocksDB it keeps beside the
checkpoint (bytes on disk, summed over partitions) and Spark's state stores (the join's, or
the latest-join's: rows and memory, from the last progress report). Many pipelines share one
host, so each one's state is reported on its own (docs/operations.md, "The pipeline host")."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from streamsift.transforms.dedup.layout import local_partition_dirs

RESCAN_S = 30.0  # the dedup directories are walked at most this often (once they exist)


class StateSize:
    """The state figures of one checkpoint; the disk walk is cached for RESCAN_S."""

    def __init__(self, checkpoint: Path) -> None:
        self.checkpoint = checkpoint
        self._dedup_bytes: int | None = None
        self._scanned_at = -RESCAN_S

    def report(self, progress: dict[str, Any] | None) -> dict[str, int | None]:
        operators = (progress or {}).get("stateOperators") or []
        return {
            "dedup_disk_bytes": self._dedup(),
            "spark_state_rows": sum(int(op.get("numRowsTotal") or 0) for op in operators),
            "spark_state_memory_bytes": sum(
                int(op.get("memoryUsedBytes") or 0) for op in operators
            ),
        }

    def _dedup(self) -> int | None:
        now = time.monotonic()
        if self._dedup_bytes is None or now - self._scanned_at >= RESCAN_S:  # none yet: cheap
            self._scanned_at = now
            self._dedup_bytes = _bytes_under(local_partition_dirs(self.checkpoint))
        return self._dedup_bytes


def _bytes_under(directories: list[Path]) -> int | None:
    """Bytes of the files under `directories` (None when there are none: no local dedup)."""
    if not directories:
        return None
    total = 0
    for directory in directories:
        for path in directory.rglob("*"):
            try:
                if path.is_file():
                    total += path.stat().st_size
            except OSError:  # a file RocksDB removed meanwhile
                continue
    return total
