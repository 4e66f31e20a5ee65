"""GlassFlow's own Python SDK (glassflow 4.1.0, usage stats off) drives streamsift's
GlassFlow-compatible API on a real uvicorn server: pipelines from GlassFlow v3 JSON run on the
bundled broker into a chdb-backed ClickHouse endpoint, through the service's real workers.

Each pipeline start costs a Spark start-up, so one dedup pipeline goes through the whole
lifecycle in one test (create, list, get, health, DLQ, stop, resume, edit, delete), and one
join pipeline through its own (create, get, list, health, rows exact, DLQ, stop, resume,
exact, terminate, delete)."""

from __future__ import annotations

import copy
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import clickhouse_connect
import httpx
import pytest
from confluent_kafka import Producer

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from streamsift.embedded.broker import Broker
from streamsift.service.core import PipelineService
from support.clickhouse import rows as endpoint_rows
from support.paths import EXAMPLES
from support.servers import ServerThread
from support.service_pipeline import START_TIMEOUT_S
from support.waiting import wait_for

pytestmark = pytest.mark.integration
CH_PASSWORD = "gf-ch-secret-7Qx"


@pytest.fixture(scope="module")
def glassflow(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """GlassFlow's SDK, imported with usage stats off and HOME in a temp dir (it writes
    ~/.glassflow/clickhouse.conf when imported): nothing leaves this machine."""
    os.environ["GF_USAGESTATS_ENABLED"] = "false"
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path_factory.mktemp("gf-home"))
    try:
        import glassflow.etl as etl
    finally:
        if home is not None:
            os.environ["HOME"] = home
    return etl


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, PipelineService]]:
    service = PipelineService(tmp_path_factory.mktemp("gf-service") / "data")
    service.start()
    try:
        with ServerThread(create_app(ServiceSettings(), service=service)) as server:
            yield server.url, service
    finally:
        service.close(stop_all=True)


def ch_client(port: int) -> Any:
    return clickhouse_connect.get_client(host="127.0.0.1", port=port, password=CH_PASSWORD)


def adapted(name: str, broker: Broker, port: int, pipeline_id: str, topics: dict[str, str]) -> dict:
    """An example GlassFlow v3 file pointed at the test broker, topics and ClickHouse."""
    doc = json.loads((EXAMPLES / name).read_text())
    doc["pipeline_id"] = pipeline_id
    for source in doc["sources"]:
        source["connection_params"]["brokers"] = [broker.bootstrap_servers]
        source["topic"] = topics[source["source_id"]]
    conn = doc["sink"]["connection_params"]
    conn.update(host="127.0.0.1", port=str(port), http_port=str(port), password=CH_PASSWORD)
    doc["sink"]["table"] = pipeline_id.replace("-", "_")
    doc["sink"]["max_delay_time"] = "1s"
    return doc


def user_event(i: int) -> bytes:
    event = {
        "event_id": str(uuid.uuid5(uuid.NAMESPACE_OID, f"event-{i}")),
        "user": {
            "id": str(uuid.uuid5(uuid.NAMESPACE_OID, f"user-{i % 7}")),
            "name": f"user {i % 7}",
            "email": f"u{i % 7}@example.com",
        },
        "created_at": "2026-01-01 00:00:00",
        "tags": ["a", str(i)],
    }
    return json.dumps(event).encode()


def produce(broker: Broker, topic: str, values: list[bytes]) -> None:
    """Keyed by event_id when there is one: streamsift dedups per partition (docs/semantics.md),
    so repeats of a key must share a partition, as with producers keying by the dedup key."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for value in values:
        try:
            key = json.loads(value).get("event_id")
        except (ValueError, AttributeError):
            key = None
        producer.produce(topic, key=key.encode() if key else None, value=value)
    assert producer.flush(30) == 0


def rows(port: int, table: str) -> tuple[int, int]:
    return endpoint_rows(port, table, password=CH_PASSWORD)


def status(pipeline: Any) -> str:
    return pipeline.health()["overall_status"]


def test_glassflow_sdk_runs_a_dedup_pipeline_through_its_lifecycle(
    glassflow: Any, api: tuple[str, PipelineService], broker: Broker, clickhouse: int
) -> None:
    url, service = api
    pipeline_id = f"gf-dedup-{uuid.uuid4().hex[:8]}"
    topic = pipeline_id
    table = pipeline_id.replace("-", "_")
    config = adapted("glassflow-dedup-v3.json", broker, clickhouse, pipeline_id, {"users": topic})
    ch = ch_client(clickhouse)
    ch.command(
        f"CREATE TABLE {table} (event_id UUID, user_id UUID, name String, email String, "
        "created_at DateTime, tags Array(String)) ENGINE = MergeTree ORDER BY event_id"
    )
    ch.close()
    # 100 events, each twice, and 3 messages that are not events.
    malformed = [b"not json at all", b'{"event_id": "x"', b"[1, 2, 3]"]
    produce(broker, topic, [user_event(i) for i in range(100)] * 2 + malformed)

    client = glassflow.Client(host=url)
    client.disable_usagestats()
    pipeline = client.create_pipeline(config)
    with pytest.raises(glassflow.errors.PipelineAlreadyExistsError):
        client.create_pipeline(config)
    wait_for(lambda: status(pipeline) == "Running", START_TIMEOUT_S, what="Running")
    assert pipeline_id in [p.id for p in service.list()]  # visible natively too

    listed = {p["pipeline_id"]: p for p in client.list_pipelines()}
    assert listed[pipeline_id]["transformation_type"] == "Deduplication"
    assert listed[pipeline_id]["name"] == config["name"]
    assert listed[pipeline_id]["metadata"] == {"tags": ["demo", "dedup"]}

    fetched = client.get_pipeline(pipeline_id)
    assert fetched.config.pipeline_id == pipeline_id
    assert fetched.config.sink.connection_params.password == "***"  # never returned
    assert [f.name for f in fetched.config.sources[0].schema_fields][:2] == ["event_id", "user.id"]
    assert CH_PASSWORD not in httpx.get(f"{url}/api/v1/pipeline/{pipeline_id}").text
    versioned = httpx.get(f"{url}/api/v1/pipeline/{pipeline_id}", params={"schema": "users:2"})
    assert versioned.status_code == 400 and "schema versions" in versioned.json()["message"]

    # exactly once: every event once, the duplicates dropped, the bad messages in the DLQ
    wait_for(lambda: rows(clickhouse, table)[0] >= 100, START_TIMEOUT_S, what="100 rows")
    dlq = fetched.dlq
    wait_for(lambda: dlq.state()["total_messages"] >= 3, START_TIMEOUT_S, what="3 dead letters")
    assert rows(clickhouse, table) == (100, 100)
    state = dlq.state()
    assert (state["total_messages"], state["unconsumed_messages"]) == (3, 3)
    assert state["last_received_at"] and state["last_consumed_at"] is None
    first = dlq.consume(batch_size=2)
    rest = dlq.consume(batch_size=10)
    assert len(first) == 2 and len(rest) == 1 and dlq.consume(batch_size=10) == []
    messages = {m["original_message"] for m in first + rest}
    assert messages == {m.decode() for m in malformed}
    assert {m["component"] for m in first + rest} == {"ingestor"}
    assert all(m["error"] for m in first + rest)
    state = dlq.state()
    assert state["unconsumed_messages"] == 0 and state["last_consumed_at"]
    too_big = httpx.get(f"{url}/api/v1/pipeline/{pipeline_id}/dlq/consume?batch_size=1001")
    assert too_big.status_code == 422
    dlq.purge()
    assert dlq.state()["total_messages"] == 0

    # stop, then resume from the checkpoint: new events once, old ones not again
    pipeline.stop()
    wait_for(lambda: status(pipeline) == "Stopped", START_TIMEOUT_S, what="Stopped")
    with pytest.raises(glassflow.errors.PipelineAlreadyInStateError):
        pipeline.stop()
    produce(broker, topic, [user_event(i) for i in range(50, 150)] * 2)
    pipeline.resume()
    wait_for(lambda: rows(clickhouse, table)[0] >= 150, START_TIMEOUT_S, what="150 rows")
    wait_for(lambda: status(pipeline) == "Running", START_TIMEOUT_S, what="Running")
    with pytest.raises(glassflow.errors.PipelineDeletionStateViolationError):
        pipeline.delete()

    # edit a stopped pipeline (the SDK reads it back, patches it, posts it; it resumes)
    pipeline.stop()
    wait_for(lambda: status(pipeline) == "Stopped", START_TIMEOUT_S, what="Stopped")
    pipeline.update({"sink": {"max_batch_size": 500}})
    wait_for(lambda: status(pipeline) == "Running", START_TIMEOUT_S, what="Running after the edit")
    assert client.get_pipeline(pipeline_id).config.sink.max_batch_size == 500
    assert rows(clickhouse, table) == (150, 150)

    pipeline.stop(terminate=True)
    wait_for(lambda: status(pipeline) == "Stopped", START_TIMEOUT_S, what="Stopped")
    pipeline.delete()
    with pytest.raises(glassflow.errors.PipelineNotFoundError):
        client.get_pipeline(pipeline_id)
    assert rows(clickhouse, table) == (150, 150)


def order(i: int) -> bytes:
    return json.dumps({"order_id": f"o{i}", "user_id": f"u{i % 5}", "amount": i + 0.5}).encode()


def joined_rows(port: int, table: str) -> tuple[int, int, int]:
    """(rows, distinct orders, rows whose user_name matches their order's user) of `table`."""
    client = ch_client(port)
    try:
        total, distinct, matched = client.query(
            f"SELECT count(), uniqExact(order_id), countIf(user_name = concat('user ', "
            f"toString(toInt64(substring(order_id, 2)) % 5))) FROM {table}"
        ).result_rows[0]
        return int(total), int(distinct), int(matched)
    finally:
        client.close()


def test_glassflow_sdk_runs_a_join_pipeline_exactly_through_stop_and_resume(
    glassflow: Any, api: tuple[str, PipelineService], broker: Broker, clickhouse: int
) -> None:
    url, service = api
    pipeline_id = f"gf-join-{uuid.uuid4().hex[:8]}"
    topics = {"orders": f"{pipeline_id}-orders", "users": f"{pipeline_id}-users"}
    config = adapted("glassflow-join-v3.json", broker, clickhouse, pipeline_id, topics)
    table = config["sink"]["table"]
    ch = ch_client(clickhouse)
    ch.command(
        f"CREATE TABLE {table} (order_id String, amount Float64, user_name String) "
        "ENGINE = MergeTree ORDER BY order_id"
    )
    ch.close()
    for topic in topics.values():
        broker.create_topic(topic, 1)  # one partition: orders' re-sends meet their first copy
    users = [json.dumps({"user": {"id": f"u{i}", "name": f"user {i}"}}).encode() for i in range(5)]
    produce(broker, topics["users"], users)
    malformed = [b"{not an order", b"[1, 2]"]
    produce(broker, topics["orders"], [order(i) for i in range(20)] * 2 + malformed)

    client = glassflow.Client(host=url)
    pipeline = client.create_pipeline(copy.deepcopy(config))
    fetched = client.get_pipeline(pipeline_id)
    assert fetched.config.join.enabled and fetched.config.join.left_source.key == "user_id"
    assert fetched.config.join.output_fields[2].output_name == "user_name"
    listed = {p["pipeline_id"]: p for p in client.list_pipelines()}
    assert listed[pipeline_id]["transformation_type"] == "Join & Deduplication"
    wait_for(lambda: status(pipeline) == "Running", START_TIMEOUT_S, what="Running")

    # every order once, joined with its user; the bad messages in the DLQ
    wait_for(
        lambda: joined_rows(clickhouse, table)[0] >= 20,
        START_TIMEOUT_S,
        what="20 joined rows",
    )
    dlq = fetched.dlq
    wait_for(lambda: dlq.state()["total_messages"] >= 2, START_TIMEOUT_S, what="2 dead letters")
    assert joined_rows(clickhouse, table) == (20, 20, 20)
    assert dlq.state()["unconsumed_messages"] == 2
    letters = dlq.consume(batch_size=5)
    assert {m["original_message"] for m in letters} == {m.decode() for m in malformed}
    assert dlq.state()["unconsumed_messages"] == 0
    dlq.purge()
    assert dlq.state()["total_messages"] == 0
    wait_for(  # seen natively too: 47 read (42 orders, 5 users), 20 re-sends dropped
        lambda: service.status(pipeline_id).duplicates == 20,
        60,
        what="the status to count the duplicates",
    )

    # stop; orders arrive meanwhile (each twice); resume: joined with the users held in the
    # join's state, each once
    pipeline.stop()
    wait_for(lambda: status(pipeline) == "Stopped", START_TIMEOUT_S, what="Stopped")
    produce(broker, topics["orders"], [order(i) for i in range(20, 30)] * 2)
    pipeline.resume()
    wait_for(lambda: status(pipeline) == "Running", START_TIMEOUT_S, what="Running again")
    wait_for(
        lambda: joined_rows(clickhouse, table)[0] >= 30,
        START_TIMEOUT_S,
        what="30 joined rows",
    )
    assert joined_rows(clickhouse, table) == (30, 30, 30)
    with pytest.raises(glassflow.errors.InvalidStatusTransitionError) as refused:
        pipeline.update({"sink": {"max_batch_size": 500}})  # no edit while running
    assert "must be stopped" in str(refused.value)

    pipeline.stop(terminate=True)
    wait_for(lambda: status(pipeline) == "Stopped", START_TIMEOUT_S, what="Stopped")
    pipeline.delete()
    assert pipeline_id not in {p["pipeline_id"] for p in client.list_pipelines()}
    assert joined_rows(clickhouse, table) == (30, 30, 30)


def test_migrate_preview_converts_v2_and_v1_to_v3_and_creates_nothing(
    glassflow: Any, api: tuple[str, PipelineService]
) -> None:
    url, service = api
    client = glassflow.Client(host=url)
    before = [p.id for p in service.list()]
    v2 = json.loads((EXAMPLES / "glassflow-dedup-v2.json").read_text())
    v3 = client.migrate_pipeline_v2_to_v3(v2)  # validated by the SDK's own v3 model
    assert v3.pipeline_id == v2["pipeline_id"] and v3.name == v2["name"]
    assert v3.transforms[0].config.key == "event_id"
    v1 = json.loads((EXAMPLES / "glassflow-join-v1.json").read_text())
    joined = client.migrate_pipeline_v2_to_v3(v1)
    assert joined.join.enabled
    assert [p.id for p in service.list()] == before
    bad = httpx.post(f"{url}/api/v1/pipeline/migrate-preview", json={"version": "v9"})
    assert bad.status_code == 422 and bad.json()["details"]["error"]
    assert httpx.get(f"{url}/api/v1/healthz").status_code == 200
    assert httpx.get(f"{url}/api/v1/platform").json()["orchestrator"] == "local"
