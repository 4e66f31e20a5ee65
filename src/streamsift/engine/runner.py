"""Running one pipeline as one Spark structured streaming query: start it, follow it, stop it.

    Kafka source (parse + dedup on executors) ──► foreachBatch ──► ClickHouse table
                                                             └──► DLQ table

The runner owns the query's loop and its stats; the stream is built in engine/query.py, the
tables in engine/sink_tables.py, a batch reaches ClickHouse by one of engine/write_strategies.py,
and a failed query is explained by engine/query_failures.py.

Exactly-once: Spark records a micro-batch's offsets before running it and commits it after
the sink returns. Every insert of a batch carries a token made of the query id (kept in the
checkpoint), the batch id and the chunk's index in the batch's rows sorted by
(topic, partition, offset), so a re-run batch produces the same tokens for the same rows and
ClickHouse skips what it already has.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from streamsift.config.models import Pipeline
from streamsift.engine.batch_writer import BatchWriter
from streamsift.engine.checkpoint import (
    batch_ends,
    clear_interrupted_writes,
    committed_ends,
    has_batches,
    last_committed,
)
from streamsift.engine.faults import fault_from_environment
from streamsift.engine.ledger import Ledger
from streamsift.engine.new_columns import SchemaDrift, drift_enabled
from streamsift.engine.progress import RunStats, lag_by_partition
from streamsift.engine.progress_feed import ProgressFeed
from streamsift.engine.query import (
    WAKE_FILE,
    BatchJoin,
    build_stream,
    data_path_of,
    source_name,
)
from streamsift.engine.query_failures import explain_failure, was_interrupted
from streamsift.engine.registry_fields import require_fields
from streamsift.engine.signals import StopFlag, StopRequested
from streamsift.engine.sink_tables import prepare_tables
from streamsift.engine.state_size import StateSize
from streamsift.engine.write_strategies import (
    BatchToWrite,
    DriverInserts,
    ExecutorInserts,
    WriteStrategy,
)
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.client import describe
from streamsift.sinks.errors import SinkTransientError
from streamsift.sinks.retry import RetryInterrupted, RetryStatus
from streamsift.spark_host.errors import RuntimeConfigError
from streamsift.spark_host.query_conf import query_conf
from streamsift.spark_host.session import (
    STATE_STORE_CONF,
    STATE_STORE_PROVIDERS,
    is_local_master,
    resolve_master,
    spark_session,
)
from streamsift.transforms.dedup.carry_over import carry_local_state, state_location

WATCH_S = 1.0  # how often a run folds its progress reports into its figures
STOP_LOOK_S = 0.5  # how often it looks at its stop flag (its query's end wakes it at once)
ACTIVE_CHECK_S = 10.0  # how often it also asks the JVM whether the query is active
PROGRESS_DRAIN_S = 5.0  # how long an ended run waits for the listener bus's last reports
log = logging.getLogger("streamsift.engine")


@dataclass(frozen=True)
class RunResult:
    """How a run ended. `stopped`: a stop was requested (signal or `stop()`); `note` then
    says what it interrupted, if anything (e.g. start-up, or a micro-batch left uncommitted)."""

    stats: dict[str, Any]
    caught_up: bool
    stopped: bool = False
    note: str | None = None


class PipelineRunner:
    """Runs one pipeline: until caught up (availableNow) or until asked to stop.

    `driver_inserts`: insert from the driver even into a ClickHouse server (as embedded
    ClickHouse always does) instead of from the executors (engine/write_strategies.py).
    `last_progress` holds Spark's latest progress report (a dict), for a status that shows
    more than `stats`. `session`: where the query runs, when not in this process's own
    SparkSession (the service's pipeline host hands each pipeline a session of its own in
    one shared application), and `scheduler_pool` the FAIR scheduler pool its jobs run in.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        base_dir: Path = Path(".streamsift"),
        verbose: bool = False,
        on_progress: Callable[[RunStats], None] | None = None,
        stop: StopFlag | None = None,
        driver_inserts: bool = False,
        master: str | None = None,
        session: Callable[[], Any] | None = None,
        scheduler_pool: str | None = None,
    ) -> None:
        require_fields(pipeline)
        self.pipeline = pipeline
        self.master = resolve_master(pipeline.runtime.master, master)
        if not is_local_master(self.master) and pipeline.sink.clickhouse.embedded:
            raise RuntimeConfigError(
                f"sink.clickhouse.path: embedded ClickHouse lives inside one process and "
                f"cannot take inserts from the executors of {self.master}; use a ClickHouse "
                "server (sink.clickhouse.host and port)"
            )
        self.driver_inserts = driver_inserts or pipeline.sink.clickhouse.embedded
        self.last_progress: dict[str, Any] | None = None
        self.base_dir = Path(base_dir)
        self.verbose = verbose
        self.on_progress = on_progress
        self.stats = RunStats()
        self.checkpoint = Path(pipeline.checkpoint_dir(self.base_dir)).resolve()
        self.state_url = state_location(pipeline, self.master, self.checkpoint)
        self._stop = stop or StopFlag()
        self._aborting = False  # `abort()`: stop without waiting for the micro-batch in flight
        self._session = session
        self.scheduler_pool = scheduler_pool
        self._retrying: RetryStatus | None = None  # the driver's sink action being retried
        self.writer = ClickHouseWriter(
            pipeline.sink.clickhouse,
            on_status=self._sink_status,
            stop=self._stop,
            connect_timeout_s=min(10.0, max(1.0, pipeline.sink.connect_timeout.total_seconds())),
        )
        # sink.on_new_fields add_columns: the mapping extended by the columns added so far
        self.drift = (
            SchemaDrift(pipeline, self.checkpoint, self.writer) if drift_enabled(pipeline) else None
        )
        if self.drift is not None:
            self.pipeline = pipeline = self.drift.pipeline
        self.batch_writer = BatchWriter(
            pipeline, self.writer, after_insert=fault_from_environment(driver_pid=os.getpid())
        )
        self._query_id: str | None = None
        # called once, when the run's first micro-batch is counted (a retry that worked)
        self.on_first_batch: Callable[[], None] | None = None
        # Set per query: the output frame's Arrow schema on the pass-through (its rows carry
        # serialized chunks; engine/arrow_passthrough.py), else None (the row path).
        self.arrow_schema: pa.Schema | None = None
        self.batch_join: BatchJoin | None = None  # a join run in foreachBatch (query.py)
        self._progress = ProgressFeed()
        self.state_size = StateSize(self.checkpoint)
        # seconds from the run's start to each step of its start-up (where a start's time goes)
        self.startup: dict[str, float] = {}
        self._began = time.monotonic()
        self.ledger: Ledger | None = None  # the pipeline's lifetime counts (engine/ledger.py)
        self.strategy: WriteStrategy = (
            DriverInserts()
            if self.driver_inserts
            else ExecutorInserts(self.writer, self.describe_sink(), self._set_status)
        )

    @property
    def data_path(self) -> str:
        """The data path the last query was built with (engine/query.py data_path_of)."""
        return data_path_of(self.arrow_schema)

    def wait_for_sink(self) -> None:
        """A ClickHouse server must answer within `sink.connect_timeout`, or the run ends."""
        if self.pipeline.sink.clickhouse.embedded:
            return
        timeout = self.pipeline.sink.connect_timeout.total_seconds()
        try:
            self.writer.wait_until_reachable(timeout)
        except RetryInterrupted:
            raise
        except SinkTransientError as exc:
            raise SinkTransientError(
                str(exc),
                "is the server up, and are sink.clickhouse.host and port right? "
                "sink.connect_timeout sets how long start-up waits",
            ) from None

    # ------------------------------------------------------------------ setup

    def prepare_sink(self) -> None:
        """Create or check the table and the DLQ table before any data moves."""
        prepare_tables(self.pipeline, self.writer, self.drift)

    def _build_query(self, spark: Any, until_caught_up: bool) -> Any:
        if self.scheduler_pool is not None:  # read by the query's thread, started from this one
            spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.scheduler_pool)
        # set for every query: one session may run pipelines with different choices
        spark.conf.set(STATE_STORE_CONF, STATE_STORE_PROVIDERS[self.pipeline.runtime.state_store])
        for key, value in query_conf(self.pipeline).items():
            spark.conf.set(key, value)
        clear_interrupted_writes(self.checkpoint / "spark")
        (self.checkpoint / WAKE_FILE).unlink(missing_ok=True)
        new_query = not has_batches(self.checkpoint / "spark")
        if self.state_url and not new_query:
            ends = committed_ends(self.checkpoint / "spark")
            carry_local_state(self.checkpoint, self.state_url, ends)
        plan = build_stream(spark, self.pipeline, self.checkpoint, new_query, self.state_url)
        self.stats.initial_offsets = plan.initial_offsets
        self.arrow_schema = plan.arrow_schema
        self.batch_join = plan.batch_join
        # On the pass-through, Spark counts chunks: the sink counts the source's rows.
        self.stats.rows_from_sink = plan.arrow_schema is not None
        self.stats.counts_filtered = self.pipeline.join is None and self.pipeline.filter is not None
        self.ledger = Ledger(
            self.checkpoint,
            self.pipeline.join is None,
            self.stats.counts_filtered,
            self.stats.rows_from_sink,
        ).open(last_committed(self.checkpoint / "spark"))
        log.info("pipeline %s: data path %s", self.pipeline.name, plan.data_path)
        writer = (
            plan.frame.writeStream.queryName(
                source_name(self.pipeline, self.pipeline.primary_source)
            )
            .foreachBatch(self._write_batch)
            .option("checkpointLocation", str(self.checkpoint / "spark"))
        )
        if until_caught_up:
            writer = writer.trigger(availableNow=True)
        else:
            delay = self.pipeline.sink.max_delay_time.total_seconds()
            writer = writer.trigger(processingTime=f"{max(delay, 0.1)} seconds")
        return writer.start()

    # ------------------------------------------------------------------ run

    def run(self, until_caught_up: bool = False) -> RunResult:
        """Run until caught up (availableNow), until `stop()`, or until the query fails.

        A stop during start-up ends it at once; a stop while running lets the micro-batch in
        flight finish, unless its sink is retrying (then the batch is left uncommitted).
        """
        self.checkpoint.mkdir(parents=True, exist_ok=True)
        # the JVM starts (seconds) while the sink is checked and prepared
        session = in_background(
            self._session
            or (
                lambda: spark_session(
                    f"streamsift-{self.pipeline.name}",
                    master=self.master,
                    verbose=self.verbose,
                    spark_conf=self.pipeline.runtime.spark_conf,
                )
            ),
            "spark-session-start",
        )
        self._began = time.monotonic()
        try:
            with self._stop.interruptible():
                self.wait_for_sink()
                self.prepare_sink()
            self._mark("sink_ready")
            spark = session.result()
            self._mark("session_ready")
        except (StopRequested, RetryInterrupted):
            return self._stopped(
                f"stopped during start-up{_during(self._retrying)}; nothing was read"
            )
        spark.streams.addListener(self._progress)
        try:
            return self._run_query(spark, until_caught_up)
        finally:
            spark.streams.removeListener(self._progress)

    def _run_query(self, spark: Any, until_caught_up: bool) -> RunResult:
        try:
            with self._stop.interruptible():
                query = self._build_query(spark, until_caught_up)
            self._mark("query_started")
        except (StopRequested, RetryInterrupted):
            return self._stopped(
                f"stopped during start-up{_during(self._retrying)}; nothing was read"
            )
        try:
            abandoned = self._watch(query)
            error = query.exception()
        except Exception:
            with contextlib.suppress(Exception):
                query.stop()
            raise
        if self._stop.is_set() and (abandoned or was_interrupted(error)):
            why = (
                "by terminate"
                if self._aborting
                else "while the sink was retrying"
                if self._retrying
                else "at runtime.stop_timeout"
            )
            return self._stopped(
                f"stopped {why}: the micro-batch in flight was not committed; the next run "
                "redoes it from the checkpoint"
            )
        if error is not None:
            raise explain_failure(error)
        if self._stop.is_set():
            return self._stopped(None)
        return RunResult(self.stats.as_dict(), caught_up=until_caught_up)

    def _watch(self, query: Any) -> bool:
        """Follow the query until it ends or a stop is requested; True if the stop had to
        abandon a micro-batch whose sink was retrying.

        It waits for the query's end on the listener bus, looking at the stop flag between
        two waits, so a quiet run makes no call into the JVM between two of its rare
        `isActive` checks (in a host of many pipelines, such calls every second per run were
        a share of the idle CPU).
        """
        abandoned = False
        run_id = str(query.runId)
        polled = checked = time.monotonic()
        while True:
            if self._stop.is_set():
                abandoned = self._stop_gracefully(query)
                break
            if self._progress.wait_terminated(run_id, STOP_LOOK_S):
                break
            now = time.monotonic()
            if now - polled >= WATCH_S:
                polled = now
                self._poll(query, run_id=run_id)
            if now - checked >= ACTIVE_CHECK_S:
                checked = now
                if not query.isActive:
                    break
        self._poll(query, final=True, run_id=run_id)
        return abandoned

    def _stopped(self, note: str | None) -> RunResult:
        return RunResult(self.stats.as_dict(), caught_up=False, stopped=True, note=note)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def report(self) -> dict[str, Any]:
        """The run's counts and its last micro-batch, as status.json and /metrics show them."""
        progress = self.last_progress or {}
        return {
            "stats": self.stats.as_dict(),
            "totals": None if self.ledger is None else self.ledger.totals(),
            "lag_by_partition": lag_by_partition(progress),
            "last_batch_at": progress.get("timestamp"),
            "last_batch_duration_ms": progress.get("batchDuration"),
            "state_size": self.state_size.report(self.last_progress),
            "startup_s": dict(self.startup),
        }

    def _mark(self, step: str) -> None:
        self.startup.setdefault(step, round(time.monotonic() - self._began, 3))

    def stop(self) -> None:
        """Ask the run to end after the micro-batch in flight (safe from a signal handler;
        from one interrupting this run's start-up, it raises StopRequested there)."""
        self._stop.set()

    def abort(self) -> None:
        """End the run at once: the micro-batch in flight is given up uncommitted (the next
        run redoes it, exactly once). The service's terminate, for a pipeline in its host."""
        self._aborting = True
        self._stop.set()

    def _stop_gracefully(self, query: Any) -> bool:
        """Let the batch in flight finish, then stop; stop at once while the sink retries, and
        after `runtime.stop_timeout` in any case (the batch's rows are not committed, so a
        later run redoes it). True if it gave the batch up."""
        timeout_s = self.pipeline.runtime.stop_timeout.total_seconds()
        deadline = time.monotonic() + timeout_s
        abandoned = False
        with contextlib.suppress(OSError):  # an idle source's wait for news ends at once
            (self.checkpoint / WAKE_FILE).touch()
        while query.isActive and query.status.get("isTriggerActive"):
            if self._aborting or self.stats.status is not None or time.monotonic() > deadline:
                abandoned = True
                break
            time.sleep(0.1)
        if abandoned and self.stats.status is None:
            log.warning(
                "pipeline %s: the micro-batch in flight did not finish within "
                "runtime.stop_timeout (%.0fs): giving it up uncommitted",
                self.pipeline.name,
                timeout_s,
            )
        try:
            query.stop()
        except Exception as exc:  # noqa: BLE001 - py4j's error: the query's thread is stuck
            log.warning("pipeline %s: the query did not stop in time: %s", self.pipeline.name, exc)
            abandoned = True
        return abandoned

    def _poll(self, query: Any, final: bool = False, run_id: str | None = None) -> None:
        """Fold the progress reports Spark's listener bus delivered since the last poll into
        the stats. `final` (the query has ended): first wait, briefly, for the bus to deliver
        the query's last reports, and read them from the query itself if it does not."""
        run_id = run_id or str(query.runId)
        if final and not self._progress.wait_terminated(run_id, PROGRESS_DRAIN_S):
            for progress in query.recentProgress:
                self._progress.add(str(progress.runId), json.loads(progress.json))
        had_batches = self.stats.batches
        for progress in self._progress.take(run_id):
            self.stats.ingest(progress)
            if self.ledger is not None:
                self.ledger.record_report(progress)
            self.last_progress = progress
        if not had_batches and self.stats.batches:
            self._mark("first_batch_done")
            if self.on_first_batch is not None:
                self.on_first_batch()
        if self.on_progress:
            self.on_progress(self.stats)

    def _set_status(self, status: str | None) -> None:
        self.stats.status = status

    def _sink_status(self, status: RetryStatus | None) -> None:
        """The ClickHouse writer's retry status (None: recovered): counted, and shown."""
        self._retrying = status
        if status is not None:
            self.stats.add_retry(status.operation)
        self._set_status(None if status is None else status.text)

    # ------------------------------------------------------------------ sink side

    def _query_id_from_checkpoint(self) -> str:
        if self._query_id is None:
            meta = (self.checkpoint / "spark" / "metadata").read_text()
            self._query_id = json.loads(meta.splitlines()[0])["id"]
        return self._query_id

    def _write_batch(self, df: Any, batch_id: int) -> None:
        """foreachBatch: write rows and dead letters (see `_write`). A batch that a stop gives
        up fails with a short error: Spark runs a regex over a failed foreachBatch's text to
        tell an interruption, and on a long py4j trace that regex overflows the JVM's stack."""
        try:
            self._write(df, batch_id)
        except Exception:
            if self._stop.is_set():
                raise RetryInterrupted(
                    f"micro-batch {batch_id} given up uncommitted: a stop was requested"
                ) from None
            raise

    def _write(self, df: Any, batch_id: int) -> None:
        """Write rows and dead letters, on the driver or on the executors (see __init__)."""
        if self.batch_join is not None:
            df = self.batch_join.frame(df, batch_id)
        batch = BatchToWrite(
            df,
            self._query_id_from_checkpoint(),
            batch_id,
            self.arrow_schema,
            self.batch_writer,
            None if self.drift is None else lambda flagged: self._add_columns(flagged, batch_id),
        )
        counts = self.strategy.write(batch)
        if self.batch_join is not None:
            counts = replace(counts, late_dropped=self.batch_join.late(batch_id))
        if self.ledger is not None:  # before Spark commits the batch (engine/ledger.py)
            self.ledger.record_sink(batch_id, self._read_of(batch_id), counts)
        self.stats.add_counts(counts, batch_id)

    def _read_of(self, batch_id: int) -> int | None:
        """The messages micro-batch `batch_id` reads, from Spark's offset log (None when its
        start is not known: a batch 0 redone by a later run)."""
        spark = self.checkpoint / "spark"
        ends = batch_ends(spark, batch_id)
        if batch_id == 0:
            start = self.stats.initial_offsets or None
        else:
            start = batch_ends(spark, batch_id - 1)
        if ends is None or start is None:
            return None
        return sum(max(0, end - start.get(key, 0)) for key, end in ends.items())

    def _add_columns(self, flagged: Callable[[], pa.Table], batch_id: int) -> BatchWriter:
        """Under add_columns, extend the table and the mapping by the batch's new fields
        before any of its rows is written (engine/new_columns.py); the writer to write with."""
        assert self.drift is not None
        rows = flagged()
        if rows.num_rows and self.drift.extend(rows, batch_id):
            self.pipeline = self.drift.pipeline
            self.batch_writer = replace(self.batch_writer, pipeline=self.pipeline)
        return self.batch_writer

    def describe_sink(self) -> str:
        return describe(self.pipeline.sink.clickhouse)


def in_background(work: Callable[[], Any], name: str) -> Future[Any]:
    """Run `work` on a daemon thread (a stop during start-up must not wait for it at exit);
    the future hands its value or error to whoever waits."""
    future: Future[Any] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - raised by the waiter's future.result()
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def _during(retrying: RetryStatus | None) -> str:
    """', while connecting to ...': the sink action a stop during start-up interrupted."""
    return "" if retrying is None else f", while {retrying.what}"
