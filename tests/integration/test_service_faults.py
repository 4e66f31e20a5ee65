"""Pipelines of the service that keep running through faults, by themselves, exactly once.

Three dedup pipelines run in `PipelineService` on a broker of this module's own (it is frozen
with SIGSTOP) into an embedded ClickHouse behind the service's endpoint. One after another:

1. the broker stalls (SIGSTOP) for BROKER_STALL_S, longer than the pipelines' Kafka socket
   timeout and `source.connect_timeout`, shorter than `source.read_timeout`, then goes on
   (SIGCONT);
2. the ClickHouse endpoint stalls the same way for CLICKHOUSE_STALL_S, and one pipeline is
   stopped meanwhile: its micro-batch in flight cannot finish, so the stop ends at
   `runtime.stop_timeout` (plus Spark's shutdown), says so, and a resume redoes the batch;
3. the Python processes under every pipeline's Spark are killed -9;
4. one pipeline's whole worker process tree is killed -9 (the service starts a new one;
   that pipeline runs in a process of its own, the two others in the pipeline host);
5. busy loops take both cores for STARVE_S while events arrive.

The pipelines retry with a short back-off (RETRY) and wait for the broker less long
(CONNECT_TIMEOUT, SOCKET_TIMEOUT_MS) than by default, so that shorter faults take the same
paths as long ones do with the defaults, and the recoveries take seconds rather than minutes.

After each, with more events and a re-send of each, no pipeline has been Failed, all are
Running again without any request (but the resume after the stop), every table holds each
event once, and each pipeline's counts over its life equal its table. The time from the
end of a fault to every pipeline Running with its rows exact is printed (`-s`) for the notes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from streamsift.embedded.broker import Broker
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State, can_transition
from streamsift.spark_host.processes import kill_pid_tree
from support.service_pipeline import (
    all_exact,
    pipeline_doc,
    produce,
    running_service,
    tables,
)
from support.waiting import wait_for

pytestmark = pytest.mark.integration

NAMES = ("fault-a", "fault-b", "fault-c")
CONNECT_TIMEOUT = "10s"  # source.connect_timeout (default 30 s), the metadata's wait
SOCKET_TIMEOUT_MS = 20_000  # librdkafka's socket.timeout.ms (default 60 s) of the sources
BROKER_STALL_S = 30.0  # beyond both, within source.read_timeout (2 min)
CLICKHOUSE_STALL_S = 30.0  # holds the stop below (STOP_BOUND_S at most) and then some
STARVE_S = 30.0
RETRY = {"first_backoff": "1s", "max_backoff": "5s"}  # runtime.retry (default 1 s to 60 s)
STOP_TIMEOUT_S = 5.0  # fault-c's runtime.stop_timeout
STOP_BOUND_S = STOP_TIMEOUT_S + 15.0 + 10.0  # + the worker's grace + the supervisor's polls
RECOVERY_S = 120.0  # the bound: Running again within two minutes of a fault's end
START_S = 240.0  # three JVMs starting at once on two cores


class StatesSeen:
    """Every state any pipeline was seen in, polled twice a second on a thread."""

    def __init__(self, service: PipelineService) -> None:
        self.service = service
        self.seen: set[tuple[str, State]] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> StatesSeen:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)

    def _poll(self) -> None:
        while not self._done.wait(0.5):
            for record in self.service.list():
                self.seen.add((record.id, record.state))

    def failed(self) -> list[str]:
        return sorted(pid for pid, state in self.seen if state is State.FAILED)


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A broker for this module only: the others' tests must not see it frozen."""
    with Broker(log_path=tmp_path_factory.mktemp("faults-broker") / "tansu.log") as broker:
        yield broker


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("faults") / "data"


@pytest.fixture(scope="module")
def service(data_dir: Path, own_broker: Broker) -> Iterator[PipelineService]:
    """The service, ended before its pipelines' broker: a graceful stop of a pipeline whose
    broker is gone waits out runtime.stop_timeout for its micro-batch in flight."""
    with running_service(data_dir) as svc:
        yield svc
        # at once: nothing is judged any more
        for record in svc.list():
            if can_transition(record.state, State.TERMINATING):
                svc.terminate(record.id)


def _tables(service: PipelineService, chdb: Path) -> dict[str, tuple[int, int]]:
    return tables(service, chdb, NAMES)


def _all_exact(service: PipelineService, chdb: Path, events: int) -> bool:
    return all_exact(service, chdb, NAMES, events)


def _recovered(service: PipelineService, chdb: Path, events: int, fault: str) -> float:
    """Wait until every pipeline runs and holds `events` rows, each once; the seconds taken."""
    started = time.monotonic()
    try:
        wait_for(
            lambda: _all_exact(service, chdb, events),
            RECOVERY_S,
            what=f"every pipeline Running with {events} rows after {fault}",
            interval=1.0,
            ignoring=(OSError,),
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_diagnosis(service, chdb)}") from None
    took = time.monotonic() - started
    print(f"\n{fault}: Running and exact {took:.1f}s after the fault ended", file=sys.stderr)
    return took


def _diagnosis(service: PipelineService, chdb: Path) -> str:
    """Each pipeline's state, error and table, and its worker log's warnings, for a failure."""
    lines = [f"tables: {_tables(service, chdb)}"]
    for name in NAMES:
        status = service.status(name)
        lines.append(f"{name}: {status.state} {status.worker_state} {status.error} {status.retry}")
        log = service.supervisor.directory(name) / "worker.log"
        if not log.exists():  # a run in the pipeline host: its log is the host's
            log = service.supervisor.host.directory / "host.log"
        warned = [ln for ln in log.read_text(errors="replace").splitlines() if " WARNING " in ln]
        lines += [f"  {ln[:300]}" for ln in warned[-8:]]
    return "\n".join(lines)


def _feed(broker: Broker, ids: range) -> None:
    for name in NAMES:
        produce(broker, name, ids)  # each event twice: the re-send is dropped by dedup


def _feed_patiently(broker: Broker, ids: range) -> None:
    """`_feed` into a stalled broker: the producer holds the events until it answers."""
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 300_000}
    )
    for name in NAMES:
        for _ in range(2):
            for i in ids:
                value = {"event_id": f"e{i}", "n": i, "created_at": "2026-01-01T00:00:00Z"}
                producer.produce(name, key=f"e{i}".encode(), value=json.dumps(value).encode())
    assert producer.flush(BROKER_STALL_S + 120) == 0


def _messages_in(broker: Broker, topic: str) -> int:
    """The messages in both partitions of `topic`, read to their end."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"count-{topic}",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    count, ended = 0, set()
    deadline = time.monotonic() + 60
    while len(ended) < 2 and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 1.0):
            if msg.error() is None:
                count += 1
            elif msg.error().code() == KafkaError._PARTITION_EOF:
                ended.add(msg.partition())
    consumer.close()
    assert len(ended) == 2, f"{topic} was not read to its end"
    return count


def _endpoint_pid(chdb: Path) -> int:
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "streamsift.embedded.clickhouse_server" in cmdline and str(chdb) in cmdline:
            return proc.pid
    raise AssertionError(f"no ClickHouse endpoint process for {chdb}")


def _spark_python_processes(service: PipelineService) -> list[psutil.Process]:
    """The Python processes Spark started under each pipeline's worker or the pipeline host
    (daemon, workers)."""
    found = []
    pids = {service.status(name).pid for name in NAMES}  # the pipelines in the host share one
    assert None not in pids
    for pid in pids:
        for child in psutil.Process(pid).children(recursive=True):
            try:
                # PySpark's daemon and the workers it forks (not the JVM: its command line
                # says pyspark-shell)
                if "pyspark.daemon" in " ".join(child.cmdline()):
                    found.append(child)
            except psutil.NoSuchProcess:
                continue
    return found


def _stalled(pid: int, seconds: float) -> None:
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)


def test_faults_are_retried_until_running_again_exactly_once(
    service: PipelineService, own_broker: Broker, data_dir: Path
) -> None:
    chdb = data_dir / "clickhouse"
    for name in NAMES:
        own_broker.create_topic(name, 2)
    _feed(own_broker, range(100))
    for name in NAMES:
        doc = pipeline_doc(name, own_broker, {"path": str(chdb)})
        doc["source"]["connect_timeout"] = CONNECT_TIMEOUT
        doc["source"]["properties"] = {"socket.timeout.ms": str(SOCKET_TIMEOUT_MS)}
        doc["runtime"] = {"retry": RETRY}
        if name == NAMES[0]:  # its own worker process; the others share the pipeline host
            doc["runtime"]["isolation"] = "process"
        if name == NAMES[2]:
            doc["runtime"]["stop_timeout"] = f"{STOP_TIMEOUT_S:.0f}s"
        service.create(doc)
    wait_for(lambda: _all_exact(service, chdb, 100), START_S, what="100 rows each", interval=1)
    assert own_broker.process is not None

    timings: dict[str, float] = {}
    with StatesSeen(service) as states:
        # 1. the broker stalls; events produced meanwhile wait in the producer
        feeder = threading.Thread(target=_feed_patiently, args=(own_broker, range(100, 150)))
        feeder.start()
        _stalled(own_broker.process.pid, BROKER_STALL_S)
        feeder.join(120)
        assert not feeder.is_alive()
        timings["broker stalled"] = _recovered(service, chdb, 150, "broker stalled")

        # 2. the ClickHouse endpoint stalls while events arrive; a stop meanwhile is bounded
        endpoint = _endpoint_pid(chdb)
        os.kill(endpoint, signal.SIGSTOP)
        try:
            _feed(own_broker, range(150, 200))
            time.sleep(5)  # the micro-batches start, and wait on their inserts
            asked = time.monotonic()
            service.stop(NAMES[2])
            wait_for(
                lambda: service.get(NAMES[2]).state is State.STOPPED,
                STOP_BOUND_S,
                what=f"{NAMES[2]} Stopped within its bound",
            )
            timings["stop with a stalled sink"] = time.monotonic() - asked
            time.sleep(max(0.0, CLICKHOUSE_STALL_S - (time.monotonic() - asked) - 5))
        finally:
            os.kill(endpoint, signal.SIGCONT)
        note = service.history(NAMES[2])[-1].note or ""
        assert "runtime.stop_timeout" in note or "ending its process" in note, note
        service.resume(NAMES[2])
        timings["ClickHouse stalled"] = _recovered(service, chdb, 200, "ClickHouse stalled")

        # 3. Spark's Python processes are killed under every pipeline
        victims = _spark_python_processes(service)
        assert victims, "no Python processes under the pipelines' Spark"
        for proc in victims:
            proc.kill()
        _feed(own_broker, range(200, 250))
        timings["Python workers killed"] = _recovered(service, chdb, 250, "Python workers killed")

        # 4. one pipeline's whole worker is killed: the service starts a new one (the ones in
        # the host go on; the host killed is test_pipeline_host's)
        pid = service.status(NAMES[0]).pid
        assert pid is not None and pid != service.supervisor.host.pid
        kill_pid_tree(pid)
        _feed(own_broker, range(250, 300))
        timings["worker killed"] = _recovered(service, chdb, 300, "worker killed")
        assert State.RETRYING in [c.to_state for c in service.history(NAMES[0])]

        # 5. both cores busy for a minute while events arrive
        burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        try:
            for step in range(4):
                _feed(own_broker, range(300 + 25 * step, 325 + 25 * step))
                time.sleep(STARVE_S / 4)
        finally:
            for burner in burners:
                burner.kill()
                burner.wait(10)
        timings["CPU starved"] = _recovered(service, chdb, 400, "CPU starved")

    assert states.failed() == [], f"pipelines were Failed: {states.failed()}"
    # counts over each pipeline's life, through every fault: equal to the table, and to the
    # topic (a producer's retry into the stalled broker may have written a message twice)
    messages = {name: _messages_in(own_broker, name) for name in NAMES}
    wait_for(
        lambda: all(
            (service.status(n).written, service.status(n).read) == (400, messages[n]) for n in NAMES
        ),
        30,
        what=f"every pipeline's counts equal to its table and topic {messages}",
    )
    for name in NAMES:
        status = service.status(name)
        assert status.duplicates == messages[name] - 400, name
        assert (status.dlq, status.filtered) == (0, 0), name
        assert status.error is None, (name, status.error)  # it runs: no stale error shown
    print(f"\nrecovery timings (s): {timings}", file=sys.stderr)
