"""Running a pipeline that retries its transient faults by itself.

A run that fails with a transient error (a broker or ClickHouse that did not answer, a process
of the query that died: `streamsift.errors.TransientError`, told apart across the Spark
boundary by engine/query_failures.py) is started again from its checkpoint after a back-off
(`runtime.retry`), in the same process and Spark session; exactly-once holds because every
re-run micro-batch makes the same insert tokens. A permanent error ends the run at once, as
does a transient one once its retries are used up (`RetriesExhausted`). When the Spark JVM
itself is gone, no query can start in this process again: `ProcessLost` asks the caller for a
new process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from py4j.protocol import Py4JError

from streamsift.config.runtime_limits import Retry
from streamsift.engine.errors import QueryCrashed, UnexplainedFailure
from streamsift.engine.query_failures import explain_failure
from streamsift.engine.runner import PipelineRunner, RunResult
from streamsift.engine.signals import StopFlag
from streamsift.errors import PermanentError, StreamsiftError, TransientError
from streamsift.spark_host.session import jvm_alive

log = logging.getLogger("streamsift.engine")


class RetriesExhausted(PermanentError):
    """A transient fault outlasted the pipeline's retries (`runtime.retry.max_attempts`)."""


class ProcessLost(TransientError):
    """The Spark JVM of this process is gone: the pipeline must start in a new process."""


@dataclass(frozen=True)
class RetryAttempt:
    """A retry about to happen: why (the error), which attempt, and when."""

    reason: str
    kind: str
    attempt: int
    limit: int | None  # None: no limit
    since: datetime  # when this episode of failures began
    next_try_at: datetime

    def as_dict(self) -> dict[str, object]:
        return {
            "reason": self.reason,
            "kind": self.kind,
            "attempt": self.attempt,
            "limit": self.limit,
            "since": self.since.isoformat(),
            "next_try_at": self.next_try_at.isoformat(),
        }


def run_with_retries(
    make_runner: Callable[[], PipelineRunner],
    retry: Retry,
    stop: StopFlag,
    on_retry: Callable[[RetryAttempt | None], None],
    max_attempts: int | None = None,
) -> RunResult:
    """Run (until stopped) with the runners `make_runner` makes, one per try; `on_retry` hears
    each retry before its back-off, and None once a retried run commits a micro-batch.
    `max_attempts`: the server's limit, used when the pipeline sets none."""
    limit = retry.max_attempts if retry.max_attempts is not None else max_attempts
    attempt = unexplained = 0  # consecutive failures; of them, of no known kind
    since: datetime | None = None
    while True:
        runner: PipelineRunner | None = None
        try:
            runner = make_runner()  # may fail too, e.g. a registry that does not answer
            if attempt:
                runner.on_first_batch = lambda: on_retry(None)
            return runner.run(until_caught_up=False)
        except (Py4JError, OSError) as exc:  # raised outside a query, e.g. while building it
            if not jvm_alive():
                raise ProcessLost(f"the Spark JVM is gone: {exc}") from exc
            error = explain_failure(exc)  # e.g. a Python worker Spark reused after it died
        except StreamsiftError as exc:
            error = exc
        if not isinstance(error, TransientError):
            raise error
        if stop.is_set():  # asked to stop anyway: nothing to retry for
            note = f"stopped; the run had failed with: {error.message}"
            return RunResult({}, caught_up=False, stopped=True, note=note)
        if runner is not None and runner.stats.batches:  # it got going again: a new episode
            attempt, unexplained, since = 0, 0, None
        attempt += 1
        since = since or _now()
        cap, count = limit, attempt
        if isinstance(error, UnexplainedFailure):
            unexplained += 1
            cap, count = retry.unexplained_attempts, unexplained
        if cap is not None and count > cap:
            raise RetriesExhausted(
                f"gave up after {count - 1} retries since {since:%Y-%m-%d %H:%M:%S} UTC: "
                f"{error.message}",
                error.hint,
            ) from error
        if isinstance(error, QueryCrashed) and not jvm_alive():
            raise ProcessLost(error.message, error.hint) from error
        wait = retry.backoff(attempt)
        log.warning(
            "retry %d%s in %.0fs (%s): %s",
            count,
            "" if cap is None else f" of {cap}",
            wait.total_seconds(),
            error.kind.value,
            error.message,
        )
        on_retry(
            RetryAttempt(error.message, type(error).__name__, count, cap, since, _now() + wait)
        )
        if stop.wait(wait.total_seconds()):
            return RunResult({}, caught_up=False, stopped=True, note="stopped while retrying")


def _now() -> datetime:
    return datetime.now(timezone.utc)


__all__ = ["ProcessLost", "RetriesExhausted", "RetryAttempt", "run_with_retries"]
