"""The driver's side of shared dedup state: where it lives, and a local run's state carried there.

A pipeline that ran locally (dedup state in the checkpoint's RocksDB directories) and now
shares its state (a cluster, or `runtime.state_location` set) uploads each partition's local
state once, as a snapshot at the partition's last committed end offset, so the move lets no
duplicate through. Driver only: executors never import this module.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from streamsift.spark_host.session import is_local_master
from streamsift.transforms.dedup.layout import local_partition_dirs, partition_subpath
from streamsift.transforms.dedup.shared_state import CACHE_KEY, SharedPartitionState, open_db

if TYPE_CHECKING:
    from streamsift.config.models import Pipeline

log = logging.getLogger("streamsift.engine")


def state_location(pipeline: Pipeline, master: str, checkpoint: Path) -> str | None:
    """Where the dedup state is shared from (None: a local run's RocksDB in the checkpoint).

    `runtime.state_location` when set; on a cluster, else the checkpoint's `state` directory,
    which must then be a directory every executor sees (a shared mount)."""
    if pipeline.runtime.state_location:
        return pipeline.runtime.state_location
    if is_local_master(master):
        return None
    return str(checkpoint / "state")


def carry_local_state(checkpoint: Path, state_url: str, committed_ends: dict[str, int]) -> int:
    """Upload each partition's local state under `checkpoint` to `state_url`, where that holds
    nothing yet. `committed_ends`: the last committed end offset by "<topic>/<partition>"
    (engine/checkpoint.py). Returns how many partitions it carried over."""
    carried = 0
    for local in local_partition_dirs(checkpoint):
        topic, partition = local.parent.name, local.name[1:]
        end = committed_ends.get(f"{topic}/{partition}")
        where = partition_subpath(local.parent.parent.name, topic, partition)
        if end is not None and seed_from_local(SharedPartitionState(state_url, where), local, end):
            carried += 1
    if carried:
        log.info("carried the local dedup state of %d partition(s) over to %s", carried, state_url)
    return carried


def seed_from_local(shared: SharedPartitionState, local_db: Path, committed_end: int) -> bool:
    """Carry a local run's RocksDB state (`checkpoint/dedup.../<topic>/p<n>`) over to shared
    storage, as a snapshot at the partition's last committed end offset, when the shared state
    holds nothing yet. The local state may also hold the writes of the batch after that,
    planned but not committed: a snapshot with those decides their replay exactly (entries
    remember the offset that wrote them). Returns whether it uploaded."""
    logs, snaps = shared.listing()
    if logs or snaps or not (local_db / "CURRENT").exists():
        return False
    db = open_db(local_db)
    try:
        shared.write_snapshot(committed_end, ((k, v) for k, v in db.items() if k != CACHE_KEY))
    finally:
        db.close()
    return True
