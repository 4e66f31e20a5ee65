"""Reading what a pipeline wrote: counts from a ClickHouse server (the chdb-backed endpoint a
test started, on a loopback port) or, in a process of its own, from an embedded chdb
directory."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import clickhouse_connect

from streamsift.embedded.clickhouse_server import spawn_server


def client(port: int, *, host: str = "127.0.0.1", password: str = "") -> Any:
    return clickhouse_connect.get_client(host=host, port=port, password=password)


def count(port: int, table: str, where: str = "", **connect: Any) -> int:
    """Rows of `table` (those matching `where`, if given)."""
    ch = client(port, **connect)
    try:
        sql = f"SELECT count() FROM {table}" + (f" WHERE {where}" if where else "")
        return int(ch.command(sql))
    finally:
        ch.close()


def rows(port: int, table: str, **connect: Any) -> tuple[int, int]:
    """(rows, distinct event ids) of `table`; (0, 0) while it does not exist."""
    ch = client(port, **connect)
    try:
        if not int(ch.command(f"EXISTS TABLE {table}")):
            return (0, 0)
        total, distinct = ch.query(f"SELECT count(), uniqExact(event_id) FROM {table}").result_rows[
            0
        ]
        return int(total), int(distinct)
    finally:
        ch.close()


def assert_each_event_once(port: int, table: str, expected: int | None = None) -> None:
    """No event id twice and no retried attempt in `table`; `expected` rows, if given."""
    total, distinct = rows(port, table)
    assert distinct == total, f"{total} rows but {distinct} distinct event ids"
    assert count(port, table, "attempt > 0") == 0
    if expected is not None:
        assert total == expected


class Endpoint:
    """The chdb-backed ClickHouse HTTP endpoint in a process (group) of its own, with its
    fault endpoint on (streamsift.embedded.clickhouse_faults), for tests that kill it or make
    it fail; on `port` when given (a restart on the port its clients know)."""

    def __init__(self, data_dir: Path, port: int = 0) -> None:
        self.data_dir = data_dir
        self.proc, self.port = spawn_server(data_dir, port, fault_endpoint=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def client(self) -> Any:
        return client(self.port)

    def count(self, table: str, where: str = "") -> int:
        return count(self.port, table, where)

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def embedded_count(path: Path, table: str) -> int:
    """Rows of `table` in the embedded ClickHouse at `path`, counted in a process of its own
    (chdb opens one data directory per process; this one may hold another)."""
    code = (
        "import clickhouse_connect, sys; "
        "c = clickhouse_connect.get_client(dsn='chdb://' + sys.argv[1]); "
        "print(c.command('SELECT count() FROM ' + sys.argv[2]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path), table], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


@contextlib.contextmanager
def held_by_another_process(path: Path) -> Iterator[None]:
    """The embedded ClickHouse at `path` held open by another process for the time of the
    block (chdb allows one process per data directory)."""
    code = (
        "import sys, clickhouse_connect\n"
        "c = clickhouse_connect.get_client(dsn='chdb://' + sys.argv[1])\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.stdin.close()
        try:
            holder.wait(30)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
