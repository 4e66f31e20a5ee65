"""Start a child process tree and take it down, for the service, the bench and the kill -9
harness.

Each starts a Python process (a pipeline worker, a bench worker, a `streamsift run`) that
starts a Spark JVM,
PySpark's worker daemons and their workers, and sometimes a ClickHouse endpoint; when a run
must end, all of them must end at once. PySpark's daemons move into process groups of their
own (pyspark/daemon.py: `os.setpgid(0, 0)`), so killing the child's process group is not
enough: `kill_tree` also kills every other process of the child's session (when the child
leads one) and every descendant it had (which covers a descendant in a session of its own,
like a spawned ClickHouse endpoint).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

KILL_ROUNDS = 20  # re-scan this many times for processes started while killing


def start(
    command: Sequence[str],
    log_path: Path,
    *,
    own_session: bool = False,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `command` with stdout and stderr into `log_path` (the child keeps the file open).

    With `own_session`, the child leads a new session and process group, which `kill_tree`
    then kills as one (and a terminal's Ctrl-C does not reach it).
    """
    with Path(log_path).open("wb") as log:
        return subprocess.Popen(
            list(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=own_session,
        )


def kill_tree(proc: subprocess.Popen) -> int:
    """SIGKILL a started process and every process it started, then reap it.

    A session leader's process group goes first, in one signal (like a lost machine); then,
    until none is left, the other members of its session and the descendants found before
    the kill. Returns how many processes outside the child's process group were killed.
    """
    stray = kill_pid_tree(proc.pid, alive=proc.poll() is None)
    proc.wait(10)
    return stray


def kill_pid_tree(pid: int, alive: bool = True) -> int:
    """`kill_tree` for a process known by its pid only (e.g. one a previous server started,
    so not a child of this one: whoever is its parent now reaps it). `alive`: False when the
    process is known to have exited (its children were then handed to init: none to find)."""
    table = _process_table()
    # A session outlives its leader while members live, and its id is not reused meanwhile.
    leader = any(session == pid for _parent, _group, session in table.values())
    descendants: set[int] = set()
    if leader:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    elif alive:
        descendants = _descendants(pid, table)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    stray: set[int] = set()
    for _ in range(KILL_ROUNDS):
        table = _process_table()
        members = {
            member: group
            for member, (_parent, group, session) in table.items()
            if member in descendants or (leader and session == pid)
        }
        if not members:
            break
        for member in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)
        stray |= {member for member, group in members.items() if group != pid}
        time.sleep(0.05)
    return len(stray)


def stop(proc: subprocess.Popen, timeout: float) -> int:
    """SIGTERM the process and wait up to `timeout` seconds for it to exit, else `kill_tree`
    it; returns its exit code."""
    if proc.poll() is None:
        proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        return proc.wait()


def _process_table() -> dict[int, tuple[int, int, int]]:
    """Live (not zombie) processes: pid -> (parent, process group, session), from /proc, or
    where there is none, from psutil when it is installed (else empty)."""
    if not Path("/proc/self/stat").exists():
        return _psutil_table()
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command: state, ppid, pgrp, session, ...
        if len(fields) > 3 and fields[0] not in ("Z", "X"):
            table[int(stat.parent.name)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    return table


def _psutil_table() -> dict[int, tuple[int, int, int]]:
    try:
        import psutil
    except ImportError:  # no /proc and no psutil: only the process itself can be killed
        return {}
    table = {}
    for p in psutil.process_iter(["ppid", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(OSError):  # gone since listed, or not ours to inspect
            table[p.pid] = (p.info["ppid"], os.getpgid(p.pid), os.getsid(p.pid))
    return table


def _descendants(pid: int, table: dict[int, tuple[int, int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for child, (parent, _group, _session) in table.items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, the state first (field 3 of
    the line); None when the process is gone or its entry unreadable."""
    try:
        # the command name is in parentheses and may hold spaces: split after it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def command_line(pid: int) -> list[str] | None:
    """The arguments of a live process (None when it is gone, a zombie, or unreadable):
    to tell that a recorded pid is still the process it was, not a reused number."""
    fields = stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]
