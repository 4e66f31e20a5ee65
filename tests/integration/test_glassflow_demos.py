"""GlassFlow's own demo pipelines (tests/data/glassflow_demos), imported unchanged and run on
the real broker, Spark and chdb: the OTel traces demo (dedup, Nested arrays named
`Events.Timestamp`, maps, DateTime64 without precision), the OTel histogram demo (arrays of
numbers, of maps and of DateTime64) and the getting-started dedup demo (UUID, DateTime,
nested fields). Only the addresses change (broker, embedded ClickHouse, topic, table);
rows are counted exactly and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.glassflow.importer import import_glassflow
from streamsift.runtime.pipeline import PipelineRunner
from streamsift.sinks.dlq_store import DlqStore

pytestmark = pytest.mark.integration

DEMOS = Path(__file__).parents[1] / "data" / "glassflow_demos"
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
        "ResourceAttributes": {"service.name": "api"},
        "ResourceSchemaUrl": "",
        "ScopeName": "otel",
        "ScopeVersion": "1.0",
        "ScopeAttributes": {},
        "ScopeDroppedAttrCount": 0,
        "ScopeSchemaUrl": "",
        "ServiceName": "api",
        "MetricName": f"latency-{i}",
        "MetricDescription": "request latency",
        "MetricUnit": "ms",
        "Attributes": {"route": "/orders"},
        "StartTimeUnix": "2025-01-02T03:00:00Z",
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
    file: str,
    messages: list[dict[str, Any]],
    name: str,
    broker: Any,
    chdb_path: Path,
    tmp_path: Path,
    produce_messages: Any,
    order_by: list[str] | None = None,
) -> tuple[PipelineRunner, str]:
    """Import the demo, point it at the test broker, a fresh topic and the embedded
    ClickHouse, produce `messages` and run the pipeline until it has caught up."""
    doc = import_glassflow(json.loads((DEMOS / file).read_text())).document
    doc["name"] = name.replace("_", "-")[:90]
    doc["source"].update(
        bootstrap_servers=broker.bootstrap_servers, topic=name, start_from="earliest"
    )
    doc["sink"].update(clickhouse={"path": str(chdb_path)}, table=name, create_table=True)
    if order_by:
        doc["sink"]["order_by"] = order_by
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / name)}
    pipeline = parse_pipeline(doc)
    broker.create_topic(name, 1)
    produce_messages(name, [(None, json.dumps(m).encode()) for m in messages])
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    runner.run(until_caught_up=True)
    store = DlqStore(runner.writer, pipeline.dlq_table)
    store.open()
    assert store.pending(100) == []  # nothing refused
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
