"""`PipelineService`: the service core every face of `streamsift serve` calls.

It owns a data dir:

    <data_dir>/service.db              pipelines, every version of their documents, status history
    <data_dir>/secret.key              the key of the secrets at rest (unless STREAMSIFT_SECRET_KEY)
    <data_dir>/pipelines/<id>/         a pipeline's worker: status.json, worker.log, checkpoints/
    <data_dir>/endpoints/              the embedded ClickHouse endpoints it runs

Requests (create, stop, terminate, resume, edit, delete) change a pipeline's state along the
lifecycle (service/lifecycle.py) and act on its worker process (service/supervisor.py); what
the workers do (running, stopped, failed) comes back through the supervisor's callbacks. A
pipeline writing into an embedded ClickHouse writes through that directory's endpoint
(service/endpoints.py), which the service also queries for dead letters.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.loader import is_glassflow
from streamsift.config.models import Isolation, Pipeline
from streamsift.engine.dead_letters import DeadLetters, open_dead_letters
from streamsift.engine.registry_fields import glassflow_with_registry_fields, parse_resolved
from streamsift.errors import ConflictError, StreamsiftError
from streamsift.service.database import PipelineRecord, ServiceDatabase, StatusChange
from streamsift.service.dlq_pending import PendingCounts
from streamsift.service.document_policy import DocumentPolicy
from streamsift.service.edits import keep_masked_secrets, state_changes
from streamsift.service.endpoints import EmbeddedEndpoints, served_document
from streamsift.service.host_link import host_memory, placement
from streamsift.service.lifecycle import (
    DesiredState,
    State,
    can_transition,
    check_at_rest,
    check_transition,
)
from streamsift.service.otlp_receiver import OtlpReceiver, ServiceOtlp, otlp_source
from streamsift.service.relaunch import Relaunches
from streamsift.service.reset import ServicePlaces, reset_checkpoint
from streamsift.service.run_events import RunEvents
from streamsift.service.supervisor import Supervisor
from streamsift.spark_host.session import is_local_master, resolve_master

__all__ = ["PipelineRecord", "PipelineService", "PipelineStatus", "StatusChange"]

STOP_ALL_TIMEOUT_S = 120.0
log = logging.getLogger("streamsift.service")


@dataclass(frozen=True)
class PipelineStatus:
    """A pipeline's record and what its worker last reported about the current run."""

    id: str
    state: State
    desired_state: DesiredState
    version: int
    error: str | None
    error_at: datetime | None
    hint: str | None = None
    worker_state: str | None = None  # starting, running, stopping, stopped, failed
    pid: int | None = None
    read: int = 0
    written: int = 0
    duplicates: int = 0
    dlq: int = 0
    late: int = 0
    late_dropped: int = 0
    filtered: int = 0
    batches: int = 0
    rows_per_second: float | None = None  # read per second of micro-batch time, this run
    lag: int | None = None
    lag_by_partition: dict[str, int] = field(default_factory=dict)
    last_batch_at: str | None = None
    last_batch_duration_ms: int | None = None
    reported_at: str | None = None
    retry: dict[str, Any] | None = None  # the retry under way: reason, attempt, next try
    dlq_pending: int | None = None  # dead letters pending in the DLQ table (all runs)
    dlq_pending_at: datetime | None = None  # when that was counted
    isolation: str | None = None  # host or process (service/host_link.py placement)
    state_size: dict[str, Any] | None = None  # engine/state_size.py


class PipelineService(RunEvents):
    """Runs and answers for the pipelines of one data dir (see the module docstring).

    `driver_inserts`: pipelines whose embedded sink the service serves through an endpoint
    insert from the driver (over HTTP), as `streamsift run` does into an embedded ClickHouse,
    rather than from the executors, which was slower (measured in docs/operations.md,
    "Service").

    A document is parsed once where it comes in (`judged` for create, the stored version for
    the other requests, `_opened`) and its model handed down with it; it is parsed again only
    where it changes (the endpoint or bundled broker a worker is served, secrets restored by
    an edit, registry fields fetched).
    """

    def __init__(
        self,
        data_dir: Path,
        driver_inserts: bool = True,
        otlp: OtlpReceiver | None = None,
        policy: DocumentPolicy | None = None,
        retry_attempts: int | None = None,
        warm_host: bool = False,
        isolation: Isolation = Isolation.HOST,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        # `warm_host`: start the pipeline host with the service (`serve` does), not with the
        # first pipeline placed there; `isolation` PROCESS puts every pipeline in a process of
        # its own (`serve --isolation process`)
        self.warm_host = warm_host
        self.isolation = isolation
        self.driver_inserts = driver_inserts
        # retries of a transient fault before a pipeline that sets none fails (None: no limit)
        self.retry_attempts = retry_attempts
        # What a document may name (paths, Spark settings, token providers): by default,
        # paths inside the data dir only (service/document_policy.py).
        self.policy = policy or DocumentPolicy(self.data_dir)
        # The OTLP receiver of its OTLP pipelines, started with the first of them, if any.
        self.otlp = ServiceOtlp(otlp, self.data_dir) if otlp is not None else None
        self.database = ServiceDatabase(self.data_dir)
        self.endpoints = EmbeddedEndpoints(self.data_dir)
        self.supervisor = Supervisor(self.data_dir, self._on_state, self._on_exit)
        self.relaunches = Relaunches(self._relaunch)
        self.dlq_pending = PendingCounts(self._count_pending)
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ service

    def start(self) -> None:
        """Adopt the workers a previous server left running, restart the pipelines whose
        desired state is running but whose worker is gone, then watch them all."""
        with self._lock:
            for record in self.database.list():
                if self._recover(record) is not None:
                    continue  # launched again: `_launch` routed its OTLP data already
                try:
                    doc, pipeline = self._opened(record.id)
                    self._route_otlp(record.id, doc, pipeline)
                except (StreamsiftError, KafkaException) as exc:
                    log.warning("pipeline %s: no OTLP route: %s", record.id, exc)
        if (
            self.warm_host
            and self.isolation is Isolation.HOST
            and is_local_master(resolve_master())
        ):
            self.supervisor.warm_host(host_memory(len(self.database.list())))
        self.supervisor.start()

    def close(self, stop_all: bool = False) -> None:
        """Stop watching. Running workers keep running for the next server to adopt, unless
        `stop_all`: then each stops gracefully (terminated if it takes too long)."""
        if stop_all:
            for pipeline_id in self.supervisor.running():
                state = self.database.get(pipeline_id).state
                if state is State.STOPPING:
                    continue  # on its way already
                if can_transition(state, State.STOPPING):
                    self.stop(pipeline_id)
                elif can_transition(state, State.TERMINATING):  # still starting: nothing to lose
                    self.terminate(pipeline_id)
            deadline = time.monotonic() + STOP_ALL_TIMEOUT_S
            while self.supervisor.running() and time.monotonic() < deadline:
                time.sleep(0.2)
            for pipeline_id in self.supervisor.running():
                self.terminate(pipeline_id)
        self.relaunches.close()
        self.supervisor.close()
        if not self.supervisor.running():
            self.endpoints.stop_all()
        if self.otlp is not None:
            self.otlp.close()
        self.database.close()

    # ------------------------------------------------------------------ requests

    def create(self, doc: dict[str, Any]) -> PipelineRecord:
        """Validate and store a new pipeline (id = its name), then start it."""
        doc, pipeline = judged(doc, self.policy)
        with self._lock:
            self.database.add(pipeline.name, doc, pipeline)
            self._launch(pipeline.name, pipeline)
            return self.database.get(pipeline.name)

    def list(self) -> list[PipelineRecord]:
        return self.database.list()

    def get(self, pipeline_id: str) -> PipelineRecord:
        return self.database.get(pipeline_id)

    def document(self, pipeline_id: str, reveal_secrets: bool = False) -> dict[str, Any]:
        return self.database.document(pipeline_id, reveal_secrets=reveal_secrets)

    def pipeline(self, pipeline_id: str) -> Pipeline:
        """The pipeline's current document as its model, secrets masked: for answers."""
        return parse_pipeline(self.document(pipeline_id))

    def history(self, pipeline_id: str) -> list[StatusChange]:
        return self.database.history(pipeline_id)

    def edit(
        self, pipeline_id: str, doc: dict[str, Any], reset_state: bool = False
    ) -> PipelineRecord:
        """Store a new version of a stopped pipeline's document. A change the checkpoint's
        state depends on (topics, dedup, join keys) needs `reset_state`, which starts the
        pipeline afresh at its next resume."""
        with self._lock:
            check_at_rest(pipeline_id, self.database.get(pipeline_id).state, "edited")
            current_doc, current = self._opened(pipeline_id)
            doc = self.policy.anchored_document(_native(doc))
            new = parse_pipeline(doc)  # its shape: secrets sent back masked are restored next
            if new.name != pipeline_id:
                raise ConfigError(
                    f"name: a pipeline keeps its name ({pipeline_id}); create a new pipeline "
                    "for another one"
                )
            kept = keep_masked_secrets(doc, new, current_doc, current)
            if kept != doc or takes_registry_fields(new):
                new = parse_resolved(kept)  # with the secrets in clear and the registry's fields
            doc = kept
            self.policy.check(new)
            changes = state_changes(current, new)
            if changes and not reset_state:
                raise ConflictError(
                    f"pipeline {pipeline_id}: this edit changes what its checkpoint's state is "
                    f"built on ({'; '.join(changes)}): resuming would mix old and new state",
                    "edit with reset_state=true to start afresh (offsets and dedup/join state "
                    "are dropped; the pipeline reads its topics again from start_from)",
                    details={"changes": changes},
                )
            if reset_state:
                places = ServicePlaces(self.data_dir, self.policy, self.database, self.supervisor)
                reset_checkpoint(places, pipeline_id, current)
            self.database.add_version(pipeline_id, doc, new)
            return self.database.get(pipeline_id)

    def stop(self, pipeline_id: str) -> PipelineRecord:
        """Graceful stop: the worker finishes its micro-batch in flight, then exits."""
        with self._lock:
            check_transition(pipeline_id, self.database.get(pipeline_id).state, State.STOPPING)
            self.relaunches.settled(pipeline_id)
            self.database.set_state(pipeline_id, State.STOPPING, desired=DesiredState.STOPPED)
            if self.supervisor.is_running(pipeline_id):
                self.supervisor.stop(pipeline_id)
            else:
                self.database.set_state(pipeline_id, State.STOPPED, note="no worker was running")
            return self.database.get(pipeline_id)

    def terminate(self, pipeline_id: str) -> PipelineRecord:
        """Stop at once: the worker's whole process tree is killed. The checkpoint decides
        what the next run redoes (a micro-batch in flight is redone, exactly once)."""
        with self._lock:
            check_transition(pipeline_id, self.database.get(pipeline_id).state, State.TERMINATING)
            self.relaunches.settled(pipeline_id)
            self.database.set_state(pipeline_id, State.TERMINATING, desired=DesiredState.STOPPED)
            self.supervisor.terminate(pipeline_id)
            self.database.set_worker_pid(pipeline_id, None)
            return self.database.set_state(pipeline_id, State.STOPPED, note="terminated")

    def resume(self, pipeline_id: str) -> PipelineRecord:
        """Start a stopped or failed pipeline again, from its checkpoint."""
        with self._lock:
            check_transition(pipeline_id, self.database.get(pipeline_id).state, State.RESUMING)
            self.database.set_state(pipeline_id, State.RESUMING, desired=DesiredState.RUNNING)
            self._launch(pipeline_id)
            return self.database.get(pipeline_id)

    def delete(self, pipeline_id: str) -> None:
        """Forget a stopped pipeline: its versions, history, checkpoint and logs."""
        with self._lock:
            check_at_rest(pipeline_id, self.database.get(pipeline_id).state, "deleted")
            self.database.delete(pipeline_id)
            self.dlq_pending.forget(pipeline_id)
            if self.otlp is not None:
                self.otlp.forget(pipeline_id)
            shutil.rmtree(self.supervisor.directory(pipeline_id), ignore_errors=True)

    def status(self, pipeline_id: str) -> PipelineStatus:
        record = self.database.get(pipeline_id)
        report = self.worker_report(pipeline_id)
        stats = report.get("stats") or {}
        totals = report.get("totals") or stats  # over the pipeline's life (engine/ledger.py)
        running = self.supervisor.is_running(pipeline_id)
        # counted again when the run has written dead letters since (or after a while)
        written = int(totals.get("dlq") or 0) if running else None
        pending, pending_at = self.dlq_pending.get(pipeline_id, refresh=running, written=written)
        counts = {
            k: int(totals.get(k) or 0)
            for k in (
                "read",
                "written",
                "duplicates",
                "dlq",
                "late",
                "late_dropped",
                "filtered",
                "batches",
            )
        }
        return PipelineStatus(
            id=record.id,
            state=record.state,
            desired_state=record.desired_state,
            version=record.version,
            error=record.error,
            error_at=record.error_at,
            hint=report.get("hint"),
            worker_state=report.get("state"),
            pid=report.get("pid"),
            rows_per_second=throughput(stats),
            lag=stats.get("lag"),
            lag_by_partition=dict(report.get("lag_by_partition") or {}),
            last_batch_at=report.get("last_batch_at"),
            last_batch_duration_ms=report.get("last_batch_duration_ms"),
            reported_at=report.get("updated_at"),
            retry=report.get("retry") if report.get("state") == "retrying" else None,
            dlq_pending=pending,
            dlq_pending_at=pending_at,
            isolation=report.get("isolation"),
            state_size=report.get("state_size"),
            **counts,
        )

    def worker_report(self, pipeline_id: str) -> dict[str, Any]:
        """What the pipeline's worker last wrote in its status.json (empty before it ran)."""
        return self.supervisor.status(pipeline_id) or {}

    @contextlib.contextmanager
    def dead_letters(self, pipeline_id: str) -> Iterator[DeadLetters]:
        """The pipeline's dead letters (engine/dead_letters.py), through the endpoint when
        its ClickHouse is embedded. What is done with them (consumed, purged, replayed) is
        counted again for the status afterwards."""
        try:
            with self._dead_letters(pipeline_id) as letters:
                yield letters
        finally:
            self.dlq_pending.stale(pipeline_id)

    @contextlib.contextmanager
    def _dead_letters(self, pipeline_id: str) -> Iterator[DeadLetters]:
        doc, pipeline = self._opened(pipeline_id)
        embedded = pipeline.sink.clickhouse.embedded
        if embedded:
            doc = self._served(doc, pipeline)
        if pipeline.fields_pending:
            # replaying decodes with the fields: fetched from the registry with the real secrets
            pipeline = parse_resolved(doc)
        elif embedded:
            pipeline = parse_pipeline(doc)  # its sink: the endpoint
        with open_dead_letters(pipeline) as letters:
            yield letters

    def _count_pending(self, pipeline_id: str) -> int:
        with self._dead_letters(pipeline_id) as letters:
            return letters.pending_count()

    # ------------------------------------------------------------------ workers

    def _opened(self, pipeline_id: str) -> tuple[dict[str, Any], Pipeline]:
        """The pipeline's current document, secrets in clear, and its model (its registry
        fields still pending: the worker fetches them)."""
        doc = self.database.document(pipeline_id, reveal_secrets=True)
        return doc, parse_pipeline(doc)

    def _launch(
        self, pipeline_id: str, pipeline: Pipeline | None = None
    ) -> tuple[dict[str, Any], Pipeline]:
        """Start the pipeline's worker with its current document (secrets in clear, on the
        worker's stdin; an embedded sink replaced by its endpoint). `pipeline`: the document's
        model when the caller has it (create: the one it judged). Returns the document as
        stored and its model."""
        stored = self.database.document(pipeline_id, reveal_secrets=True)
        if pipeline is None:
            pipeline = parse_pipeline(stored)
        doc = stored
        embedded = pipeline.sink.clickhouse.embedded
        try:
            if embedded:
                doc = self._served(doc, pipeline)
        except (OSError, RuntimeError, TimeoutError) as exc:
            self.database.set_state(
                pipeline_id, State.FAILED, error=f"embedded ClickHouse did not start: {exc}"
            )
            return stored, pipeline
        if self.otlp is not None:
            try:
                doc = self._route_otlp(pipeline_id, doc, pipeline)
            except (StreamsiftError, KafkaException, OSError) as exc:
                self.database.set_state(
                    pipeline_id, State.FAILED, error=f"the OTLP receiver cannot route it: {exc}"
                )
                return stored, pipeline
        where, why = placement(pipeline)
        if self.isolation is Isolation.PROCESS:
            where, why = Isolation.PROCESS, "serve --isolation process"
        log.info("pipeline %s: runs in %s (%s)", pipeline_id, where.value, why)
        pid = self.supervisor.launch(
            pipeline_id,
            doc,
            embedded and self.driver_inserts,
            self.retry_attempts,
            hosted=pipeline if where is Isolation.HOST else None,
            host_memory=host_memory(len(self.database.list())),
        )
        self.database.set_worker_pid(pipeline_id, pid)
        return stored, pipeline

    def _route_otlp(
        self, pipeline_id: str, doc: dict[str, Any], pipeline: Pipeline
    ) -> dict[str, Any]:
        """An OTLP pipeline's receiver route (its document, with a bundled source on the
        service's bundled broker, is what its worker runs). `pipeline`: the model of `doc`'s
        source (an embedded sink already served in `doc` changes nothing here)."""
        if self.otlp is None or otlp_source(pipeline) is None:
            return doc
        served_doc = self.otlp.served(doc, pipeline)
        served = pipeline if served_doc is doc else parse_pipeline(served_doc)
        checkpoint = served.checkpoint_dir(self.supervisor.directory(pipeline_id)).resolve()
        self.otlp.route(pipeline_id, served, checkpoint)
        return served_doc

    def _served(self, doc: dict[str, Any], pipeline: Pipeline) -> dict[str, Any]:
        path = pipeline.sink.clickhouse.path
        assert path is not None
        host, port = self.endpoints.address(path)
        return served_document(doc, host, port)

    def _recover(self, record: PipelineRecord) -> tuple[dict[str, Any], Pipeline] | None:
        """At start: take a pipeline back from where a previous server left it. Returns its
        document and model if it launched its worker again (None otherwise)."""
        pid = self.database.worker_pid(record.id)
        if record.state in (State.STOPPED, State.FAILED):
            return None
        if self.supervisor.adopt(record.id, pid):
            if record.state is State.TERMINATING:  # the server died while terminating it
                self.supervisor.terminate(record.id)
                self.database.set_state(record.id, State.STOPPED, note="terminated")
            return None
        report = self.supervisor.status(record.id) or {}
        self.database.set_worker_pid(record.id, None)
        if report.get("state") == "failed":
            self.database.set_state(record.id, State.FAILED, error=report.get("error"))
        elif record.state in (State.STOPPING, State.TERMINATING):
            self.database.set_state(record.id, State.STOPPED, note="its worker ended meanwhile")
        elif record.desired_state is DesiredState.RUNNING:
            log.info("pipeline %s: its worker is gone; restarting it", record.id)
            self.database.set_state(
                record.id,
                record.state,
                note="restarted: its worker ended while no server watched; it resumes from "
                "its checkpoint",
            )
            return self._launch(record.id)
        return None


def judged(doc: dict[str, Any], policy: DocumentPolicy) -> tuple[dict[str, Any], Pipeline]:
    """A document as the service takes it, for create and the validate route alike: in
    streamsift's format (GlassFlow's converted, relative paths made the data dir's) and its
    model, validated with the fields its sources take from their registries (the document
    keeps `from_registry` as written) and by `policy`."""
    doc = policy.anchored_document(_native(doc))
    pipeline = parse_resolved(doc)
    policy.check(pipeline)
    return doc, pipeline


def takes_registry_fields(pipeline: Pipeline) -> bool:
    """Whether a source takes its fields from its registry (`schema.from_registry`): then
    only `parse_resolved` gives the model a pipeline is validated and run with."""
    return any(src.schema_.from_registry is not None for src in pipeline.inputs)


def _native(doc: dict[str, Any]) -> dict[str, Any]:
    """The document in streamsift's format: GlassFlow's converted, its Avro/Protobuf sources'
    fields read from their registries first when the file does not list them."""
    if not isinstance(doc, dict):
        raise ConfigError("a pipeline document must be a mapping (key: value pairs)")
    if is_glassflow(doc):
        from streamsift.config.glassflow import convert_glassflow

        doc = convert_glassflow(glassflow_with_registry_fields(doc))
    return doc


def throughput(stats: dict[str, Any]) -> float | None:
    """Messages read per second of micro-batch time in this run (None before any batch)."""
    busy_ms = int(stats.get("busy_ms") or 0)
    if not busy_ms:
        return None
    return round(int(stats.get("read") or 0) / (busy_ms / 1000), 1)
