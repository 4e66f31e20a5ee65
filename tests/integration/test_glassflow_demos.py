"""GlassFlow's own demo pipelines (tests/data/glassflow_demos), imported unchanged and run on
the real broker, Spark and chdb: every demo whose source is Kafka. The first test runs the OTel
traces demo (dedup, Nested arrays named `Events.Timestamp`, maps, DateTime64 without
precision), the OTel histogram demo (arrays of numbers, of maps and of DateTime64) and the
getting-started dedup demo (UUID, DateTime, nested fields); the parametrized one runs the rest
(the config and getting-started dedup and join demos in their v1 and newer versions, fraud
detection in v2 and v3 with its filter and dedup, and the logs, gauge, sum and summary
observability demos). Only the addresses change (broker, embedded ClickHouse, topics, table;
the demos' SASL settings go with their broker: the bundled one takes no auth); rows are read
back and counted exactly, and so are the dead letters. Every demo runs: none needs anything
GlassFlow-specific."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.glassflow.importer import import_glassflow
from streamsift.engine.runner import PipelineRunner
from streamsift.sinks.dlq_queries import DlqQueries
from support.paths import DEMOS

pytestmark = pytest.mark.integration

UUIDS = [f"6f1c1e6e-8a4b-4c5e-9f1c-1e6e8a4b4c5{i}" for i in range(10)]


def span(i: int, nested: bool) -> dict[str, Any]:
    events = {
        "Timestamp": [f"2025-01-02T03:04:0{i}.250Z"],
        "Name": [f"event-{i}"],
        "Attributes": [{"k": f"v{i}", "n": i}],
    }
    doc: dict[str, Any] = {
        "Timestamp": f"2025-01-02T03:04:0{i}.123456789Z",
        "TraceId": f"trace-{i}",
        "SpanId": f"span-{i}",
        "ParentSpanId": "",
        "TraceState": "",
        "SpanName": "GET /orders",
        "SpanKind": "Server",
        "ServiceName": "api",
        "ResourceAttributes": {"host.name": "h1"},
        "ScopeName": "otel",
        "ScopeVersion": "1.0",
        "SpanAttributes": {"http.status_code": 200},
        "Duration": 1500 + i,
        "StatusCode": "Ok",
        "StatusMessage": "",
        "Links.TraceId": [],
        "Links.SpanId": [],
        "Links.TraceState": [],
        "Links.Attributes": [],
    }
    if nested:
        doc["Events"] = events
    else:
        doc.update({f"Events.{k}": v for k, v in events.items()})
    return doc


def histogram(i: int) -> dict[str, Any]:
    return {
        **otel_common(i),
        "ResourceAttributes": {"service.name": "api"},
        "MetricName": f"latency-{i}",
        "MetricDescription": "request latency",
        "MetricUnit": "ms",
        "TimeUnix": f"2025-01-02T03:04:0{i}.5Z",
        "Count": 6,
        "Sum": 3.5,
        "BucketCounts": [1, 2, 3],
        "ExplicitBounds": [0.5, 1.0],
        "Exemplars": {
            "FilteredAttributes": [{"a": "b"}],
            "TimeUnix": ["2025-01-02 03:04:05.5"],
            "Value": [0.75],
            "SpanId": ["s1"],
            "TraceId": ["t1"],
        },
        "Flags": 0,
        "Min": 0.1,
        "Max": 2.0,
        "AggregationTemporality": 2,
    }


def user_event(i: int) -> dict[str, Any]:
    return {
        "event_id": UUIDS[i],
        "user": {"id": UUIDS[9 - i], "name": f"user {i}", "email": f"u{i}@example.com"},
        "created_at": f"2025-01-02 03:04:0{i}",
        "tags": ["a", f"t{i}"],
    }


def run_demo(
    file: str | dict[str, Any],
    messages: list[dict[str, Any]] | dict[str, list[dict[str, Any]]],
    name: str,
    broker: Any,
    chdb_path: Path,
    tmp_path: Path,
    produce_messages: Any,
    order_by: list[str] | None = None,
    dead_letters: int = 0,
) -> tuple[PipelineRunner, str]:
    """Import the demo, point it at the test broker, fresh topics and the embedded
    ClickHouse, produce `messages` (a list for a one-topic demo; by the demo's topic name
    for a join) and run the pipeline until it has caught up. The demo's SASL settings go
    with its addresses: the bundled broker takes no auth. `dead_letters`: how many messages
    the DLQ must hold afterwards (checked exactly). `file` may be a GlassFlow document."""
    source_doc = file if isinstance(file, dict) else json.loads((DEMOS / file).read_text())
    doc = import_glassflow(source_doc).document
    doc["name"] = name.replace("_", "-")[:90]
    by_topic = messages if isinstance(messages, dict) else None
    for source in doc.get("sources") or [doc["source"]]:
        topic = f"{name}_{source['topic']}".replace("-", "_") if by_topic else name
        sent = by_topic[source["topic"]] if by_topic else messages
        source.pop("security", None)
        source.update(
            bootstrap_servers=broker.bootstrap_servers, topic=topic, start_from="earliest"
        )
        broker.create_topic(topic, 1)
        produce_messages(topic, [(None, json.dumps(m).encode()) for m in sent])
    doc["sink"].update(clickhouse={"path": str(chdb_path)}, table=name, create_table=True)
    if order_by:
        doc["sink"]["order_by"] = order_by
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / name)}
    pipeline = parse_pipeline(doc)
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    runner.run(until_caught_up=True)
    store = DlqQueries(runner.writer, pipeline.dlq_table)
    store.open()
    refused = store.pending(100)
    assert len(refused) == dead_letters, [d.origin_error for d in refused]
    return runner, name


def test_glassflow_demo_pipelines_run_unchanged(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    # the OTel traces demo: 6 spans, one a re-send (same TraceId: dedup keeps the first)
    spans = [span(i, nested=i % 2 == 0) for i in range(5)]
    spans.append({**span(3, nested=True), "SpanName": "re-sent"})
    runner, table = run_demo(
        "observability__traces-pipeline.json",
        spans,
        f"{unique_name}_traces",
        broker,
        chdb_path,
        tmp_path,
        produce_messages,
    )
    rows = runner.writer.query_rows(
        f"SELECT TraceId, toString(Timestamp), SpanName, SpanAttributes['http.status_code'], "
        f"toString(`Events.Timestamp`), `Events.Name`, toString(`Events.Attributes`), Duration "
        f"FROM {table} ORDER BY TraceId"
    )
    assert len(rows) == 5
    assert rows[3] == (
        "trace-3",
        "2025-01-02 03:04:03.123",
        "GET /orders",
        "200",
        "['2025-01-02 03:04:03.250']",
        ["event-3"],
        "[{'k':'v3','n':'3'}]",
        1503,
    )
    assert {r[5][0] for r in rows} == {f"event-{i}" for i in range(5)}  # nested and literal keys

    # the OTel histogram demo: arrays of numbers, of maps and of DateTime64
    runner, table = run_demo(
        "observability__metrics-histogram-pipeline.json",
        [histogram(i) for i in range(3)],
        f"{unique_name}_hist",
        broker,
        chdb_path,
        tmp_path,
        produce_messages,
        order_by=["MetricName"],
    )
    rows = runner.writer.query_rows(
        f"SELECT MetricName, toString(TimeUnix), BucketCounts, ExplicitBounds, "
        f"toString(`Exemplars.FilteredAttributes`), toString(`Exemplars.TimeUnix`), "
        f"AggregationTemporality FROM {table} ORDER BY MetricName"
    )
    assert rows == [
        (
            f"latency-{i}",
            f"2025-01-02 03:04:0{i}.500",
            [1, 2, 3],
            [0.5, 1.0],
            "[{'a':'b'}]",
            "['2025-01-02 03:04:05.500']",
            2,
        )
        for i in range(3)
    ]

    # the getting-started dedup demo: 4 events, one a re-send
    events = [user_event(i) for i in range(3)] + [{**user_event(1), "tags": ["again"]}]
    runner, table = run_demo(
        "getting-started__deduplication_pipeline.json",
        events,
        f"{unique_name}_users",
        broker,
        chdb_path,
        tmp_path,
        produce_messages,
    )
    rows = runner.writer.query_rows(
        f"SELECT toString(event_id), toString(user_id), toString(created_at), name, tags "
        f"FROM {table} ORDER BY event_id"
    )
    assert rows == [
        (UUIDS[i], UUIDS[9 - i], f"2025-01-02 03:04:0{i}", f"user {i}", ["a", f"t{i}"])
        for i in range(3)
    ]


# ---------------------------------------------------------------- the other Kafka demos
# Events shaped as each demo's producer sends them: glassgen's user/order events (demos/config
# and demos/getting-started: flat in the older v1 files, `user.*` nested in the newer ones),
# the fraud demo's login-events.ndjson lines, and the observability demos' flattened OTel rows
# (the column names of the ClickHouse OTel exporter's tables). Each demo runs once (availableNow)
# on the session's Spark, broker and chdb; rows are read back and counted exactly, and so are
# the dead letters.

USERS = [f"7a1c2e3f-4b5d-4e6f-8a9b-0c1d2e3f4a5{i}" for i in range(4)]
ORDERS = [f"0b1c2d3e-4f5a-4b6c-9d7e-8f9a0b1c2d3{i}" for i in range(5)]
NO_USER = "ffffffff-0000-4000-8000-000000000000"
AT = "2025-01-02 03:04:0"


def flat_user(i: int) -> dict[str, Any]:
    return {
        "event_id": UUIDS[i],
        "user_id": USERS[i],
        "name": f"user {i}",
        "email": f"u{i}@example.com",
        "created_at": f"{AT}{i}",
    }


def nested_user(i: int, id_key: str = "event_id") -> dict[str, Any]:
    return {
        id_key.split(".")[0]: {"id": UUIDS[i]} if "." in id_key else UUIDS[i],
        "user": {"id": USERS[i], "name": f"user {i}", "email": f"u{i}@example.com"},
        "created_at": f"{AT}{i}",
        "tags": ["a", f"t{i}"],
    }


def order(i: int, user: str, typed: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {"order_id": ORDERS[i], "user_id": user, "created_at": f"{AT}{5 + i}"}
    doc.update({"amount": 2 + i, "price": 9.5 + i} if typed else {"amount": str(2 + i)})
    return doc


# orders 0 and 1 from user 0, order 2 from user 1, order 3 from nobody: 3 joined rows
def join_orders(typed: bool) -> list[dict[str, Any]]:
    users = [USERS[0], USERS[0], USERS[1], NO_USER]
    return [order(i, u, typed) for i, u in enumerate(users)]


LOGINS = [  # demos/fraud-detection/data/login-events.ndjson (a few lines, two re-sent)
    ("5d9dc9f8-1818-4811-892f-902bd23f0824", "diana", "success", ""),
    ("5f557203-3018-40c5-a38f-d547923a7369", "eve", "failed", "account_locked"),
    ("5f557203-3018-40c5-a38f-d547923a7369", "eve", "failed", "account_locked"),
    ("6b4cb242-4a23-4596-a217-beaddbc496cb", "alice", "success", ""),
    ("6b4cb242-4a23-4596-a217-beaddbc496cb", "alice", "success", ""),
    ("13deef86-ab10-41d0-b646-e1f40a097c97", "charlie", "success", ""),
    ("not-a-uuid", "mallory", "success", ""),  # event_id is a UUID column: a dead letter
]


def login(n: int) -> dict[str, Any]:
    event_id, user, status, reason = LOGINS[n]
    return {
        "event_id": event_id,
        "event_time": f"2026-03-21T16:40:0{n}Z",
        "user_id": user,
        "ip_address": f"203.0.113.{n}",
        "device_id": f"device-{n}",
        "country": "US",
        "status": status,
        "failure_reason": reason,
    }


def otel_common(i: int) -> dict[str, Any]:
    return {
        "ResourceAttributes": {"service.name": "api", "host.name": "h1"},
        "ResourceSchemaUrl": "",
        "ScopeName": "otel",
        "ScopeVersion": "1.0",
        "ScopeAttributes": {},
        "ScopeDroppedAttrCount": 0,
        "ScopeSchemaUrl": "",
        "ServiceName": "api",
        "MetricName": f"m-{i}",
        "MetricDescription": "a metric",
        "MetricUnit": "1",
        "Attributes": {"route": "/orders"},
        "StartTimeUnix": "2025-01-02T03:00:00Z",
        "TimeUnix": f"2025-01-02T03:04:0{i}.25Z",
        "Flags": 0,
    }


def log_record(i: int) -> dict[str, Any]:
    return {
        "Timestamp": f"2025-01-02T03:04:0{i}.123456Z",
        "TraceId": f"trace-{i}",
        "SpanId": f"span-{i}",
        "TraceFlags": 1,
        "SeverityText": "INFO",
        "SeverityNumber": 9,
        "ServiceName": "api",
        "Body": f"request {i} served",
        "ResourceSchemaUrl": "",
        "ResourceAttributes": {"host.name": "h1"},
        "ScopeSchemaUrl": "",
        "ScopeName": "otel",
        "ScopeVersion": "1.0",
        "ScopeAttributes": {},
        "LogAttributes": {"http.status_code": "200"},
    }


def gauge(i: int) -> dict[str, Any]:
    return {**otel_common(i), "Value": 0.5 + i}


def metric_sum(i: int) -> dict[str, Any]:
    return {**gauge(i), "IsMonotonic": True, "AggregationTemporality": 2}


def summary(i: int) -> dict[str, Any]:
    return {
        **otel_common(i),
        "Count": 10 + i,
        "Sum": 2.5 * i,
        "ValueAtQuantiles.Quantile": [0.5, 0.99],
        "ValueAtQuantiles.Value": [1.0 + i, 3.0 + i],
    }


# user_events ⋈ orders on user_id: user events on the left, so (mode latest, as GlassFlow)
# one row per user event, with the first of its user's orders (produced after it)
JOIN_ROWS_FLAT = [
    (ORDERS[i], USERS[u], f"user {u}", f"u{u}@example.com", str(2 + i), f"{AT}{5 + i}")
    for i, u in ((0, 0), (2, 1))
]
JOIN_ROWS_TYPED = [
    (ORDERS[i], USERS[u], f"user {u}", 2 + i, 9.5 + i, f"{AT}{5 + i}", ["a", f"t{u}"])
    for i, u in ((0, 0), (1, 0), (2, 1))
]
TYPED_JOIN_SQL = (
    "SELECT toString(order_id), toString(user_id), name, amount, price, toString(created_at), "
    "tags FROM {t} ORDER BY order_id"
)
FLAT_JOIN_SQL = (
    "SELECT toString(order_id), toString(user_id), user_name, user_email, order_amount, "
    "toString(order_created_at) FROM {t} ORDER BY order_id"
)
DEDUP_USERS = [  # 3 users, user 1 sent twice (the dedup keeps the first)
    (UUIDS[i], USERS[i], f"{AT}{i}", f"user {i}") for i in range(3)
]
METRIC_SQL = "SELECT MetricName, toString(TimeUnix), {v} FROM {t} ORDER BY MetricName"
METRIC_ORDER = ["MetricName"]
# 7 logins: 2 failed (filtered out), 1 re-send of a kept login (deduplicated), 1 bad: 3 rows
FRAUD_RUN = (
    [login(n) for n in range(len(LOGINS))],
    None,
    1,
    "SELECT toString(event_id), toString(event_time), user_id, status FROM {t} ORDER BY event_time",
    [(LOGINS[n][0], f"2026-03-21 16:40:0{n}", LOGINS[n][1], "success") for n in (0, 3, 5)],
)

# id: (file, messages, order_by, dead letters, read-back SQL, expected rows)
DEMO_RUNS: dict[str, tuple[str, Any, list[str] | None, int, str, list[tuple[Any, ...]]]] = {
    "config-dedup-v1": (
        "config__deduplication_pipeline.json",
        [flat_user(i) for i in range(3)] + [{**flat_user(1), "name": "again"}],
        None,
        0,
        "SELECT toString(event_id), toString(user_id), toString(created_at), user_name "
        "FROM {t} ORDER BY event_id",
        DEDUP_USERS,
    ),
    "config-dedup-head": (
        "head__config__deduplication_pipeline.json",
        [nested_user(i, "event.id") for i in range(3)]
        + [{**nested_user(1, "event.id"), "tags": ["again"]}],
        None,
        0,
        "SELECT toString(event_id), toString(user_id), toString(created_at), name "
        "FROM {t} ORDER BY event_id",
        DEDUP_USERS,
    ),
    "config-join-v1": (
        "config__join_pipeline.json",
        {"user_events": [flat_user(i) for i in range(3)], "orders": join_orders(False)},
        None,
        0,
        FLAT_JOIN_SQL,
        JOIN_ROWS_FLAT,
    ),
    # head__config__join_pipeline.json (the same join with its sides swapped) only validates
    # (tests/unit/config/test_glassflow_demo_files.py): a second run of this join adds ~10 s.
    "getting-started-join-v1": (
        "getting-started__join_pipeline.json",
        {"user_events": [nested_user(i) for i in range(3)], "orders": join_orders(True)},
        None,
        0,
        TYPED_JOIN_SQL,
        JOIN_ROWS_TYPED,
    ),
    "getting-started-join-v2": (
        "head__getting-started__join_pipeline.json",
        {"user_events": [nested_user(i) for i in range(3)], "orders": join_orders(True)},
        None,
        0,
        TYPED_JOIN_SQL,
        JOIN_ROWS_TYPED,
    ),
    "fraud-detection-v2": ("fraud-detection__fraud_detection_pipeline.json", *FRAUD_RUN),
    "fraud-detection-v3": ("head__fraud-detection__fraud_detection_pipeline.json", *FRAUD_RUN),
    "observability-logs": (
        "observability__logs-pipeline.json",
        [log_record(i) for i in range(3)] + [{**log_record(3), "Timestamp": "yesterday"}],
        ["Timestamp"],
        1,
        "SELECT toString(Timestamp), TraceId, SeverityNumber, Body, "
        "LogAttributes['http.status_code'], ResourceAttributes['host.name'] FROM {t} "
        "ORDER BY Timestamp",
        [
            (f"2025-01-02 03:04:0{i}.123", f"trace-{i}", 9, f"request {i} served", "200", "h1")
            for i in range(3)
        ],
    ),
    "observability-gauge": (
        "observability__metrics-gauge-pipeline.json",
        [gauge(i) for i in range(3)],
        METRIC_ORDER,
        0,
        METRIC_SQL.replace("{v}", "Value, Attributes['route']"),
        [(f"m-{i}", f"2025-01-02 03:04:0{i}.250", 0.5 + i, "/orders") for i in range(3)],
    ),
    "observability-sum": (
        "observability__metrics-sum-pipeline.json",
        [metric_sum(i) for i in range(3)],
        METRIC_ORDER,
        0,
        METRIC_SQL.replace("{v}", "Value, IsMonotonic, AggregationTemporality"),
        [(f"m-{i}", f"2025-01-02 03:04:0{i}.250", 0.5 + i, True, 2) for i in range(3)],
    ),
    "observability-summary": (
        "observability__metrics-summary-pipeline.json",
        [summary(i) for i in range(3)],
        METRIC_ORDER,
        0,
        METRIC_SQL.replace(
            "{v}", "Count, Sum, `ValueAtQuantiles.Quantile`, `ValueAtQuantiles.Value`"
        ),
        [
            (
                f"m-{i}",
                f"2025-01-02 03:04:0{i}.250",
                10 + i,
                2.5 * i,
                [0.5, 0.99],
                [1.0 + i, 3.0 + i],
            )
            for i in range(3)
        ],
    ),
}


@pytest.mark.parametrize("demo", list(DEMO_RUNS))
def test_every_other_glassflow_kafka_demo_runs_unchanged(
    demo, broker, chdb_path, tmp_path, unique_name, produce_messages
):
    file, messages, order_by, dead, sql, expected = DEMO_RUNS[demo]
    runner, table = run_demo(
        file,
        messages,
        unique_name,
        broker,
        chdb_path,
        tmp_path,
        produce_messages,
        order_by=order_by,
        dead_letters=dead,
    )
    assert runner.writer.query_rows(sql.replace("{t}", table)) == expected


def test_a_glassflow_join_gives_one_row_per_order_with_the_newest_profile(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """GlassFlow's v3 getting-started join, users whose profile changed three times before
    their orders: imported as `mode: latest`, one row per order with the newest profile
    (the interval join wrote each order three times), as GlassFlow joins."""
    doc = import_glassflow(
        json.loads((DEMOS / "v3__getting-started__join_pipeline.json").read_text())
    ).document
    assert doc["join"]["mode"] == "latest"
    doc["name"] = unique_name.replace("_", "-")[:90]
    topics = {}
    for source in doc["sources"]:
        topics[source["topic"]] = topic = f"{unique_name}_{source['topic']}"
        source.pop("security", None)
        source.update(bootstrap_servers=broker.bootstrap_servers, topic=topic)
        source["start_from"] = "earliest"
        broker.create_topic(topic, 1)
    # three versions of users 0-2 (the dedup key, event_id, differs), all before the orders
    versions = [
        {**nested_user(u), "event_id": UUIDS[3 * v + u]}
        | {"user": {**nested_user(u)["user"], "name": f"user {u} v{v}"}}
        for v in range(3)
        for u in range(3)
    ]
    produce_messages(topics["user_events"], [(None, json.dumps(m).encode()) for m in versions])
    orders = join_orders(True)
    produce_messages(topics["orders"], [(None, json.dumps(m).encode()) for m in orders])
    doc["sink"].update(clickhouse={"path": str(chdb_path)}, table=unique_name, create_table=True)
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / "ckpt")}
    runner = PipelineRunner(parse_pipeline(doc), base_dir=tmp_path)
    runner.run(until_caught_up=True)
    rows = runner.writer.query_rows(f"SELECT toString(order_id), name FROM {unique_name}")
    assert sorted(rows) == [
        (ORDERS[0], "user 0 v2"),
        (ORDERS[1], "user 0 v2"),
        (ORDERS[2], "user 1 v2"),
    ]


def test_expr_lang_maps_and_string_functions_run(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """The fraud-detection v3 demo with the expr-lang forms the OTLP demos use: a filter
    with hasPrefix, a stateless output replacing `country` (lower) and a map literal that
    redacts, as the observability-v2 traces demo does."""
    doc = json.loads((DEMOS / "head__fraud-detection__fraud_detection_pipeline.json").read_text())
    doc["transforms"][0]["config"]["expression"] = (
        "status != 'failed' && !hasPrefix(user_id, 'char')"
    )
    doc["transforms"].append(
        {
            "type": "stateless",
            "source_id": doc["sources"][0]["source_id"],
            "config": {
                "transforms": [
                    {
                        "expression": "lower(country)",
                        "output_name": "country",
                        "output_type": "string",
                    },
                    {
                        "expression": "{'user': user_id, 'email': '[REDACTED]'}",
                        "output_name": "meta",
                        "output_type": "map",
                    },
                    {"expression": "{}", "output_name": "none", "output_type": "map"},
                ]
            },
        }
    )
    doc["sink"]["mapping"] += [
        {"name": "meta", "column_name": "meta", "column_type": "Map(String, String)"},
        {"name": "none", "column_name": "none", "column_type": "Map(String, String)"},
    ]
    runner, table = run_demo(
        doc,
        [login(n) for n in range(len(LOGINS))],
        unique_name,
        broker,
        chdb_path,
        tmp_path,
        produce_messages,
        dead_letters=1,
    )
    rows = runner.writer.query_rows(
        f"SELECT user_id, country, meta, none FROM {table} ORDER BY user_id"
    )
    assert rows == [
        ("alice", "us", {"user": "alice", "email": "[REDACTED]"}, {}),
        ("diana", "us", {"user": "diana", "email": "[REDACTED]"}, {}),
    ]
