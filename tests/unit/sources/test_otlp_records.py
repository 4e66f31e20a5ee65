"""OTLP without a network: requests flattened into GlassFlow-named records, OTLP/JSON bodies,
the source's configuration, routing and tokens, and reading dotted attribute keys."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.otlp import OTLP_FIELDS, OtlpReceiver, OtlpSignal
from streamsift.config.types import FieldType
from streamsift.sources.otlp.decode import (
    MalformedOtlp,
    epoch_nanos,
    parse_json,
    parse_protobuf,
    records,
    timestamp,
)
from streamsift.sources.otlp.ingest import Ingest, Route, TooLarge, Unauthorized, UnknownPipeline
from streamsift.transforms.parse import FieldSpec, JsonParser

T0 = 1_760_000_000_123_456_789  # 2025-10-09 08:53:20.123456789 UTC


def _kv(holder, key, **value):
    kv = holder.add()
    kv.key = key
    for kind, v in value.items():
        if kind == "array":
            for item in v:
                kv.value.array_value.values.add().string_value = item
        elif kind == "kvlist":
            for k, x in v.items():
                inner = kv.value.kvlist_value.values.add()
                inner.key, inner.value.int_value = k, x
        else:
            setattr(kv.value, kind, v)


def test_log_records_have_glassflows_fields_and_value_forms():
    request = ExportLogsServiceRequest()
    rl = request.resource_logs.add()
    _kv(rl.resource.attributes, "service.name", string_value="checkout")
    sl = rl.scope_logs.add()
    sl.scope.name, sl.scope.version = "lib", "1.0"
    lr = sl.log_records.add()
    lr.observed_time_unix_nano = T0  # no time: the observed time stands in
    lr.severity_number, lr.severity_text = 17, "ERROR"
    lr.body.kvlist_value.values.add(key="msg").value.string_value = "boom"
    lr.trace_id, lr.span_id = bytes.fromhex("0af7651916cd43dd8448eb211c80319c"), b"\x01" * 8
    lr.flags = 1
    _kv(lr.attributes, "http.status", int_value=500)
    _kv(lr.attributes, "ok", bool_value=False)
    _kv(lr.attributes, "ratio", double_value=0.25)
    _kv(lr.attributes, "tags", array=["a", "b"])
    _kv(lr.attributes, "nested", kvlist={"x": 1})
    _kv(lr.attributes, "raw", bytes_value=b"\x00\xff")
    (rec,) = records(OtlpSignal.LOGS, parse_protobuf(OtlpSignal.LOGS, request.SerializeToString()))
    assert list(rec) == list(OTLP_FIELDS[OtlpSignal.LOGS])
    assert rec["timestamp"] == rec["observed_timestamp"] == "2025-10-09 08:53:20.123456789"
    assert epoch_nanos(rec["timestamp"]) == T0
    assert rec["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert rec["span_id"] == "0101010101010101"
    assert (rec["severity_number"], rec["severity_text"], rec["flags"]) == (17, "ERROR", 1)
    assert json.loads(rec["body"]) == {"msg": "boom"}
    assert rec["resource_attributes"] == {"service.name": "checkout"}
    assert (rec["scope_name"], rec["scope_version"], rec["scope_attributes"]) == ("lib", "1.0", {})
    assert rec["attributes"] == {
        "http.status": "500",
        "ok": "false",
        "ratio": "0.25",
        "tags": '["a","b"]',
        "nested": '{"x":1}',
        "raw": "AP8=",
    }


def test_spans_carry_kind_status_duration_events_and_links():
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = b"\x0a" * 16, b"\x0b" * 8
    span.name, span.kind = "GET /", trace_pb2.Span.SPAN_KIND_SERVER
    span.start_time_unix_nano, span.end_time_unix_nano = T0, T0 + 1500
    span.status.code, span.status.message = trace_pb2.Status.STATUS_CODE_ERROR, "bad"
    event = span.events.add(name="retry", time_unix_nano=T0 + 10)
    _kv(event.attributes, "n", int_value=2)
    span.links.add(trace_id=b"\x0c" * 16, span_id=b"\x0d" * 8)
    (rec,) = records(OtlpSignal.TRACES, request)
    assert list(rec) == list(OTLP_FIELDS[OtlpSignal.TRACES])
    assert (rec["kind"], rec["status_code"], rec["status_message"]) == ("SERVER", "ERROR", "bad")
    assert rec["duration_ns"] == 1500 and rec["parent_span_id"] == ""
    assert json.loads(rec["events"][0]) == {
        "timestamp": timestamp(T0 + 10),
        "name": "retry",
        "attributes": {"n": "2"},
    }
    assert json.loads(rec["links"][0])["span_id"] == "0d" * 8


def test_metric_points_one_record_each_with_zero_values_where_not_applicable():
    request = ExportMetricsServiceRequest()
    metrics = request.resource_metrics.add().scope_metrics.add().metrics
    gauge = metrics.add(name="temp", unit="C")
    gauge.gauge.data_points.add(time_unix_nano=T0, as_double=21.5)
    total = metrics.add(name="requests")
    total.sum.is_monotonic = True
    total.sum.aggregation_temporality = metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE
    for n in (3, 4):
        total.sum.data_points.add(time_unix_nano=T0, as_int=n)
    hist = metrics.add(name="latency")
    hist.histogram.aggregation_temporality = metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
    hist.histogram.data_points.add(
        time_unix_nano=T0, count=4, sum=638.0, min=1.0, max=600.0,
        bucket_counts=[1, 1, 1, 1], explicit_bounds=[5.0, 25.0, 100.0],
    )  # fmt: skip
    summary = metrics.add(name="rpc")
    summary.summary.data_points.add(time_unix_nano=T0, count=2, sum=9.0)
    recs = records(OtlpSignal.METRICS, request)
    assert [r["metric_name"] for r in recs] == ["temp", "requests", "requests", "latency", "rpc"]
    assert all(list(r) == list(OTLP_FIELDS[OtlpSignal.METRICS]) for r in recs)
    g, s3, _s4, h, sm = recs
    assert (g["metric_type"], g["value_double"], g["value_int"], g["count"]) == (
        "gauge",
        21.5,
        0,
        0,
    )
    assert (g["aggregation_temporality"], g["is_monotonic"]) == ("", False)
    assert g["start_timestamp"] == "1970-01-01 00:00:00.000000000"
    assert (s3["metric_type"], s3["value_int"], s3["sum"], s3["is_monotonic"]) == (
        "sum",
        3,
        3.0,
        True,
    )
    assert s3["aggregation_temporality"] == "CUMULATIVE"
    assert (h["count"], h["sum"], h["min"], h["max"]) == (4, 638.0, 1.0, 600.0)
    assert h["bucket_counts"] == ["1", "1", "1", "1"]
    assert h["explicit_bounds"] == ["5.0", "25.0", "100.0"]
    assert h["aggregation_temporality"] == "DELTA"
    assert (sm["metric_type"], sm["count"], sm["sum"], sm["bucket_counts"]) == (
        "summary",
        2,
        9.0,
        [],
    )


def test_otlp_json_bodies_hex_ids_camel_case_and_unknown_fields():
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "x",
                                "kind": 3,
                                "startTimeUnixNano": str(T0),
                                "endTimeUnixNano": T0 + 5,
                                "someFutureField": {"a": 1},
                            }
                        ]
                    }
                ]
            }
        ]
    }
    request = parse_json(OtlpSignal.TRACES, json.dumps(body).encode())
    (rec,) = records(OtlpSignal.TRACES, request)
    assert (rec["trace_id"], rec["span_id"]) == (
        "5b8efff798038103d269b633813fc60c",
        "eee19b7ec3c1b174",
    )
    assert (rec["kind"], rec["duration_ns"]) == ("CLIENT", 5)


@pytest.mark.parametrize(
    ("body", "as_json", "message"),
    [
        (b"{", True, "the body is not JSON"),
        (b"[1]", True, "must be a JSON object"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "zz"}]}]}]}', True, "traceId 'zz' is not hex"),
        (b'{"resourceLogs": 5}', True, "not an OTLP ExportLogsServiceRequest"),
        (b"\xff\xff\xff", False, "not a protobuf ExportLogsServiceRequest"),
    ],
)  # fmt: skip
def test_unreadable_bodies_say_why(body, as_json, message):
    with pytest.raises(MalformedOtlp, match=message):
        (parse_json if as_json else parse_protobuf)(OtlpSignal.LOGS, body)


def _route(pipeline_id: str, signal: OtlpSignal, token: str | None = None) -> Route:
    return Route(pipeline_id, signal, "topic", producer=None, max_request_bytes=10, token=token)  # type: ignore[arg-type]


def test_routing_by_header_tokens_and_size():
    ingest = Ingest(token="service-token")
    ingest.add(_route("logs-a", OtlpSignal.LOGS))
    ingest.add(_route("traces-b", OtlpSignal.TRACES, token="own"))
    assert (
        ingest.route({"x-glassflow-pipeline-id": "logs-a"}, OtlpSignal.LOGS).pipeline_id == "logs-a"
    )
    assert (
        ingest.route({"x-streamsift-pipeline-id": "traces-b"}, OtlpSignal.TRACES).topic == "topic"
    )
    assert ingest.route({}, OtlpSignal.LOGS).pipeline_id == "logs-a"  # the only logs route
    with pytest.raises(UnknownPipeline, match="no running OTLP pipeline 'zz'"):
        ingest.route({"x-glassflow-pipeline-id": "zz"}, OtlpSignal.LOGS)
    with pytest.raises(
        UnknownPipeline, match="receives otlp.traces, not otlp.logs: send to /v1/traces"
    ):
        ingest.route({"x-glassflow-pipeline-id": "traces-b"}, OtlpSignal.LOGS)
    ingest.check_token(ingest.route({}, OtlpSignal.LOGS), "Bearer service-token")
    ingest.check_token(ingest.route({}, OtlpSignal.TRACES), "Bearer own")
    for wrong in (None, "Bearer own", "service-token"):
        with pytest.raises(Unauthorized):
            ingest.check_token(ingest.route({}, OtlpSignal.LOGS), wrong)
    headers = {"x-glassflow-pipeline-id": "logs-a", "authorization": "Bearer service-token"}
    with pytest.raises(TooLarge, match="11 bytes, more than the 10 allowed"):
        ingest.export(OtlpSignal.LOGS, headers, b"x" * 11)
    assert ingest.export(OtlpSignal.LOGS, headers, b"") == 0  # an empty request: nothing to keep


def _otlp_doc(**source):
    return {
        "name": "otel",
        "source": {"type": "otlp.logs", **source},
        "sink": {
            "clickhouse": {"path": "/tmp/unused"},
            "table": "t",
            "mapping": [{"field": "attributes.http.method", "column": "m", "type": "String"}],
        },
    }


def test_otlp_source_config_defaults_and_errors():
    p = parse_pipeline(_otlp_doc())
    src = p.primary_source
    assert src.bundled and src.topic == "streamsift-otlp-otel-logs"
    assert src.receiver == OtlpReceiver()
    assert (src.receiver.grpc_port, src.receiver.http_port) == (4317, 4318)
    assert src.receiver.max_request_bytes == 4 * 1024 * 1024
    assert src.schema_.field("attributes.http.method").type is FieldType.STRING
    with pytest.raises(ConfigError, match="give grpc_port, http_port or both"):
        parse_pipeline(_otlp_doc(receiver={"grpc_port": None, "http_port": None}))
    with pytest.raises(ConfigError, match=r"source\.bootstrap_servers: .*not host:port"):
        parse_pipeline(_otlp_doc(bootstrap_servers="nohost"))
    with pytest.raises(ConfigError, match="'spans' is not a field of otlp.logs records"):
        parse_pipeline(_otlp_doc(schema={"fields": [{"name": "spans", "type": "string"}]}))
    with pytest.raises(
        ConfigError, match=r"sink\.mapping\[0\]\.field: 'attributes\.http\.method' is not a field"
    ):
        parse_pipeline(_otlp_doc(schema={"fields": [{"name": "body"}]}))


def test_the_receiver_token_is_a_secret_of_the_document():
    """Encrypted at rest and masked by the service like every other secret."""
    from streamsift.config.secrets import secret_paths

    doc = _otlp_doc(receiver={"token": "tok-123"})
    pipeline = parse_pipeline(doc)
    assert list(secret_paths(pipeline, doc)) == [("source", "receiver", "token")]
    assert "tok-123" not in repr(pipeline)


def test_dotted_attribute_keys_are_read_from_the_map():
    parser = JsonParser(
        [
            FieldSpec("attributes", "attributes", FieldType.MAP),
            FieldSpec("attributes.http.method", "attributes__http__method", FieldType.STRING),
            FieldSpec("resource.service.name", "resource__service__name", FieldType.STRING),
        ],
        literal_dots=True,
    )
    rows = [
        json.dumps(
            {"attributes": {"http.method": "GET"}, "resource": {"service.name": "a"}}
        ).encode(),
        json.dumps({"attributes": {}, "resource": {}}).encode(),
    ]
    result = parser.parse(rows)
    assert result.errors == [None, None]
    assert result.table.column("attributes__http__method").to_pylist() == ["GET", None]
    assert result.table.column("resource__service__name").to_pylist() == ["a", None]


def test_committed_offsets_come_from_the_last_committed_batch(tmp_path):
    """The lag's other side: Spark's commit log names the batch, its offset log the offsets
    (a batch written to the offset log but not committed does not count)."""
    from streamsift.service.otlp_receiver import committed_offsets

    spark = tmp_path / "spark"
    assert committed_offsets(spark, "t") == {}
    (spark / "offsets").mkdir(parents=True)
    (spark / "commits").mkdir()
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1}'
    for batch, offsets in ((0, {"t/0": 3, "t/1": 1}), (1, {"t/0": 7, "t/1": 2, "u/0": 9})):
        (spark / "offsets" / str(batch)).write_text(f"v1\n{meta}\n{json.dumps(offsets)}")
    (spark / "commits" / "0").write_text("v1\n{}")
    assert committed_offsets(spark, "t") == {0: 3, 1: 1}
    (spark / "commits" / "1").write_text("v1\n{}")
    assert committed_offsets(spark, "t") == {0: 7, 1: 2}
