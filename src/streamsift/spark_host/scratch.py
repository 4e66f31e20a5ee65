"""Spark's scratch space for this process, and that of killed processes swept away.

Spark keeps a driver's temporary files (`spark-*`: the files and archives it ships, which on a
cluster include the unpacked Python environment; `blockmgr-*`: shuffle blocks; `artifacts-*`),
and its JVM the native libraries it unpacks (RocksDB's and others), in the temp directory, and
deletes them in a JVM shutdown hook. A pipeline killed with SIGKILL runs no hook, and a
supervisor that restarts it leaves one more set behind per crash. So each streamsift process
gives Spark a directory of its own, named after its PID namespace, process id and start time,
and each streamsift process that starts removes those of processes of its namespace that are
gone. (Not at exit: the JVM outlives the Python process's exit handlers and still writes there
as it shuts down, e.g. a flight recording's dump.)
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from pathlib import Path

from streamsift.spark_host.processes import stat_fields

log = logging.getLogger("streamsift.spark_host")

_claimed: dict[Path, Path] = {}


def default_root() -> Path:
    """One root per user, so that users sharing a temp directory do not share it."""
    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return Path(tempfile.gettempdir()) / f"streamsift-spark-{user}"


def pid_namespace() -> str:
    """This process's PID namespace (its inode), so that containers sharing a temp directory
    never judge each other's process ids; "0" where /proc does not say."""
    try:
        return "".join(c for c in os.readlink("/proc/self/ns/pid") if c.isdigit()) or "0"
    except OSError:
        return "0"


def process_start(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot, from /proc); None if it is gone.
    "0" where /proc is not there: the process id alone then names the process."""
    if not Path("/proc/self/stat").exists():
        return _start_without_proc(pid)
    fields = stat_fields(pid)
    return fields[19] if fields is not None else None  # field 22 of the line: starttime


def _start_without_proc(pid: int) -> str | None:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        pass
    return "0"


def owner_is_gone(name: str) -> bool:
    """Whether the process a scratch directory is named after (`<namespace>-<pid>-<start>`)
    has ended. Names of another form or another PID namespace are not ours: never gone."""
    parts = name.split("-")
    if len(parts) != 3 or parts[0] != pid_namespace() or not parts[1].isdigit():
        return False
    return process_start(int(parts[1])) != parts[2]


def sweep(root: Path) -> list[Path]:
    """Remove the scratch directories of processes that are gone; returns them."""
    removed = []
    size = 0
    with contextlib.suppress(FileNotFoundError):
        for entry in root.iterdir():
            if entry.is_dir() and owner_is_gone(entry.name):
                size += _size(entry)
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    if removed:
        log.info(
            "removed scratch directories of ended processes under %s: %d, %.1f MB",
            root,
            len(removed),
            size / 1e6,
        )
    return removed


def _size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def scratch_name(pid: int) -> str:
    return f"{pid_namespace()}-{pid}-{process_start(pid) or '0'}"


def claim(root: Path | None = None) -> Path:
    """This process's scratch directory (created), after sweeping `root`."""
    root = root or default_root()
    if root in _claimed:
        return _claimed[root]
    sweep(root)
    pid = os.getpid()
    path = root / scratch_name(pid)
    path.mkdir(parents=True, exist_ok=True)
    _claimed[root] = path
    return path
