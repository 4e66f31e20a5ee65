"""The pipeline and DLQ routes end to end: `streamsift serve` as a subprocess, driven over
HTTP with the SDK, real worker processes (Spark), the bundled broker and a ClickHouse endpoint
(chdb behind HTTP, embedded/clickhouse_server.py) the test reads rows from.

Every pipeline start costs a Spark driver (~15-20 s here): one server serves the module, and
each test starts as few pipelines as its point needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import clickhouse_connect
import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from streamsift.embedded.broker import Broker, free_port
from streamsift.sdk import Client, Conflict, NotFound
from streamsift.spark_host.processes import kill_pid_tree
from support.clickhouse import rows
from support.servers import Serve
from support.service_pipeline import START_TIMEOUT_S, pipeline_doc, produce
from support.waiting import wait_for

pytestmark = pytest.mark.integration

TOKEN = "api-pipelines-token"
CH_PASSWORD = "ch-Secret-7Qz1"
SASL_PASSWORD = "sasl-Secret-K4p8"


def api_serve(data_dir: Path, log: Path) -> Serve:
    """`streamsift serve --verbose` with the token, on a free port and a data dir."""
    return Serve(data_dir, log, ["--verbose"], {"STREAMSIFT_API_TOKEN": TOKEN})


def in_state(client: Client, pipeline_id: str, state: str) -> Callable[[], bool]:
    def check() -> bool:
        current = client.get(pipeline_id).state
        assert state == "Failed" or current != "Failed", client.status(pipeline_id).error
        return current == state

    return check


def terminate_all(client: Client) -> None:
    """Leave no worker behind: the server's shutdown keeps pipelines running on purpose."""
    for record in client.pipelines():
        if record.state not in ("Stopped", "Failed"):
            with contextlib.suppress(Conflict):
                client.terminate(record.id)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    tmp = tmp_path_factory.mktemp("api-serve")
    serve = api_serve(tmp / "data", tmp / "serve.log").start()
    try:
        yield serve
    finally:
        # best effort: a server that died in a test must not hide that test's failure
        with contextlib.suppress(Exception), serve.client() as client:  # noqa: BLE001
            terminate_all(client)
        serve.stop()


@pytest.fixture
def sdk(server: Serve) -> Iterator[Client]:
    with server.client() as client:
        yield client


# ------------------------------------------------------------------ (a) the lifecycle


def test_a_pipeline_from_yaml_through_its_lifecycle_exactly_once(
    server: Serve, sdk: Client, broker: Broker, clickhouse: int
) -> None:
    name, table = "api-main", "api_main"
    broker.create_topic(name, 2)
    produce(broker, name, range(100), extra=(b"{not json", b"\xff\xfe not utf-8"))
    doc = pipeline_doc(name, broker, {"host": "127.0.0.1", "port": clickhouse})
    created = httpx.post(
        f"{server.url}/api/v1/pipelines",
        content=yaml.safe_dump(doc),
        headers={"Content-Type": "application/yaml", "Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert created.status_code == 201, created.text
    assert created.json()["state"] == "Created" and created.json()["version"] == 1
    assert [p.id for p in sdk.pipelines()] == [name]

    wait_for(in_state(sdk, name, "Running"), START_TIMEOUT_S, what="Running")
    wait_for(lambda: rows(clickhouse, table) == (100, 100), START_TIMEOUT_S, what="100 rows")
    wait_for(  # (the sink's counts come before Spark's report of the batch, with its lag)
        lambda: (
            (sdk.status(name).written, sdk.status(name).read, sdk.status(name).lag is None)
            == (100, 202, False)
        ),
        60,
        what="the status to count them",
    )
    status = sdk.status(name)
    assert (status.duplicates, status.dlq, status.worker_state) == (100, 2, "running")
    assert status.lag is not None and status.rows_per_second and status.rows_per_second > 0
    assert set(status.lag_by_partition) == {f"{name}/0", f"{name}/1"}
    assert status.last_batch_at is not None and status.last_batch_duration_ms is not None
    check_metrics(sdk, name, clickhouse, sdk.dlq_stats(name).table)

    # the dead letters: stats, a page, consume, replay (dry), purge
    stats = sdk.dlq_stats(name)
    assert (stats.exists, stats.total, stats.pending, stats.consumed) == (True, 2, 2, 0)
    assert {c.stage for c in stats.by_class} == {"parse"}
    first, second = sdk.dlq_messages(name, limit=1), sdk.dlq_messages(name, limit=1, offset=1)
    assert (first.pending, len(first.messages), len(second.messages)) == (2, 1, 1)
    letters = first.messages + second.messages
    assert {(x.payload, x.payload_base64) for x in letters} == {
        ("{not json", None),
        (None, "//4gbm90IHV0Zi04"),  # b"\xff\xfe not utf-8"
    }
    assert sdk.dlq_messages(name, offset=2).messages == []
    taken = sdk.dlq_consume(name, limit=1)
    assert taken.consumed == 1 and taken.messages[0].offset == letters[0].offset
    assert (sdk.dlq_stats(name).pending, sdk.dlq_stats(name).consumed) == (1, 1)
    dry = sdk.dlq_replay(name, dry_run=True)
    assert (dry.dry_run, dry.replayed, dry.still_failing) == (True, 0, 1)
    assert sdk.dlq_purge(name).purged == 2
    assert sdk.dlq_stats(name).total == 0

    # stop, produce while stopped, resume: exact
    assert sdk.stop(name).state == "Stopping"
    wait_for(in_state(sdk, name, "Stopped"), START_TIMEOUT_S, what="Stopped")
    produce(broker, name, range(100, 150))
    assert sdk.resume(name).state == "Resuming"
    wait_for(in_state(sdk, name, "Running"), START_TIMEOUT_S, what="Running again")
    wait_for(lambda: rows(clickhouse, table) == (150, 150), START_TIMEOUT_S, what="150 rows")

    # a running pipeline is not edited: 409 with its state and what it may become
    current = sdk.document(name)
    with pytest.raises(Conflict) as refused:
        sdk.edit(name, current)
    assert refused.value.status == 409
    assert refused.value.details["current_status"] == "Running"
    assert refused.value.details["valid_transitions"] == [
        "Stopping",
        "Retrying",
        "Terminating",
        "Failed",
    ]
    with pytest.raises(Conflict):
        sdk.delete(name)

    # stopped, a change of the dedup window needs reset_state, and the message says why
    sdk.stop(name)
    wait_for(in_state(sdk, name, "Stopped"), START_TIMEOUT_S, what="Stopped")
    changed = sdk.document(name)
    changed["dedup"]["time_window"] = "2h"
    with pytest.raises(Conflict) as refused:
        sdk.edit(name, changed)
    assert "dedup" in refused.value.server_message
    assert "checkpoint" in refused.value.server_message
    assert "reset_state=true" in (refused.value.hint or "")
    assert sdk.edit(name, changed, reset_state=True).version == 2
    assert sdk.document(name)["dedup"]["time_window"] == "2h"

    states = [c.to_state for c in sdk.history(name)]
    assert states[:6] == ["Created", "Running", "Stopping", "Stopped", "Resuming", "Running"]
    assert states[-2:] == ["Stopping", "Stopped"]
    sdk.delete(name)
    with pytest.raises(NotFound):
        sdk.get(name)
    with pytest.raises(NotFound):
        sdk.dlq_stats(name)


def check_metrics(sdk: Client, name: str, port: int, dlq_table: str) -> None:
    """/metrics parses with prometheus_client's parser, and its counters are the table's rows
    and the DLQ table's rows by stage and error class."""
    families = {f.name: f for f in text_string_to_metric_families(sdk.metrics())}
    samples: dict[tuple[str, frozenset], float] = {
        (s.name, frozenset(s.labels.items())): s.value
        for f in families.values()
        for s in f.samples
        if s.labels.get("pipeline") == name
    }

    def value(metric: str, **labels: str) -> float:
        return samples[(metric, frozenset({"pipeline": name, **labels}.items()))]

    table_rows, _ = rows(port, name.replace("-", "_"))
    assert value("streamsift_rows_written_total") == table_rows == 100
    assert value("streamsift_rows_read_total") == 202  # 200 events and 2 bad messages
    assert value("streamsift_duplicates_dropped_total") == 100
    client = clickhouse_connect.get_client(host="127.0.0.1", port=port)
    try:
        in_table = client.query(
            f"SELECT stage, error_class, count() FROM {dlq_table} GROUP BY stage, error_class"
        ).result_rows
    finally:
        client.close()
    by_class = {
        (dict(labels)["stage"], dict(labels)["error_class"]): n
        for (metric, labels), n in samples.items()
        if metric == "streamsift_dlq_records_total"
    }
    assert by_class == {(stage, cls): n for stage, cls, n in in_table}
    assert sum(by_class.values()) == 2
    assert value("streamsift_pipeline_status", status="Running") == 1
    assert value("streamsift_pipeline_status", status="Stopped") == 0
    partitions = {
        dict(labels)["partition"]
        for (metric, labels) in samples
        if metric == "streamsift_lag_messages"
    }
    assert partitions == {"0", "1"}
    batches = value("streamsift_micro_batch_duration_seconds_count")
    assert batches >= 1
    assert value("streamsift_micro_batch_duration_seconds_bucket", le="+Inf") == batches
    assert value("streamsift_end_to_end_latency_seconds_count") == table_rows
    assert value("streamsift_end_to_end_latency_seconds_sum") > 0
    assert families["streamsift_end_to_end_latency_seconds"].type == "histogram"
    assert families["streamsift_clickhouse_retries"].type == "counter"


# ------------------------------------------------------------------ (b) kill -9 of the server


def test_after_kill_9_of_serve_the_next_serve_runs_the_pipeline_on_exactly(
    broker: Broker, clickhouse: int, tmp_path: Path
) -> None:
    name, table = "api-restart", "api_restart"
    broker.create_topic(name, 2)
    produce(broker, name, range(100))
    first = api_serve(tmp_path / "data", tmp_path / "serve.log").start()
    worker_pid = None
    try:
        with first.client() as client:
            client.create(pipeline_doc(name, broker, {"host": "127.0.0.1", "port": clickhouse}))
            wait_for(in_state(client, name, "Running"), START_TIMEOUT_S, what="Running")
            wait_for(
                lambda: rows(clickhouse, table) == (100, 100),
                START_TIMEOUT_S,
                what="100 rows",
            )
            worker_pid = client.status(name).pid
            produce(broker, name, range(100, 150))  # mid-run
    finally:
        first.kill()

    second = api_serve(tmp_path / "data", tmp_path / "serve.log")
    try:
        second.start()
        with second.client() as client:
            wait_for(in_state(client, name, "Running"), START_TIMEOUT_S, what="Running")
            produce(broker, name, range(150, 200))
            wait_for(
                lambda: rows(clickhouse, table) == (200, 200),
                START_TIMEOUT_S,
                what="200 rows",
            )
            assert client.get(name).desired_state == "running"
            client.terminate(name)
            assert client.get(name).state == "Stopped"
    finally:
        second.stop()
        if worker_pid is not None:
            kill_pid_tree(worker_pid)  # a no-op unless the test failed before terminate
    assert rows(clickhouse, table) == (200, 200)


# ------------------------------------------------------------------ (c) secrets


def test_no_route_and_no_log_shows_a_password(server: Serve, sdk: Client, broker: Broker) -> None:
    name = "api-secrets"
    broker.create_topic(name, 1)
    doc = pipeline_doc(
        name,
        broker,
        {"host": "127.0.0.1", "port": free_port(), "password": CH_PASSWORD},
        connect_timeout="2s",
    )
    doc["source"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "PLAIN",
        "username": "streamsift",
        "password": SASL_PASSWORD,
    }
    created = sdk.create(doc)
    wait_for(in_state(sdk, name, "Retrying"), START_TIMEOUT_S, what="Retrying")
    answers = [
        httpx.get(f"{server.url}{path}", headers={"Authorization": f"Bearer {TOKEN}"})
        for path in (
            "/api/v1/pipelines",
            f"/api/v1/pipelines/{name}",
            f"/api/v1/pipelines/{name}/document",
            f"/api/v1/pipelines/{name}/status",
            f"/api/v1/pipelines/{name}/history",
            "/metrics",
        )
    ]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    document = sdk.document(name)
    assert document["sink"]["clickhouse"]["password"] == "***"
    assert document["source"]["security"]["password"] == "***"
    assert sdk.status(name).error  # it says why it retries, readably
    texts = [created.model_dump_json(), *(a.text for a in answers)]
    texts.append(server.log.read_text())
    texts += [p.read_text() for p in server.data_dir.rglob("*.log")]
    for text in texts:
        assert CH_PASSWORD not in text and SASL_PASSWORD not in text
    sdk.stop(name)
    wait_for(in_state(sdk, name, "Stopped"), START_TIMEOUT_S, what="Stopped")
    sdk.delete(name)


# ------------------------------------------------------------------ (d) one fails, one goes on


def test_a_pipeline_whose_clickhouse_refuses_fails_alone(
    sdk: Client, broker: Broker, clickhouse: int
) -> None:
    good, bad = "api-good", "api-refused"
    for topic in (good, bad):
        broker.create_topic(topic, 1)
        produce(broker, topic, range(100))
    closed = free_port()
    refused = pipeline_doc(bad, broker, {"host": "127.0.0.1", "port": closed}, connect_timeout="2s")
    # one retry allowed: Retrying first, then Failed once the retry is used up
    refused["runtime"] = {"retry": {"max_attempts": 1, "first_backoff": "1s"}}
    sdk.create(refused)
    sdk.create(pipeline_doc(good, broker, {"host": "127.0.0.1", "port": clickhouse}))
    wait_for(in_state(sdk, bad, "Failed"), START_TIMEOUT_S, what=f"{bad} Failed")
    failed = sdk.status(bad)
    assert failed.error is not None and f"127.0.0.1:{closed}" in failed.error
    assert failed.error.startswith("gave up after 1 retries")
    assert failed.error_at is not None and "Traceback" not in failed.error
    assert [c.to_state for c in sdk.history(bad)][-2:] == ["Retrying", "Failed"]

    wait_for(lambda: rows(clickhouse, "api_good") == (100, 100), START_TIMEOUT_S, what="100 rows")
    produce(broker, good, range(100, 150))
    wait_for(lambda: rows(clickhouse, "api_good") == (150, 150), START_TIMEOUT_S, what="150 rows")
    assert sdk.get(good).state == "Running"
    sdk.terminate(good)
    for pipeline_id in (good, bad):
        sdk.delete(pipeline_id)
    assert sdk.pipelines() == []
