"""The service core end to end: `PipelineService` with real worker processes (Spark), the
bundled broker and embedded ClickHouse served by its endpoint.

Each pipeline start costs a Spark start-up (~15-20 s here), so the pipelines are reused across
assertions: one module-scoped service runs the main pipeline through its whole lifecycle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from streamsift.embedded.broker import Broker, free_port
from streamsift.errors import ConflictError
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from streamsift.spark_host.processes import kill_pid_tree
from support.clickhouse import rows as endpoint_rows
from support.service_pipeline import START_TIMEOUT_S, pipeline_doc, produce, running_service
from support.waiting import wait_for

pytestmark = pytest.mark.integration

CH_PASSWORD = "ch-secret-Vq93"


def rows(service: PipelineService, chdb: Path, table: str) -> tuple[int, int]:
    """(rows, distinct event ids) of a table in the embedded ClickHouse, via its endpoint."""
    host, port = service.endpoints.address(chdb)
    return endpoint_rows(port, table, host=host)


def in_state(service: PipelineService, pipeline_id: str, state: State) -> Callable[[], bool]:
    return lambda: service.get(pipeline_id).state is state


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service") / "data"


@pytest.fixture(scope="module")
def chdb(data_dir: Path) -> Path:
    """Inside the data dir: a service's documents name paths there (document_policy.py)."""
    return data_dir / "clickhouse"


@pytest.fixture(scope="module")
def service(data_dir: Path) -> Iterator[PipelineService]:
    with running_service(data_dir) as svc:
        yield svc


def test_a_pipeline_through_its_lifecycle_beside_one_that_fails(
    service: PipelineService, broker: Broker, chdb: Path, data_dir: Path
) -> None:
    name = "svc-main"
    broker.create_topic(name, 2)
    produce(broker, name, range(100))
    malformed = Producer({"bootstrap.servers": broker.bootstrap_servers})
    malformed.produce(name, key=b"bad", value=b"{not json")
    assert malformed.flush(30) == 0
    clickhouse = {"path": str(chdb), "password": CH_PASSWORD}
    record = service.create(pipeline_doc(name, broker, clickhouse))
    assert record.state is State.CREATED
    wait_for(in_state(service, name, State.RUNNING), START_TIMEOUT_S, what="Running")
    wait_for(
        lambda: rows(service, chdb, "svc_main") == (100, 100),
        START_TIMEOUT_S,
        what="100 rows",
    )

    # a second pipeline whose ClickHouse refuses connections retries alone, readably: a
    # ClickHouse that does not answer is a transient fault, not a reason to fail
    closed_port = free_port()
    bad = pipeline_doc(
        "svc-bad", broker, {"host": "127.0.0.1", "port": closed_port}, connect_timeout="2s"
    )
    broker.create_topic("svc-bad", 1)
    service.create(bad)
    wait_for(in_state(service, "svc-bad", State.RETRYING), START_TIMEOUT_S, what="svc-bad Retrying")
    retrying = service.get("svc-bad")
    assert retrying.error is not None and f"127.0.0.1:{closed_port}" in retrying.error
    assert retrying.error_at is not None
    assert "Traceback" not in retrying.error
    retry = service.status("svc-bad").retry
    assert retry is not None and retry["attempt"] >= 1 and retry["kind"] == "SinkTransientError"
    assert retry["next_try_at"] > retry["since"]
    assert [c.to_state for c in service.history("svc-bad")][-1] is State.RETRYING

    # ... while the first one goes on: exactly once
    produce(broker, name, range(100, 150))
    wait_for(
        lambda: rows(service, chdb, "svc_main") == (150, 150),
        START_TIMEOUT_S,
        what="150 rows",
    )
    assert service.get(name).state is State.RUNNING
    wait_for(
        lambda: service.status(name).written == 150 and service.status(name).read == 301,
        30,
        what="the status to count them",
    )
    status = service.status(name)
    assert (status.duplicates, status.dlq) == (150, 1)
    with service.dead_letters(name) as letters:  # through the embedded ClickHouse's endpoint
        [letter] = letters.pending(10)
        assert letter.payload == b"{not json"
    assert status.worker_state == "running"
    assert set(status.lag_by_partition) == {f"{name}/0", f"{name}/1"}
    assert status.last_batch_at is not None and status.last_batch_duration_ms is not None

    # a running pipeline is neither edited nor deleted; it is not resumed either
    with pytest.raises(ConflictError) as caught:
        service.edit(name, pipeline_doc(name, broker, clickhouse))
    assert caught.value.details["current_status"] == "Running"
    assert caught.value.details["valid_transitions"] == [
        "Stopping",
        "Retrying",
        "Terminating",
        "Failed",
    ]
    with pytest.raises(ConflictError):
        service.delete(name)
    with pytest.raises(ConflictError) as caught:
        service.resume(name)
    assert caught.value.details["requested_status"] == "Resuming"

    # stop, produce more while stopped, resume: exact
    assert service.stop(name).state is State.STOPPING
    wait_for(in_state(service, name, State.STOPPED), START_TIMEOUT_S, what="Stopped")
    produce(broker, name, range(150, 200))
    assert service.resume(name).state is State.RESUMING
    wait_for(in_state(service, name, State.RUNNING), START_TIMEOUT_S, what="Running again")
    wait_for(
        lambda: rows(service, chdb, "svc_main") == (200, 200),
        START_TIMEOUT_S,
        what="200 rows",
    )
    states = [c.to_state.value for c in service.history(name)]
    assert states == ["Created", "Running", "Stopping", "Stopped", "Resuming", "Running"]
    # the figures count over the pipeline's life, both runs, and equal the tables
    wait_for(
        lambda: (service.status(name).written, service.status(name).read) == (200, 401),
        30,
        what="the counts of both runs",
    )
    status = service.status(name)
    assert (status.duplicates, status.dlq) == (200, 1)
    # pending in the DLQ table, counted in the background (a status never waits for it)
    wait_for(lambda: service.status(name).dlq_pending == 1, 30, what="the DLQ's pending count")
    assert service.status(name).dlq_pending_at is not None

    # secrets: never in clear at rest or in a status, shown as ***
    assert service.document(name)["sink"]["clickhouse"]["password"] == "***"
    assert service.document(name, reveal_secrets=True)["sink"]["clickhouse"]["password"] == (
        CH_PASSWORD
    )
    for path in data_dir.rglob("*"):
        if path.is_file() and path.suffix in (".db", ".json", ".db-wal", ".log", ".key"):
            assert CH_PASSWORD.encode() not in path.read_bytes(), path

    # terminate at once, then edit: a changed dedup window needs reset_state
    service.terminate(name)
    assert service.get(name).state is State.STOPPED
    changed = pipeline_doc(name, broker, clickhouse)
    changed["dedup"]["time_window"] = "2h"
    changed["sink"]["clickhouse"]["password"] = "***"  # as read back: keeps the stored one
    with pytest.raises(ConflictError, match="dedup first on event_id within 1h -> .*2h") as caught:
        service.edit(name, changed)
    assert caught.value.hint is not None and "reset_state=true" in caught.value.hint
    assert service.edit(name, changed, reset_state=True).version == 2
    assert service.document(name, reveal_secrets=True)["sink"]["clickhouse"]["password"] == (
        CH_PASSWORD
    )
    assert not (data_dir / "pipelines" / name / "checkpoints" / name).exists()

    # delete: only at rest, and then it is gone; a retrying pipeline stops at once
    service.stop("svc-bad")
    wait_for(in_state(service, "svc-bad", State.STOPPED), START_TIMEOUT_S, what="svc-bad Stopped")
    service.delete("svc-bad")
    service.delete(name)
    assert [r.id for r in service.list()] == []
    assert not (data_dir / "pipelines" / name).exists()


SERVER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from streamsift.service.lifecycle import State
    from streamsift.service.core import PipelineService

    service = PipelineService(Path(sys.argv[1]))
    service.start()
    service.create(json.loads(sys.argv[2]))
    while service.get(json.loads(sys.argv[2])["name"]).state is not State.RUNNING:
        time.sleep(0.2)
    print("running", flush=True)
    time.sleep(3600)
    """
)


def test_after_the_server_is_killed_pipelines_are_adopted_or_restarted_exactly(
    broker: Broker, tmp_path: Path
) -> None:
    name = "svc-restart"
    data_dir = tmp_path / "data"
    chdb = data_dir / "clickhouse"
    broker.create_topic(name, 2)
    produce(broker, name, range(100))
    doc = pipeline_doc(name, broker, {"path": str(chdb)})
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(data_dir), json.dumps(doc)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline().strip() == b"running"
    finally:
        server.send_signal(signal.SIGKILL)  # the server alone: its workers live on
        server.wait()

    # a new server adopts the running worker (same pid) and its endpoint
    second = PipelineService(data_dir)
    worker_pid = second.database.worker_pid(name)
    second.start()
    try:
        assert worker_pid is not None and second.supervisor.is_running(name)
        wait_for(
            lambda: rows(second, chdb, "svc_restart") == (100, 100),
            START_TIMEOUT_S,
            what="100 rows",
        )
        produce(broker, name, range(100, 150))
        wait_for(
            lambda: rows(second, chdb, "svc_restart") == (150, 150),
            START_TIMEOUT_S,
            what="150 rows",
        )
        assert second.status(name).pid == worker_pid
    finally:
        second.close()  # the worker keeps running ...
    kill_pid_tree(worker_pid)  # ... until it dies too, like the server did

    # the next server finds it gone and restarts it from its checkpoint: exact
    produce(broker, name, range(150, 200))
    third = PipelineService(data_dir)
    third.start()
    try:
        wait_for(
            lambda: rows(third, chdb, "svc_restart") == (200, 200),
            START_TIMEOUT_S,
            what="200 rows",
        )
        # (a pipeline in the host: its pid is recorded once the new host took it)
        wait_for(
            lambda: third.database.worker_pid(name) not in (None, worker_pid), 30, what="a pid"
        )
        assert third.get(name).state is State.RUNNING
        notes = [c.note or "" for c in third.history(name)]
        assert any("restarted" in n for n in notes)
        # after a server and a worker killed -9, the figures of all three runs add up and
        # equal the table's
        wait_for(
            lambda: (third.status(name).written, third.status(name).read) == (200, 400),
            30,
            what="the counts of every run",
        )
        assert third.status(name).duplicates == 200
    finally:
        third.close(stop_all=True)
    assert third.endpoints.records.exists() and not list(third.endpoints.records.glob("*"))
