"""What the service does when a pipeline's run reports (service/supervisor.py's callbacks):
Running again, Retrying with its reason, and the end of a run: Stopped, Failed, or a new run
started after a back-off (service/relaunch.py) when the process it ran in died while the
pipeline was wanted running. `PipelineService` takes these as a mixin; they act on its
records under its lock.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from streamsift.config.models import Pipeline
from streamsift.errors import StreamsiftError
from streamsift.service.database import ServiceDatabase
from streamsift.service.lifecycle import DesiredState, State, can_transition
from streamsift.service.pipeline_host import LOG_FILE as HOST_LOG_FILE
from streamsift.service.pipeline_run import EXIT_FAILED
from streamsift.service.relaunch import Relaunches
from streamsift.service.supervisor import LOG_FILE, Supervisor

log = logging.getLogger("streamsift.service")


class RunEvents:
    """The supervisor's callbacks of `PipelineService` (see the module docstring)."""

    database: ServiceDatabase
    supervisor: Supervisor
    relaunches: Relaunches
    retry_attempts: int | None
    _lock: threading.RLock

    def _opened(self, pipeline_id: str) -> tuple[dict[str, Any], Pipeline]:
        raise NotImplementedError

    def _launch(
        self, pipeline_id: str, pipeline: Pipeline | None = None
    ) -> tuple[dict[str, Any], Pipeline]:
        raise NotImplementedError

    def _on_state(self, pipeline_id: str, worker_state: str, report: dict[str, Any]) -> None:
        """A worker reports running (again), or a retry of a transient fault."""
        with self._lock:
            pid = report.get("pid")  # a hosted run's is known once the host took it
            if isinstance(pid, int) and self.database.worker_pid(pipeline_id) != pid:
                self.database.set_worker_pid(pipeline_id, pid)
            state = self.database.get(pipeline_id).state
            if worker_state == "running" and state in (
                State.CREATED,
                State.RESUMING,
                State.RETRYING,
            ):
                self.relaunches.settled(pipeline_id)
                note = "running again" if state is State.RETRYING else None
                self.database.set_state(pipeline_id, State.RUNNING, note=note)
                if note:
                    log.info("pipeline %s: running again after retries", pipeline_id)
            elif worker_state == "retrying" and can_transition(state, State.RETRYING):
                retry = report.get("retry") or {}
                self._retrying(pipeline_id, state, retry.get("reason") or "", _retry_note(retry))

    def _retrying(self, pipeline_id: str, state: State, reason: str, note: str) -> None:
        """Record a retry: a change of state the first time, then only its latest reason."""
        log.warning("pipeline %s: retrying: %s (%s)", pipeline_id, reason, note)
        if state is State.RETRYING:
            self.database.set_error(pipeline_id, reason)
        else:
            self.database.set_state(pipeline_id, State.RETRYING, error=reason, note=note)

    def _on_exit(self, pipeline_id: str, code: int, report: dict[str, Any]) -> None:
        """A worker ended: Stopped after a stop, Failed (with its error) after a permanent
        failure; when it died (or its Spark process was lost) while wanted running, a new one
        is started after a back-off (service/relaunch.py)."""
        with self._lock:
            record = self.database.get(pipeline_id)
            state = record.state
            self.database.set_worker_pid(pipeline_id, None)
            log_path = (
                self.supervisor.host.directory / HOST_LOG_FILE
                if report.get("isolation") == "host"
                else self.supervisor.directory(pipeline_id) / LOG_FILE
            )
            error = report.get("error") or _ended(code, log_path)
            if state is State.STOPPING and code != EXIT_FAILED:
                self.relaunches.settled(pipeline_id)
                self.database.set_state(pipeline_id, State.STOPPED, note=report.get("hint"))
            elif code == 0:  # stopped by a signal from outside the service
                self.database.set_state(pipeline_id, State.STOPPING, note="stopped from outside")
                self.database.set_state(pipeline_id, State.STOPPED, desired=DesiredState.STOPPED)
            elif code == EXIT_FAILED or record.desired_state is not DesiredState.RUNNING:
                self.relaunches.settled(pipeline_id)
                self.database.set_state(
                    pipeline_id, State.FAILED, error=error, note=report.get("hint")
                )
            else:
                self._relaunch_later(pipeline_id, state, error)

    def _relaunch_later(self, pipeline_id: str, state: State, error: str) -> None:
        retry = self._opened(pipeline_id)[1].runtime.retry
        planned = self.relaunches.schedule(pipeline_id, retry, self.retry_attempts)
        if planned is None:
            since = self.relaunches.since(pipeline_id)
            self.relaunches.settled(pipeline_id)
            when = "" if since is None else f" since {since:%Y-%m-%d %H:%M:%S} UTC"
            self.database.set_state(
                pipeline_id,
                State.FAILED,
                error=f"gave up restarting its worker{when}: {error}",
                note="runtime.retry.max_attempts (or serve --retry-attempts) was reached",
            )
            return
        attempt, wait = planned
        note = f"a new worker starts in {wait.total_seconds():.0f}s (attempt {attempt})"
        self._retrying(pipeline_id, state, error, note)

    def _relaunch(self, pipeline_id: str) -> None:
        """A relaunch's time has come: start the worker, unless a request came first."""
        with self._lock:
            try:
                record = self.database.get(pipeline_id)
            except StreamsiftError:  # deleted meanwhile
                return
            if (
                record.state is not State.RETRYING
                or record.desired_state is not DesiredState.RUNNING
                or self.supervisor.is_running(pipeline_id)
            ):
                return
            self._launch(pipeline_id)


def _retry_note(retry: dict[str, Any]) -> str:
    """'attempt 3 of 10, next try at 12:00:05 UTC' from a worker's retry report."""
    limit = retry.get("limit")
    attempt = f"attempt {retry.get('attempt')}" + ("" if limit is None else f" of {limit}")
    next_try = str(retry.get("next_try_at") or "")
    at = next_try[11:19] if len(next_try) >= 19 else next_try
    return f"{attempt}, next try at {at} UTC" if at else attempt


def _ended(code: int, log_path: Path) -> str:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return f"the pipeline's worker {how} without reporting an error; see {log_path}"
