"""One source's dedup as the executors apply it to each partition's offset range.

The source processor (engine/processor.py) hands over a partition's parsed records; the rule
picks what its mode compares (keys.py), where the partition's state lives (layout.py: a local
RocksDB, or shared storage with a local cache, shared_state.py), and lets PartitionDedup
(partition.py) decide which records pass. Dead letters pass untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from streamsift.transforms.dedup.keys import record_keys
from streamsift.transforms.dedup.layout import mode_directory, partition_subpath
from streamsift.transforms.dedup.partition import PartitionDedup
from streamsift.transforms.dedup.shared_state import SharedPartitionState, local_cache_root
from streamsift.transforms.parse import FieldSpec

if TYPE_CHECKING:  # executors unpickle this module: keep pydantic out of them
    from streamsift.config.models import Dedup


@dataclass(frozen=True)
class OffsetRange:
    """The offset range [start, end) of one Kafka partition that a task processes."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class DedupRule:
    """Picklable: built on the driver (`of`), applied on the executors (`decide`).

    `state_dir`: the mode's directory (layout.py); None keeps no state (nothing is dropped).
    `state_url`: the shared state's location (a directory or URL), when it is shared.
    """

    keys: tuple[FieldSpec, ...] = ()
    mode: str = "first"
    window_us: int = 0
    state_dir: str | None = None
    state_url: str | None = None

    @classmethod
    def of(
        cls,
        dedup: Dedup,
        fields: dict[str, FieldSpec],
        dedup_dir: Path | None,
        state_url: str | None = None,
    ) -> DedupRule:
        """`dedup_dir` is the checkpoint's `dedup` directory; `fields` the schema's by path."""
        mode = dedup.mode.value
        return cls(
            keys=tuple(fields[k] for k in dedup.key),
            mode=mode,
            window_us=int(dedup.time_window.total_seconds() * 1_000_000),
            state_dir=str(mode_directory(dedup_dir, mode)) if dedup_dir else None,
            state_url=state_url,
        )

    @property
    def active(self) -> bool:
        return self.state_dir is not None and (bool(self.keys) or self.mode == "exact")

    def decide(
        self,
        part: OffsetRange,
        offsets: Sequence[int],
        payloads: Sequence[bytes | None],
        table: pa.Table,
        event_time: pa.Array | pa.ChunkedArray,
        errors: Sequence[str | None],
    ) -> tuple[np.ndarray, np.ndarray]:
        """(keep, late) per record of the range; records with an error are kept, not late."""
        assert self.state_dir is not None
        n = len(errors)
        ok = pa.array(errors, pa.string()).is_null().to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(ok)
        times = pc.fill_null(pc.cast(event_time, pa.int64()), 0).to_numpy()
        keys, hashes = record_keys(self.mode, table, [f.column for f in self.keys], payloads, rows)
        where = partition_subpath(Path(self.state_dir).name, part.topic, part.partition)
        shared: SharedPartitionState | None = None
        if self.state_url:  # the state is shared: this process keeps a cache of it
            path = local_cache_root(self.state_url) / where
            shared = SharedPartitionState(self.state_url, where)
        else:
            path = Path(self.state_dir) / part.topic / f"p{part.partition}"
        decision = PartitionDedup(
            path, self.window_us, compare_payload=self.mode == "last", shared=shared
        ).decide(
            keys,
            times[rows],
            np.asarray(offsets, dtype=np.int64)[rows],
            part.start,
            hashes,
            end=part.end,
        )
        keep = np.ones(n, dtype=bool)
        late = np.zeros(n, dtype=bool)
        keep[rows] = decision.keep
        late[rows] = decision.late
        return keep, late
