"""Where dedup state lives: a directory per mode, a RocksDB per topic and partition.

    <checkpoint>/dedup/<topic>/p<partition>        mode first
    <checkpoint>/dedup-last/..., dedup-exact/...   the other modes (a new mode starts empty)

Shared state (shared_state.py) uses the same names under the state location, from the mode's
directory down; each executor then keeps its cache of it under `local_cache_root`.
"""

from __future__ import annotations

from pathlib import Path

STATE_DIR = "dedup"  # the checkpoint's directory of mode first; the others add "-<mode>"


def mode_directory(dedup_dir: Path, mode: str) -> Path:
    """The directory of `mode`'s state, beside the checkpoint's `dedup` directory."""
    return dedup_dir if mode == "first" else dedup_dir.parent / f"{dedup_dir.name}-{mode}"


def partition_subpath(mode_dir: str, topic: str, partition: int | str) -> str:
    """A partition's state below the checkpoint or the state location: `dedup/orders/p0`."""
    return f"{mode_dir}/{topic}/p{partition}"


def local_partition_dirs(checkpoint: Path) -> list[Path]:
    """Every partition's local RocksDB under a checkpoint, in every mode's directory."""
    return sorted(checkpoint.glob(f"{STATE_DIR}*/*/p[0-9]*"))
