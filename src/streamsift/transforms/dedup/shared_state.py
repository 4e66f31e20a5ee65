"""The dedup state of one Kafka partition on shared storage, with the local RocksDB as a cache.

On a cluster the task for a partition may run on any executor, so the RocksDB directory that
holds its dedup state (partition.py) cannot live only on one machine's disk. Like
Spark's own RocksDB state store, every offset range's writes are uploaded as a changelog
before the range's rows leave the task, and now and then a snapshot of the whole state, through
pyarrow's file systems (a local or shared directory, `s3://`, `gs://`, `hdfs://`):

    <location>/<topic>/p<partition>/log-<start>-<end>.arrow   the puts and deletes of [start, end)
    <location>/<topic>/p<partition>/snap-<end>.arrow          the whole state after offset end

Before deciding range [start, end), the local cache must hold the state as of `start`, or as
of `end` (a replay of a range whose writes it already holds: every entry remembers the offset
that wrote it and the one it replaced, so the range decides exactly as its first run). The
cache records the end of the last range it applied; any other value, or no cache at all,
rebuilds it from the newest snapshot at or before `end` plus the changelogs after it up to
`end`. Spark replays only the last, uncommitted batch, so older snapshots and changelogs are
pruned behind the previous snapshot.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import struct
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
from rocksdict import Options, Rdict, WriteBatch, WriteOptions

CACHE_KEY = b"\x00cache"  # local only: (applied end, ranges since the last snapshot)
_CACHE = struct.Struct("<qq")
SNAPSHOT_EVERY = 20  # ranges between snapshots: bounds a restore's changelog replay
_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary())])  # value null: delete
_LOG = re.compile(r"^log-(\d{20})-(\d{20})\.arrow$")
_SNAP = re.compile(r"^snap-(\d{20})\.arrow$")

Write = tuple[bytes, bytes | None]  # a put, or a delete when the value is None
_NO_WAL = WriteOptions()
_NO_WAL.disable_wal = True


@functools.lru_cache(maxsize=16)
def open_location(url: str) -> tuple[pafs.FileSystem, str]:
    """A file system and base path for a directory or a URL (`s3://bucket/path?...`); one per
    URL and process (a Python worker is reused across tasks)."""
    if "://" not in url:
        return pafs.LocalFileSystem(), str(Path(url).resolve())
    if url.startswith("s3://") and "allow_delayed_open" not in url:
        # Small objects (every changelog) then go up in one PutObject instead of a multipart
        # upload's three requests; S3-compatible servers that mishandle multipart completion
        # (moto) also need it.
        url += ("&" if "?" in url else "?") + "allow_delayed_open=true"
    fs, path = pafs.FileSystem.from_uri(url)
    return fs, path.rstrip("/")


def local_cache_root(url: str) -> Path:
    """Where this process keeps its caches: Spark's local dirs for this executor (removed with
    it), else the temp dir; one directory per state location."""
    local_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    base = Path(local_dirs.split(",")[0]) if local_dirs else Path(tempfile.gettempdir())
    digest = hashlib.sha1(url.encode()).hexdigest()[:12]
    return base / "streamsift-dedup-cache" / digest


@dataclass(frozen=True)
class SharedPartitionState:
    """The shared copy of one partition's dedup state under `url` + `subpath`."""

    url: str
    subpath: str  # e.g. "dedup/orders/p0"

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        fs, base = open_location(self.url)
        return fs, f"{base}/{self.subpath}"

    def listing(self) -> tuple[list[tuple[int, int]], list[int]]:
        """(changelog ranges, snapshot ends), both sorted."""
        fs, root = self._fs()
        infos = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        logs, snaps = [], []
        for info in infos:
            if m := _LOG.match(info.base_name):
                logs.append((int(m.group(1)), int(m.group(2))))
            elif m := _SNAP.match(info.base_name):
                snaps.append(int(m.group(1)))
        return sorted(logs), sorted(snaps)

    def write_log(self, start: int, end: int, writes: Iterable[Write]) -> None:
        self._write(f"log-{start:020d}-{end:020d}.arrow", writes)

    def write_snapshot(self, end: int, entries: Iterable[Write]) -> None:
        self._write(f"snap-{end:020d}.arrow", entries)

    def read(self, name: str) -> list[Write]:
        fs, root = self._fs()
        with fs.open_input_stream(f"{root}/{name}") as f:
            table = pa.ipc.open_stream(f).read_all()
        return list(
            zip(table.column("key").to_pylist(), table.column("value").to_pylist(), strict=True)
        )

    def _write(self, name: str, writes: Iterable[Write]) -> None:
        keys, values = [], []
        for k, v in writes:
            keys.append(k)
            values.append(v)
        table = pa.table([pa.array(keys, pa.binary()), pa.array(values, pa.binary())], _SCHEMA)
        fs, root = self._fs()
        with whole_file(fs, root, name) as out, pa.ipc.new_stream(out, _SCHEMA) as writer:
            writer.write_table(table)

    def prune(self, keep_snapshot_from: int) -> None:
        """Delete snapshots before `keep_snapshot_from` and changelogs ending at or before it."""
        fs, root = self._fs()
        logs, snaps = self.listing()
        doomed = [f"snap-{e:020d}.arrow" for e in snaps if e < keep_snapshot_from]
        doomed += [f"log-{s:020d}-{e:020d}.arrow" for s, e in logs if e <= keep_snapshot_from]
        for name in doomed:
            with contextlib.suppress(FileNotFoundError):  # another attempt pruned it
                fs.delete_file(f"{root}/{name}")


class CachedState:
    """Opens the local RocksDB cache of a partition, fresh for range [start, end)."""

    def __init__(self, shared: SharedPartitionState, cache_path: Path) -> None:
        self.shared = shared
        self.path = cache_path
        self.restored = False  # for tests and measurements: did this open rebuild the cache?

    def open(self, start: int, end: int) -> Rdict:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = open_db(self.path)
        marker = db.get(CACHE_KEY)
        if marker is not None and _CACHE.unpack(marker)[0] in (start, end):
            return db
        db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        db = open_db(self.path)
        self._restore(db, end)
        self.restored = True
        return db

    def _restore(self, db: Rdict, upto: int) -> None:
        logs, snaps = self.shared.listing()
        base = max((e for e in snaps if e <= upto), default=None)
        pending = 0
        if base is not None:
            apply_writes(db, self.shared.read(f"snap-{base:020d}.arrow"))
        applied = base
        for s, e in logs:
            if (base is None or s >= base) and e <= upto:
                apply_writes(db, self.shared.read(f"log-{s:020d}-{e:020d}.arrow"))
                applied = e
                pending += 1
        db[CACHE_KEY] = _CACHE.pack(applied if applied is not None else -1, pending)

    def commit(self, db: Rdict, start: int, end: int, writes: list[Write]) -> None:
        """Upload the range's writes (before its rows leave the task), then mark the cache;
        every SNAPSHOT_EVERY ranges, upload a snapshot and prune behind the previous one."""
        self.shared.write_log(start, end, writes)
        marker = db.get(CACHE_KEY)
        since = _CACHE.unpack(marker)[1] + 1 if marker is not None else 1
        if since >= SNAPSHOT_EVERY:
            self.shared.write_snapshot(end, ((k, v) for k, v in db.items() if k != CACHE_KEY))
            _, snaps = self.shared.listing()
            previous = [e for e in snaps if e < end]
            if previous:
                self.shared.prune(previous[-1])
            since = 0
        db[CACHE_KEY] = _CACHE.pack(end, since)


@contextlib.contextmanager
def whole_file(fs: pafs.FileSystem, directory: str, name: str) -> Iterator[pa.NativeFile]:
    """An output stream whose file `directory/name` appears whole or not at all: on a local
    or shared directory it is written aside and renamed into place (atomic); an object store
    makes an object visible only when its upload completes. The directory is created."""
    fs.create_dir(directory, recursive=True)
    target = f"{directory}/{name}"
    local = isinstance(fs, pafs.LocalFileSystem)
    path = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp" if local else target
    with fs.open_output_stream(path) as out:
        yield out
    if local:
        fs.move(path, target)


def open_db(path: Path) -> Rdict:
    """The RocksDB at `path` (raw keys and values), created if missing."""
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    return Rdict(str(path), opts)


def apply_writes(db: Rdict, writes: Iterable[Write], wal: bool = True) -> None:
    """Apply puts (and deletes: value None) in one RocksDB write batch.

    `wal=False` skips RocksDB's write-ahead log: the batch is durable only once the database
    is closed (closing flushes it). Right for a local state, which is closed before the
    range's rows leave the task: a crash before that loses the batch and the range's replay
    decides from the state as it was, as it would anyway. Not for a cache whose marker,
    written with the log, must never survive the writes it vouches for."""
    batch = WriteBatch(raw_mode=True)
    for key, value in writes:
        if value is None:
            batch.delete(key)
        else:
            batch.put(key, value)
    if wal:
        db.write(batch)
    else:
        db.write(batch, _NO_WAL)
