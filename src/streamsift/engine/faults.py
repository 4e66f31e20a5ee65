"""Fault injection for crash tests: end the pipeline like kill -9 at a named point.

`STREAMSIFT_FAULT=kill_after_insert:K` makes the K-th insert of a process the last thing it
does: the kill -9 harness and the exactly-once tests use it to crash between an insert and
Spark's commit. The variable is read once, when a run starts, and becomes a hook the batch
writer calls after each insert (pickled to executors with it); without it there is no hook.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass

from streamsift.spark_host.errors import RuntimeConfigError

FAULT_ENV = "STREAMSIFT_FAULT"
log = logging.getLogger("streamsift.engine")
_inserts_in_process = 0  # per process: an executor's Python worker counts its own inserts


@dataclass(frozen=True)
class KillAfterInserts:
    """After the `inserts`-th insert of this process, SIGKILL the driver and leave."""

    inserts: int
    driver_pid: int

    def __call__(self) -> None:
        global _inserts_in_process
        _inserts_in_process += 1
        if _inserts_in_process >= self.inserts:
            log.error("fault injection: killing the pipeline after %d inserts", _inserts_in_process)
            os.kill(self.driver_pid, signal.SIGKILL)
            os._exit(137)


def fault_from_environment(driver_pid: int) -> KillAfterInserts | None:
    """The hook STREAMSIFT_FAULT asks for, or None when it is not set."""
    spec = os.environ.get(FAULT_ENV, "")
    if not spec:
        return None
    kind, _, count = spec.partition(":")
    if kind != "kill_after_insert" or not count.isdigit() or int(count) < 1:
        raise RuntimeConfigError(
            f"{FAULT_ENV}={spec!r} is not a fault this build knows: use kill_after_insert:K "
            "(K >= 1), or unset it"
        )
    return KillAfterInserts(int(count), driver_pid)
