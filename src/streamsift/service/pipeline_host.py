"""The pipeline host: one Spark application that runs many of the service's pipelines.

    python -m streamsift.service.pipeline_host --data-dir <data_dir> [--driver-memory 3g]

One driver JVM and one set of Python workers serve every pipeline placed here (the default,
`runtime.isolation: host`), each as a streaming query of its own: its own SparkSession
(`newSession()`: its own SQL settings and registered sources), its own FAIR scheduler pool
weighted by `runtime.weight`, its own checkpoint, status.json and stop flag
(service/pipeline_run.py). Start, stop and terminate act on one query; the others go on.
A pipeline's failure fails or retries that query only. When the JVM itself is gone, every
run here ends with EXIT_RESTART and the host exits: the service starts a new host, and each
pipeline resumes from its checkpoint.

The host starts warm: the JVM, Spark's classes for a streaming query and the Python workers
are started before it says it is ready, by writing `<data_dir>/host/host.json` (its pid, its
loopback port and the token every request must carry; readable by the data dir's owner
only). Requests are one JSON line each way over TCP on 127.0.0.1 (service/host_link.py is the
other end): ping, start, stop, abort, shutdown. Documents arrive with their secrets in clear,
in memory only. With no pipeline and no request for IDLE_EXIT_S, the host exits.
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import secrets
import signal
import socketserver
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamsift.service.pipeline_run import EXIT_RESTART, STOP_GRACE_S, PipelineRun, exit_now

HOST_DIR = "host"
RECORD_FILE = "host.json"
LOG_FILE = "host.log"
IDLE_EXIT_S = 60.0
WATCH_S = 1.0
MAX_REQUEST_BYTES = 16 * 1024 * 1024
EXIT_ON_OOM = "-XX:+ExitOnOutOfMemoryError"
HOST_SPARK_CONF = {
    # each pipeline's jobs in a pool of its own, sharing the cores by weight
    "spark.scheduler.mode": "FAIR",
    # the RocksDB state stores of every pipeline's join share one memory bound (Spark's
    # default, 500 MB: spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB), rather than
    # each store growing its own caches and write buffers
    "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
}
log = logging.getLogger("streamsift.host")


@dataclass
class Hosted:
    """A pipeline's run in the host and the thread it runs on."""

    run: PipelineRun
    thread: threading.Thread


class PipelineHost:
    """The pipelines of one data dir's host (see the module docstring)."""

    def __init__(self, data_dir: Path, spark: Any) -> None:
        self.data_dir = data_dir
        self.spark = spark
        self.token = secrets.token_urlsafe(32)
        self.hosted: dict[str, Hosted] = {}
        self.last_request = time.monotonic()
        self.shutting_down = False
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ requests

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request's answer; refused without the token."""
        if not hmac.compare_digest(str(request.get("token", "")), self.token):
            return {"ok": False, "error": "refused: wrong token"}
        self.last_request = time.monotonic()
        op = request.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "pipelines": self.states()}
        if op == "pools":
            return {"ok": True, "pools": self.pools()}
        if op == "start":
            return self.start(request)
        if op in ("stop", "abort"):
            return self.end(str(request.get("id")), op == "abort", float(request.get("wait_s", 0)))
        if op == "shutdown":
            threading.Thread(target=self.shutdown, name="host-shutdown", daemon=True).start()
            return {"ok": True}
        return {"ok": False, "error": f"unknown request {op!r}"}

    def states(self) -> dict[str, str]:
        """The state of each pipeline whose run is alive here."""
        with self._lock:
            return {
                pipeline_id: hosted.run.status.state
                for pipeline_id, hosted in self.hosted.items()
                if hosted.thread.is_alive()
            }

    def pools(self) -> dict[str, int]:
        """The FAIR pool weight of each pipeline that ran here."""
        root = self.spark.sparkContext._jsc.sc().taskScheduler().rootPool()
        with self._lock:
            ids = list(self.hosted)
        found = {i: root.getSchedulableByName(pool_name(i)) for i in ids}
        return {i: int(pool.weight()) for i, pool in found.items() if pool is not None}

    def start(self, request: dict[str, Any]) -> dict[str, Any]:
        pipeline_id = str(request["id"])
        with self._lock:
            if self.shutting_down:
                return {"ok": False, "error": "the host is shutting down"}
            current = self.hosted.get(pipeline_id)
            if current is not None and current.thread.is_alive():
                return {"ok": False, "error": f"pipeline {pipeline_id} still runs here"}
            directory = Path(request["dir"])
            directory.mkdir(parents=True, exist_ok=True)
            pool = pool_name(pipeline_id)
            weight = int(request.get("weight") or 1)
            spark_conf = dict(request.get("spark_conf") or {})
            run = PipelineRun(
                directory,
                request["document"],
                bool(request.get("driver_inserts")),
                request.get("retry_attempts"),
                session=lambda: self.session_for(pool, weight, spark_conf),
                scheduler_pool=pool,
            )
            thread = threading.Thread(
                target=self._run, args=(pipeline_id, run), name=f"pipeline-{pipeline_id}"
            )
            self.hosted[pipeline_id] = Hosted(run, thread)
            thread.start()
        log.info("pipeline %s: started in the host (pool %s, weight %d)", pipeline_id, pool, weight)
        return {"ok": True, "pid": os.getpid()}

    def end(self, pipeline_id: str, abort: bool, wait_s: float) -> dict[str, Any]:
        """Stop (gracefully) or abort one pipeline; with `wait_s`, wait that long for its
        run to end. `ended`: whether it has."""
        with self._lock:
            hosted = self.hosted.get(pipeline_id)
        if hosted is None or not hosted.thread.is_alive():
            return {"ok": True, "ended": True}
        if abort:
            hosted.run.abort()
        else:
            hosted.run.stop()
            self._bound_stop(hosted)
        hosted.thread.join(max(0.0, wait_s))
        return {"ok": True, "ended": not hosted.thread.is_alive()}

    def session_for(self, pool: str, weight: int, spark_conf: dict[str, str]) -> Any:
        """A session of the shared application for one pipeline: its own SQL settings, and
        its FAIR pool (made with its weight; a changed weight remakes it)."""
        session = self.spark.newSession()
        for key, value in spark_conf.items():
            session.conf.set(key, value)
        scheduler = self.spark.sparkContext._jsc.sc().taskScheduler()
        root = scheduler.rootPool()
        existing = root.getSchedulableByName(pool)
        if existing is not None and existing.weight() != weight:
            root.removeSchedulable(existing)
            existing = None
        if existing is None:
            jvm = self.spark.sparkContext._jvm
            mode = jvm.org.apache.spark.scheduler.SchedulingMode.withName("FIFO")
            root.addSchedulable(jvm.org.apache.spark.scheduler.Pool(pool, mode, 0, weight))
        return session

    # ------------------------------------------------------------------ runs

    def _run(self, pipeline_id: str, run: PipelineRun) -> None:
        try:
            code = run.run()
        except BaseException as exc:  # noqa: BLE001 - a run's end must never end the host
            log.exception("pipeline %s: its run ended unexpectedly", pipeline_id)
            code = run.end("failed", f"{type(exc).__name__}: {exc}"[:500], None, 1)
        log.info("pipeline %s: run ended (exit code %d)", pipeline_id, code)
        if code == EXIT_RESTART:  # the JVM is gone: the watch ends the host
            self.lost_jvm()

    def _bound_stop(self, hosted: Hosted) -> None:
        """A stop must end: past runtime.stop_timeout plus a grace, the query is aborted."""

        def bound() -> None:
            hosted.thread.join(hosted.run.stop_timeout_s + STOP_GRACE_S)
            if hosted.thread.is_alive():
                log.warning("a stop outlasted its timeout: aborting the query")
                hosted.run.abort()

        threading.Thread(target=bound, name="host-stop-bound", daemon=True).start()

    def lost_jvm(self) -> None:
        """Every run here ends with EXIT_RESTART, and so does the host."""
        with self._lock:
            runs = [hosted.run for hosted in self.hosted.values() if hosted.thread.is_alive()]
        for run in runs:
            run.end(
                "retrying",
                "the pipeline host's Spark JVM is gone",
                "a new host takes over from the checkpoint",
                EXIT_RESTART,
            )
        log.error("the Spark JVM is gone: the host exits for the service to start a new one")
        exit_now(EXIT_RESTART)

    def shutdown(self) -> None:
        """Stop every pipeline gracefully, then exit."""
        with self._lock:
            self.shutting_down = True
            hosted = list(self.hosted.values())
        for each in hosted:
            if each.thread.is_alive():
                each.run.stop()
                self._bound_stop(each)
        for each in hosted:
            each.thread.join(each.run.stop_timeout_s + 2 * STOP_GRACE_S)
        log.info("the host shuts down")
        exit_now(0)

    def idle(self) -> bool:
        """No pipeline runs here, and nobody asked anything for IDLE_EXIT_S."""
        return not self.states() and time.monotonic() - self.last_request > IDLE_EXIT_S


def pool_name(pipeline_id: str) -> str:
    return f"pipeline-{pipeline_id}"


class _Requests(socketserver.StreamRequestHandler):
    """One JSON line in, one out."""

    host: PipelineHost  # set on the subclass the server makes

    def handle(self) -> None:
        line = self.rfile.readline(MAX_REQUEST_BYTES)
        try:
            request = json.loads(line)
            answer = self.host.answer(request) if isinstance(request, dict) else None
        except (ValueError, KeyError, TypeError) as exc:
            answer = {"ok": False, "error": f"bad request: {exc}"}
        if answer is None:
            answer = {"ok": False, "error": "bad request: not an object"}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def warm_up(spark: Any) -> None:
    """Pay once what every pipeline's first micro-batch would: a streaming query's classes
    (planning, checkpointing, foreachBatch through py4j) and the Python workers' start."""
    from pyspark.sql.types import LongType, StructField, StructType

    started = time.monotonic()
    schema = StructType([StructField("id", LongType())])

    def same(batches: Any) -> Any:
        yield from batches

    spark.range(0, 4, 1, 2).mapInArrow(same, schema).collect()
    with tempfile.TemporaryDirectory(prefix="streamsift-warm-") as scratch:
        frame = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
        query = (
            frame.writeStream.foreachBatch(lambda df, _id: df.count())
            .option("checkpointLocation", scratch)
            .trigger(processingTime="0 seconds")
            .start()
        )
        deadline = time.monotonic() + 60
        while query.isActive and not query.recentProgress and time.monotonic() < deadline:
            time.sleep(0.1)
        query.stop()
    log.info("warm in %.1fs", time.monotonic() - started)


def write_record(directory: Path, port: int, token: str) -> None:
    """host.json, readable by the owner only: what a server needs to reach this host."""
    record = {"pid": os.getpid(), "port": port, "token": token, "started_at": time.time()}
    tmp = directory / f".{RECORD_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(record, out)
    os.replace(tmp, directory / RECORD_FILE)


def serve(data_dir: Path) -> int:
    """Start Spark, warm up, answer requests until idle, shut down, or the JVM is lost."""
    from streamsift.engine.signals import install_stop_handlers
    from streamsift.spark_host.session import DEFAULT_MASTER, jvm_alive, spark_session

    directory = data_dir / HOST_DIR
    directory.mkdir(parents=True, exist_ok=True)
    # A JVM out of memory goes on half-broken; ended, the watch below sees it gone and the
    # service starts a new host, from which every pipeline resumes from its checkpoint.
    # The JVM's options are the host's own, not those of the process that started it
    os.environ.pop("PYSPARK_SUBMIT_ARGS", None)
    shaping = os.environ.get("STREAMSIFT_JAVA_OPTIONS", "")
    os.environ["STREAMSIFT_JAVA_OPTIONS"] = f"{shaping} {EXIT_ON_OOM}".strip()
    spark = spark_session("streamsift-host", master=DEFAULT_MASTER, spark_conf=HOST_SPARK_CONF)
    warm_up(spark)
    host = PipelineHost(data_dir, spark)
    handler = type("Requests", (_Requests,), {"host": host})
    server = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, name="host-requests", daemon=True).start()
    install_stop_handlers(
        lambda: threading.Thread(target=host.shutdown, name="host-shutdown", daemon=True).start()
    )
    write_record(directory, server.server_address[1], host.token)
    log.info("ready on 127.0.0.1:%d", server.server_address[1])
    while True:
        time.sleep(WATCH_S)
        if not jvm_alive():
            host.lost_jvm()
        if host.idle():
            log.info("idle for %.0fs with no pipeline: the host exits", IDLE_EXIT_S)
            exit_now(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m streamsift.service.pipeline_host",
        description="Run the service's pipelines as queries of one Spark application.",
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="the service's data dir")
    parser.add_argument("--driver-memory", default=None, help="the driver JVM's heap, e.g. 3g")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per callback otherwise
    if args.driver_memory:
        os.environ["STREAMSIFT_DRIVER_MEMORY"] = args.driver_memory
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return serve(args.data_dir.resolve())


if __name__ == "__main__":
    sys.exit(main())
