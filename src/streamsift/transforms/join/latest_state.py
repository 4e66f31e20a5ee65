"""A latest join's state kept by streamsift: one Arrow table per part of the join's keys (the
keys of one shuffle partition), a snapshot per micro-batch, so that a re-run micro-batch
starts from the state its first run started from.

    <location>/<under>/p<part>/s-<batch id>.arrow     the part's state after that batch

Micro-batch N reads the newest snapshot before N and writes snapshot N (a replay of N reads
the same snapshot and writes N again, the same bytes). Spark re-runs only the last,
uncommitted micro-batch, so once N is written the snapshots before the one N read are pruned.
A snapshot appears whole or not at all (shared_state.py `whole_file`, as dedup's
changelogs). `location` is a directory or
a URL, as for dedup's shared state (transforms/dedup/shared_state.py `open_location`).

The table holds the part's right versions and waiting left records in the join's input
shape (latest_columnar.py decides which rows stay); this module does not look inside it,
but for the snapshot's metadata (latest_arrow.py keeps the batch's late records there).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from streamsift.transforms.dedup.shared_state import open_location, whole_file

_SNAPSHOT = re.compile(r"^s-(\d{20})\.arrow$")


@dataclass(frozen=True)
class PartState:
    """The snapshots of one part of a latest join's keys under `location` + `subpath`."""

    location: str
    subpath: str  # e.g. "latest-join/p1"

    def _root(self) -> tuple[pafs.FileSystem, str]:
        fs, base = open_location(self.location)
        return fs, f"{base}/{self.subpath}"

    def batches(self) -> list[int]:
        """The micro-batches that have a snapshot, in order."""
        fs, root = self._root()
        infos = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        return sorted(int(m.group(1)) for i in infos if (m := _SNAPSHOT.match(i.base_name)))

    def read_before(self, batch_id: int) -> tuple[int | None, pa.Table | None]:
        """The newest snapshot before micro-batch `batch_id`: its batch and table (None, None:
        the part had no state yet)."""
        earlier = [b for b in self.batches() if b < batch_id]
        if not earlier:
            return None, None
        fs, root = self._root()
        with fs.open_input_file(f"{root}/{_name(earlier[-1])}") as f:
            return earlier[-1], pa.ipc.open_file(f).read_all()

    def metadata(self, batch_id: int) -> dict[bytes, bytes] | None:
        """The schema metadata of snapshot `batch_id` (None: there is none)."""
        fs, root = self._root()
        try:
            with fs.open_input_file(f"{root}/{_name(batch_id)}") as f:
                return pa.ipc.open_file(f).schema.metadata or {}
        except FileNotFoundError:
            return None

    def write(self, batch_id: int, table: pa.Table, read_from: int | None) -> None:
        """Write the part's state after micro-batch `batch_id`; then prune the snapshots
        before `read_from`, the one this batch started from (a replay needs that one)."""
        fs, root = self._root()
        with (
            whole_file(fs, root, _name(batch_id)) as out,
            pa.ipc.new_file(out, table.schema) as writer,
        ):
            writer.write_table(table)
        if read_from is not None:
            for older in self.batches():
                if older < read_from:
                    with contextlib.suppress(FileNotFoundError):  # another attempt pruned it
                        fs.delete_file(f"{root}/{_name(older)}")


def _name(batch_id: int) -> str:
    return f"s-{batch_id:020d}.arrow"


def partitions(location: str, under: str) -> list[str]:
    """The subpaths under `location` + `under` that hold a part's snapshots."""
    fs, base = open_location(location)
    infos = fs.get_file_info(pafs.FileSelector(f"{base}/{under}", allow_not_found=True))
    return sorted(f"{under}/{i.base_name}" for i in infos if i.type == pafs.FileType.Directory)


def clear(location: str, under: str) -> None:
    """Remove every snapshot under `location` + `under`: a query that starts afresh (no
    micro-batch in its checkpoint) starts from no state, whatever a shared location still
    holds from before (its batch ids would be taken for this query's)."""
    fs, base = open_location(location)
    with contextlib.suppress(FileNotFoundError):
        fs.delete_dir(f"{base}/{under}")
