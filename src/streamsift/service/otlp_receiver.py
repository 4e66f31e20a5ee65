"""The OTLP receiver's lifecycle: its HTTP and gRPC servers, and one route per OTLP pipeline
(the pipeline's topic, created if missing; a durable producer; a lag probe).

`streamsift run` of an OTLP pipeline starts one beside the Spark query (`receiver_for_run`),
on the source's `receiver` settings; `streamsift serve` runs one for all its OTLP pipelines
(`OtlpReceiver` with routes added and removed as pipelines come and go).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from streamsift.config.models import Pipeline
from streamsift.config.otlp import OtlpSource
from streamsift.engine.errors import PipelineFailed
from streamsift.sources.otlp.grpc_server import otlp_grpc_server
from streamsift.sources.otlp.http import otlp_http_app
from streamsift.sources.otlp.ingest import DurableProducer, Ingest, LagProbe, Route

TOPIC_PARTITIONS = 3
log = logging.getLogger("streamsift.otlp")


def otlp_source(pipeline: Pipeline) -> OtlpSource | None:
    src = pipeline.source_
    return src if isinstance(src, OtlpSource) else None


def ensure_topic(bootstrap_servers: str, props: dict[str, str], topic: str) -> None:
    """Create the pipeline's OTLP topic unless it exists (records must have a home before
    the first request is acknowledged)."""
    admin = AdminClient({**props, "bootstrap.servers": bootstrap_servers})
    meta = admin.list_topics(timeout=10)
    if topic in meta.topics and meta.topics[topic].error is None:
        return
    futures = admin.create_topics([NewTopic(topic, TOPIC_PARTITIONS, 1)])
    try:
        futures[topic].result(15)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise PipelineFailed(
                f"cannot create the OTLP topic {topic!r}: {exc}",
                "check source.bootstrap_servers and that the broker allows creating topics",
            ) from None


@dataclass
class OtlpReceiver:
    """OTLP/HTTP and OTLP/gRPC servers over one `Ingest` (a port of None: that transport off;
    0: a free port). `http_port`/`grpc_port` hold the bound ports once started."""

    host: str = "127.0.0.1"
    http_port: int | None = 4318
    grpc_port: int | None = 4317
    token: str | None = None
    max_request_bytes: int = 4 * 1024 * 1024
    ingest: Ingest = field(init=False)
    _http: Any = field(default=None, init=False)
    _http_thread: threading.Thread | None = field(default=None, init=False)
    _grpc: Any = field(default=None, init=False)
    _sock: socket.socket | None = field(default=None, init=False)
    started: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.ingest = Ingest(self.token)

    def start(self) -> OtlpReceiver:
        if self.started:
            return self
        if self.http_port is not None:
            try:
                self._sock = socket.create_server((self.host, self.http_port))
            except OSError as exc:
                raise PipelineFailed(
                    f"cannot listen on {self.host}:{self.http_port} for OTLP/HTTP: "
                    f"{exc.strerror or exc}",
                    "is another receiver on that port? set source.receiver.http_port",
                ) from None
            self.http_port = self._sock.getsockname()[1]
            self._http = uvicorn.Server(
                uvicorn.Config(otlp_http_app(self.ingest), log_level="warning", access_log=False)
            )
            self._http_thread = threading.Thread(
                target=self._http.run, kwargs={"sockets": [self._sock]}, daemon=True
            )
            self._http_thread.start()
            deadline = time.monotonic() + 20
            while not self._http.started and time.monotonic() < deadline:
                time.sleep(0.02)
        if self.grpc_port is not None:
            try:
                self._grpc, self.grpc_port = otlp_grpc_server(
                    self.ingest, f"{self.host}:{self.grpc_port}", self.max_request_bytes
                )
            except (OSError, RuntimeError) as exc:
                self.stop()
                raise PipelineFailed(
                    f"cannot listen on {self.host}:{self.grpc_port} for OTLP/gRPC: {exc}",
                    "is another receiver on that port? set source.receiver.grpc_port",
                ) from None
        self.started = True
        log.info("OTLP receiver: http %s, grpc %s", self.http_port, self.grpc_port)
        return self

    def add(self, pipeline_id: str, pipeline: Pipeline, checkpoint: Path) -> Route:
        """Route `pipeline_id`'s OTLP requests into its topic (creating it if missing);
        `checkpoint` is the pipeline's checkpoint directory, where its progress is read."""
        src = otlp_source(pipeline)
        if src is None:
            raise ValueError(f"pipeline {pipeline.name!r} has no OTLP source")
        props = {**src.security.librdkafka(), **src.properties}
        ensure_topic(src.bootstrap_servers, props, src.topic)
        settings = src.receiver
        producer = DurableProducer(src.bootstrap_servers, props, settings.max_queued_records)
        probe = LagProbe(
            src.bootstrap_servers,
            props,
            src.topic,
            producer,
            lambda: committed_offsets(checkpoint / "spark", src.topic),
        )
        route = Route(
            pipeline_id=pipeline_id,
            signal=src.signal,
            topic=src.topic,
            producer=producer,
            max_request_bytes=min(settings.max_request_bytes, self.max_request_bytes),
            max_lag=settings.max_lag,
            lag=probe.lag,
            token=settings.token.get_secret_value() if settings.token else None,
            extra={"probe": probe},
        )
        old = self.ingest.remove(pipeline_id)
        if old is not None:
            _close_route(old)
        self.ingest.add(route)
        return route

    def remove(self, pipeline_id: str) -> None:
        route = self.ingest.remove(pipeline_id)
        if route is not None:
            _close_route(route)

    def stop(self) -> None:
        """Stop answering, then flush what was produced (nothing acknowledged is pending)."""
        if self._grpc is not None:
            self._grpc.stop(grace=5).wait(10)
            self._grpc = None
        if self._http is not None:
            self._http.should_exit = True
            if self._http_thread is not None:
                self._http_thread.join(10)
            self._http = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        for route in self.ingest.routes():
            self.remove(route.pipeline_id)
        self.started = False


def _close_route(route: Route) -> None:
    with contextlib.suppress(Exception):
        route.producer.close()
    probe = route.extra.get("probe")
    if probe is not None:
        with contextlib.suppress(Exception):
            probe.close()


def committed_offsets(spark_checkpoint: Path, topic: str) -> dict[int, int]:
    """The next offset per partition of `topic` after the last micro-batch Spark committed
    (its commit log names the batch, its offset log holds the source's offsets); {} before
    the first commit."""
    commits = spark_checkpoint / "commits"
    try:
        done = [int(f.name) for f in commits.iterdir() if f.name.isdigit()]
    except OSError:
        return {}
    if not done:
        return {}
    try:
        lines = (spark_checkpoint / "offsets" / str(max(done))).read_text().splitlines()
    except OSError:
        return {}
    out: dict[int, int] = {}
    for line in lines[2:]:  # "v1", the batch's metadata, then one line per source
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            for key, value in json.loads(line).items():
                name, _, partition = key.rpartition("/")
                if name == topic and partition.isdigit():
                    out[int(partition)] = int(value)
    return out


@contextlib.contextmanager
def receiver_for_run(pipeline: Pipeline, base_dir: Path) -> Iterator[OtlpReceiver | None]:
    """The receiver of `streamsift run` for an OTLP pipeline (None for a Kafka pipeline):
    listening before the query starts, stopped after it ends."""
    src = otlp_source(pipeline)
    if src is None:
        yield None
        return
    settings = src.receiver
    receiver = OtlpReceiver(
        host=settings.host,
        http_port=settings.http_port,
        grpc_port=settings.grpc_port,
        token=settings.token.get_secret_value() if settings.token else None,
        max_request_bytes=settings.max_request_bytes,
    ).start()
    try:
        receiver.add(pipeline.name, pipeline, pipeline.checkpoint_dir(base_dir).resolve())
        yield receiver
    finally:
        receiver.stop()


def with_bootstrap(pipeline: Pipeline, bootstrap_servers: str) -> Pipeline:
    """`pipeline` with its OTLP source on `bootstrap_servers` (the bundled broker's address)."""
    src = otlp_source(pipeline)
    assert src is not None
    moved = src.model_copy(update={"bootstrap_servers": bootstrap_servers})
    return pipeline.model_copy(update={"source_": moved})


class ServiceOtlp:
    """The OTLP side of `streamsift serve`: one receiver for every OTLP pipeline of the
    service (started with the first), routes kept while a pipeline is stopped (its records wait in Kafka, as
    GlassFlow's receiver keeps accepting for stopped pipelines) and dropped when it is
    deleted, and the bundled broker for sources that name no Kafka, started on first use."""

    def __init__(self, receiver: OtlpReceiver, data_dir: Path) -> None:
        self.receiver = receiver
        self.data_dir = data_dir
        self._broker: Any = None
        self._lock = threading.Lock()

    def served(self, doc: dict[str, Any], pipeline: Pipeline) -> dict[str, Any]:
        """The document a worker runs: a bundled source on the service's bundled broker."""
        src = otlp_source(pipeline)
        if src is None or not src.bundled:
            return doc
        from streamsift.embedded.broker import Broker

        with self._lock:
            if self._broker is None:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                self._broker = Broker(log_path=self.data_dir / "bundled-broker.log").start()
            address = self._broker.bootstrap_servers
        return {**doc, "source": {**doc["source"], "bootstrap_servers": address}}

    def route(self, pipeline_id: str, pipeline: Pipeline, checkpoint: Path) -> None:
        """Route an OTLP pipeline, starting the receiver on the first one (a service without
        OTLP pipelines listens on no OTLP port)."""
        if otlp_source(pipeline) is not None:
            with self._lock:
                self.receiver.start()
            self.receiver.add(pipeline_id, pipeline, checkpoint)

    def forget(self, pipeline_id: str) -> None:
        self.receiver.remove(pipeline_id)

    def close(self) -> None:
        self.receiver.stop()
        with self._lock:
            if self._broker is not None:
                self._broker.stop()
                self._broker = None
