"""Assembling and running one pipeline as one Spark structured streaming query.

    Kafka source (parse + dedup on executors) ──► foreachBatch ──► ClickHouse table
                                                             └──► DLQ table

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
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.errors import StreamingQueryException

from streamsift.config.models import Pipeline
from streamsift.engine.arrow_passthrough import flagged_of_chunks, unpack, unpack_batches
from streamsift.engine.batch_writer import COUNTS_SCHEMA, BatchWriter
from streamsift.engine.checkpoint import clear_interrupted_writes, committed_ends, has_batches
from streamsift.engine.errors import PipelineFailed
from streamsift.engine.faults import fault_from_environment
from streamsift.engine.new_columns import (
    SchemaDrift,
    drift_enabled,
    flagged_in,
    flagged_rows,
    in_kafka_order,
)
from streamsift.engine.progress import RunStats, SinkCounts, lag_by_partition
from streamsift.engine.progress_feed import ProgressFeed
from streamsift.engine.query import build_stream, data_path_of, source_name
from streamsift.engine.registry_fields import require_fields
from streamsift.engine.signals import StopFlag, StopRequested
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.client import describe
from streamsift.sinks.clickhouse.ddl import create_table_sql, quote
from streamsift.sinks.dlq import DLQ_COLUMNS
from streamsift.sinks.errors import SinkConfigError, SinkPermanentError, SinkTransientError
from streamsift.sinks.retry import RetryInterrupted
from streamsift.sources.errors import SourceError, SourceUnavailable
from streamsift.spark_host.errors import RuntimeConfigError
from streamsift.spark_host.query_conf import query_conf
from streamsift.spark_host.session import (
    STATE_STORE_CONF,
    STATE_STORE_PROVIDERS,
    is_local_master,
    resolve_master,
    spark_session,
)
from streamsift.transforms.dedup_store import PartitionStore, seed_from_local

EXECUTOR_WATCH_S = 2.0  # how often the driver pings ClickHouse while executors insert
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
    ClickHouse always does) instead of from the executors. `last_progress` holds Spark's
    latest progress report (a dict), for a status that shows more than `stats`.
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
        self.state_url = dedup_state_location(pipeline, self.master, self.checkpoint)
        self._stop = stop or StopFlag()
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
        # Set per query: the output frame's Arrow schema on the pass-through (its rows carry
        # serialized chunks; engine/arrow_passthrough.py), else None (the row path).
        self.arrow_schema: pa.Schema | None = None
        self._progress = ProgressFeed()

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
            raise PipelineFailed(
                str(exc),
                "is the server up, and are sink.clickhouse.host and port right? "
                "sink.connect_timeout sets how long start-up waits",
            ) from None

    # ------------------------------------------------------------------ setup

    def prepare_sink(self) -> None:
        """Create or check the table and the DLQ table before any data moves."""
        sink = self.pipeline.sink
        columns = [(m.column, m.type) for m in sink.mapping]
        if self.drift is not None and self.writer.table_exists(sink.table):
            self.drift.ensure_columns()
        version = self.pipeline.replacing_version_column  # dedup mode last
        if version is not None and sink.create_table:
            self.writer.command(
                create_table_sql(
                    sink.clickhouse.database,
                    sink.table,
                    columns,
                    self.pipeline.table_order_by,
                    engine=f"ReplacingMergeTree({quote(version)})",
                )
            )
        self.writer.prepare_table(
            sink.table,
            columns,
            create=sink.create_table,
            order_by=self.pipeline.table_order_by,
            on_missing_window=sink.on_missing_dedup_window,
        )
        self.writer.prepare_table(
            self.pipeline.dlq_table,
            DLQ_COLUMNS,
            create=True,
            order_by=("topic", "partition", "offset"),
            on_missing_window=sink.on_missing_dedup_window,
        )

    def _build_query(self, spark: Any, until_caught_up: bool) -> Any:
        # set for every query: one session may run pipelines with different choices
        spark.conf.set(STATE_STORE_CONF, STATE_STORE_PROVIDERS[self.pipeline.runtime.state_store])
        for key, value in query_conf(self.pipeline).items():
            spark.conf.set(key, value)
        clear_interrupted_writes(self.checkpoint / "spark")
        new_query = not has_batches(self.checkpoint / "spark")
        if self.state_url and not new_query:
            carry_local_dedup_state(self.checkpoint, self.state_url)
        plan = build_stream(spark, self.pipeline, self.checkpoint, new_query, self.state_url)
        self.stats.initial_offsets = plan.initial_offsets
        self.arrow_schema = plan.arrow_schema
        # On the pass-through, Spark counts chunks: the sink counts the source's rows.
        self.stats.rows_from_sink = plan.arrow_schema is not None
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
            lambda: spark_session(
                f"streamsift-{self.pipeline.name}",
                master=self.master,
                verbose=self.verbose,
                spark_conf=self.pipeline.runtime.spark_conf,
            ),
            "spark-session-start",
        )
        try:
            with self._stop.interruptible():
                self.wait_for_sink()
                self.prepare_sink()
            spark = session.result()
        except (StopRequested, RetryInterrupted):
            return self._stopped(
                f"stopped during start-up{_during(self.stats.status)}; nothing was read"
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
        except (StopRequested, RetryInterrupted):
            return self._stopped(
                f"stopped during start-up{_during(self.stats.status)}; nothing was read"
            )
        try:
            abandoned = self._watch(query)
            error = query.exception()
        except Exception:
            with contextlib.suppress(Exception):
                query.stop()
            raise
        if self._stop.is_set() and (abandoned or _was_interrupted(error)):
            return self._stopped(
                "stopped while the sink was retrying: the micro-batch in flight was not "
                "committed; the next run redoes it from the checkpoint"
            )
        if error is not None:
            raise explain_failure(error)
        if self._stop.is_set():
            return self._stopped(None)
        return RunResult(self.stats.as_dict(), caught_up=until_caught_up)

    def _watch(self, query: Any) -> bool:
        """Follow the query until it ends or a stop is requested; True if the stop had to
        abandon a micro-batch whose sink was retrying."""
        abandoned = False
        while query.isActive:
            if self._stop.is_set():
                abandoned = self._stop_gracefully(query)
                break
            try:
                query.awaitTermination(1.0)
            except StreamingQueryException:
                break  # reported through query.exception()
            self._poll(query)
        self._poll(query, final=True)
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
            "lag_by_partition": lag_by_partition(progress),
            "last_batch_at": progress.get("timestamp"),
            "last_batch_duration_ms": progress.get("batchDuration"),
        }

    def stop(self) -> None:
        """Ask the run to end after the micro-batch in flight (safe from a signal handler;
        from one interrupting this run's start-up, it raises StopRequested there)."""
        self._stop.set()

    def _stop_gracefully(self, query: Any, timeout_s: float = 120.0) -> bool:
        """Let the batch in flight finish, then stop; stop at once while the sink retries
        (its rows are not committed, so a later run redoes the batch). True if it did so."""
        deadline = time.monotonic() + timeout_s
        abandoned = False
        while query.isActive and query.status.get("isTriggerActive"):
            if self.stats.status is not None or time.monotonic() > deadline:
                abandoned = True
                break
            time.sleep(0.1)
        query.stop()
        return abandoned

    def _poll(self, query: Any, final: bool = False) -> None:
        """Fold the progress reports Spark's listener bus delivered since the last poll into
        the stats. `final` (the query has ended): first wait, briefly, for the bus to deliver
        the query's last reports, and read them from the query itself if it does not."""
        if final and not self._progress.wait_terminated(query.runId, PROGRESS_DRAIN_S):
            for progress in query.recentProgress:
                self._progress.add(str(progress.runId), json.loads(progress.json))
        for progress in self._progress.take(query.runId):
            self.stats.ingest(progress)
            self.last_progress = progress
        if self.on_progress:
            self.on_progress(self.stats)

    def _set_status(self, status: str | None) -> None:
        self.stats.status = status

    def _sink_status(self, status: str | None) -> None:
        """The ClickHouse writer's retry status: counted as a retry, and shown."""
        if status is not None:
            self.stats.add_retry(retried_operation(status))
        self._set_status(status)

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
        qid = self._query_id_from_checkpoint()
        arrow = self.arrow_schema
        if self.driver_inserts:
            data = df.toArrow() if arrow is None else unpack(df.toArrow(), arrow)
            self._add_columns(lambda: flagged_in(data), batch_id)
            counts = self.batch_writer.write(data, qid, batch_id, "driver")
        else:
            if self.drift is not None:  # read the batch once for both passes
                df = df.persist()
                self._add_columns(
                    lambda: flagged_rows(df) if arrow is None else flagged_chunks(df), batch_id
                )
            writer = self.batch_writer
            with self._status_of_executor_inserts():
                counts = sum(
                    (
                        SinkCounts.of(r.written, r.dlq, r.late, r.extra)
                        for r in _write_on_executors(df, writer, qid, batch_id, arrow)
                    ),
                    SinkCounts(),
                )
            if self.drift is not None:
                df.unpersist()
        self.stats.add_counts(counts, batch_id)

    def _add_columns(self, flagged: Callable[[], pa.Table], batch_id: int) -> None:
        """Under add_columns, extend the table and the mapping by the batch's new fields
        before any of its rows is written (engine/new_columns.py)."""
        if self.drift is None:
            return
        rows = flagged()
        if rows.num_rows and self.drift.extend(rows, batch_id):
            self.pipeline = self.drift.pipeline
            self.batch_writer = replace(self.batch_writer, pipeline=self.pipeline)

    @contextlib.contextmanager
    def _status_of_executor_inserts(self) -> Iterator[None]:
        """Executors retry their inserts out of the driver's sight; while they insert, the
        driver pings ClickHouse itself and shows in the status when it does not answer."""
        done = threading.Event()
        shown = threading.Event()
        where = describe(self.pipeline.sink.clickhouse)

        def watch() -> None:
            while not done.wait(EXECUTOR_WATCH_S):
                answers = self.writer.answers()
                if done.is_set():
                    break
                if not answers:
                    self._set_status(
                        f"ClickHouse at {where} does not answer; the executors are retrying "
                        "their inserts with back-off"
                    )
                    shown.set()
                elif shown.is_set():
                    self._set_status(None)
                    shown.clear()

        watcher = threading.Thread(target=watch, name="clickhouse-watch", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join(15)
            if shown.is_set():
                self._set_status(None)

    def describe_sink(self) -> str:
        return describe(self.pipeline.sink.clickhouse)


def _write_on_executors(
    df: Any, writer: BatchWriter, qid: str, batch_id: int, arrow: pa.Schema | None = None
) -> list[Any]:
    """Each Spark partition inserts its own rows (tokens carry the partition index); with
    `arrow`, the pass-through's chunks, unpacked to that schema."""

    def write_partition(batches: Any) -> Any:
        from pyspark import TaskContext

        part = f"p{TaskContext.get().partitionId()}"
        batches = list(batches)
        counts = SinkCounts()
        retries: list[str] = []  # this executor's copy of the writer reports its retries here
        writer.writer.on_status = lambda status: status is not None and retries.append(status)
        if arrow is not None:
            batches = list(unpack_batches(batches))
        if batches:
            table = pa.Table.from_batches(batches, schema=arrow)
            counts = writer.write(table, qid, batch_id, part)
        counts.retries = len(retries)
        row = {"written": counts.written, "dlq": counts.dlq, "late": counts.late}
        yield pa.RecordBatch.from_pylist([{**row, "extra": counts.as_json()}], schema=COUNTS_SCHEMA)

    return df.mapInArrow(
        write_partition, "written long, dlq long, late long, extra string"
    ).collect()


def flagged_chunks(df: Any) -> pa.Table:
    """`flagged_rows` of a pass-through frame: filtered on the executors, in Kafka order."""
    flagged = df.mapInArrow(
        flagged_of_chunks, "_topic string, _partition int, _offset bigint, _raw binary"
    ).toArrow()
    return in_kafka_order(flagged)


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


def retried_operation(status: str) -> str:
    """What a retry status line of the ClickHouse writer (sinks/retry.py) was retrying."""
    for prefix, operation in RETRIED_OPERATIONS:
        if status.startswith(prefix):
            return operation
    return "other"


# The `what` each ClickHouse writer action retries under (sinks/clickhouse/client.py)
RETRIED_OPERATIONS = (
    ("insert into", "insert"),
    ("connecting to", "connect"),
    ("ClickHouse command", "command"),
    ("ClickHouse query", "query"),
)


def dedup_state_location(pipeline: Pipeline, master: str, checkpoint: Path) -> str | None:
    """Where the dedup state is shared from (None: a local run's RocksDB in the checkpoint).

    `runtime.state_location` when set; on a cluster, else the checkpoint's `state` directory,
    which must then be a directory every executor sees (a shared mount)."""
    if pipeline.runtime.state_location:
        return pipeline.runtime.state_location
    if is_local_master(master):
        return None
    return str(checkpoint / "state")


def carry_local_dedup_state(checkpoint: Path, state_url: str) -> int:
    """A pipeline that ran locally and now shares its dedup state (a cluster, or
    `runtime.state_location` set): upload each partition's local RocksDB state once, so the
    move lets no duplicate through. Returns how many partitions it carried over."""
    ends = committed_ends(checkpoint / "spark")
    carried = 0
    for local in sorted(checkpoint.glob("dedup*/*/p[0-9]*")):
        end = ends.get(f"{local.parent.name}/{local.name[1:]}")
        where = f"{local.parent.parent.name}/{local.parent.name}/{local.name}"
        if end is not None and seed_from_local(PartitionStore(state_url, where), local, end):
            carried += 1
    if carried:
        log.info("carried the local dedup state of %d partition(s) over to %s", carried, state_url)
    return carried


def _during(status: str | None) -> str:
    """', while connecting to ...' from a retry status line, for a stop that interrupted it."""
    if not status:
        return ""
    return ", while " + status.split(": retrying")[0]


def _was_interrupted(error: Any) -> bool:
    """Did the query fail because a stop interrupted its sink's retries or its jobs?"""
    if error is None:
        return False
    text = str(getattr(error, "desc", None) or error)
    return "RetryInterrupted" in text or "cancelled" in text.lower()


# Our errors that reach the driver as text inside a py4j error, from a batch or an executor.
_ERRORS_RAISED_IN_BATCHES = (
    SourceUnavailable,
    SourceError,
    SinkConfigError,
    SinkTransientError,
    SinkPermanentError,
    PipelineFailed,
)


def explain_failure(error: Any) -> PipelineFailed:
    """One readable line (and a hint) for a failed streaming query, not a JVM trace."""
    text = str(getattr(error, "desc", None) or error)
    for cls in _ERRORS_RAISED_IN_BATCHES:
        marker = f"{cls.__name__}: "
        idx = text.rfind(marker)
        if idx >= 0:
            return PipelineFailed(text[idx + len(marker) :].splitlines()[0])
    first = next((ln for ln in text.splitlines() if ln.strip()), text)
    return PipelineFailed(first[:500], "run with --verbose for Spark's full log")
