"""Repairs to a Spark checkpoint that a crash can leave behind.

Spark writes each entry of its offset and commit logs under a hidden temporary name
(`.N.<uuid>.tmp`, with a `..N.<uuid>.tmp.crc` beside it) and renames it when complete, so
such a file is never an entry. A kill -9 between the two leaves it there; if that happens on
the very first batch, the offsets directory holds no entry but is not empty, and Spark then
refuses every restart (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). One process owns a
checkpoint at a time, so at start-up these files are leftovers and can go.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

SPARK_LOGS = ("offsets", "commits")
log = logging.getLogger("streamsift.engine")


def is_interrupted_write(path: Path) -> bool:
    name = path.name
    return name.startswith(".") and name.endswith((".tmp", ".tmp.crc"))


def clear_interrupted_writes(spark_checkpoint: Path) -> list[Path]:
    """Remove the temporary files of log entries whose write a crash cut short."""
    removed = []
    for name in SPARK_LOGS:
        directory = spark_checkpoint / name
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            if is_interrupted_write(path):
                path.unlink()
                removed.append(path)
    if removed:
        log.warning(
            "removed %d file(s) of log entries a crash cut short in %s",
            len(removed),
            spark_checkpoint,
        )
    return removed


def has_batches(spark_checkpoint: Path) -> bool:
    """Whether Spark's offset log holds at least one planned micro-batch."""
    offsets = spark_checkpoint / "offsets"
    return offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())


def latest_join_by_key(spark_checkpoint: Path) -> bool:
    """Whether a `join.mode: latest` on this checkpoint must group its rows by key: the
    checkpoint has run a query but holds no state kept in buckets of keys
    (transforms/join/latest_buckets.py, state `latest_buckets`), so a latest join there was
    written grouped by key, by a streamsift from before buckets, and keeps that layout (Spark
    refuses state whose grouping changed). Spark records each stateful operator's state
    names in `state/<operator>/_stateSchema/`."""
    return has_batches(spark_checkpoint) and not _state_names_hold(
        spark_checkpoint, b"latest_buckets"
    )


def latest_join_in_spark(spark_checkpoint: Path) -> bool:
    """Whether the checkpoint holds a `join.mode: latest` state kept by Spark's
    `transformWithState` (transforms/join/latest.py, by key or in buckets), as streamsift
    wrote it before it kept that state itself: such a checkpoint keeps that join."""
    return has_batches(spark_checkpoint) and _state_names_hold(spark_checkpoint, b"latest")


def _state_names_hold(spark_checkpoint: Path, text: bytes) -> bool:
    """Whether a stateful operator's recorded state schema mentions `text` (Spark records
    each operator's state names in `state/<operator>/_stateSchema/`)."""
    schemas = (spark_checkpoint / "state").glob("*/_stateSchema/*/*")
    return any(text in p.read_bytes() for p in schemas if p.is_file())


def batch_watermark(spark_checkpoint: Path, batch: int) -> int:
    """The event-time watermark (ms) Spark planned micro-batch `batch` with, from its offset
    log entry (0 when there is none: before the first batch)."""
    try:
        lines = (spark_checkpoint / "offsets" / str(batch)).read_text().splitlines()
    except OSError:
        return 0
    return int(json.loads(lines[1]).get("batchWatermarkMs") or 0) if len(lines) > 1 else 0


def last_committed(spark_checkpoint: Path) -> int | None:
    """The id of the last micro-batch Spark committed; None when none was."""
    commits = spark_checkpoint / "commits"
    done = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    return max(done) if done else None


def committed_ends(spark_checkpoint: Path) -> dict[str, int]:
    """The end offsets (`{"topic/partition": offset}`, every source) of the last micro-batch
    Spark committed; empty when none was."""
    batch = last_committed(spark_checkpoint)
    return {} if batch is None else batch_ends(spark_checkpoint, batch) or {}


def batch_ends(spark_checkpoint: Path, batch: int) -> dict[str, int] | None:
    """The end offsets of micro-batch `batch` as Spark planned it (every source), None when
    its offset-log entry is not there. An entry is `v1`, the batch's metadata, then one JSON
    line per source."""
    try:
        lines = (spark_checkpoint / "offsets" / str(batch)).read_text().splitlines()
    except OSError:
        return None
    ends: dict[str, int] = {}
    for line in lines[2:]:
        value = json.loads(line)
        if isinstance(value, dict):
            ends.update({k: int(v) for k, v in value.items()})
    return ends
