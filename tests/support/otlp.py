"""OTLP test helpers: the shipped example pipelines pointed at the test broker and chdb, and
the real OpenTelemetry SDK sending logs, spans and metrics through its OTLP exporters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from support.paths import EXAMPLES

PIPELINE_HEADER = "x-glassflow-pipeline-id"


def example_pipeline(
    example: str,
    name: str,
    bootstrap_servers: str,
    clickhouse: dict[str, Any],
    checkpoint_dir: Path,
    table: str,
    **receiver: Any,
) -> Pipeline:
    """examples/pipelines/<example>.yaml as shipped, but on this test's broker, ClickHouse,
    table and free ports."""
    doc = yaml.safe_load((EXAMPLES / f"{example}.yaml").read_text())
    doc["name"] = name
    doc["source"]["bootstrap_servers"] = bootstrap_servers
    doc["source"]["receiver"] = {"grpc_port": 0, "http_port": 0, **receiver}
    doc["sink"]["clickhouse"] = clickhouse
    doc["sink"]["table"] = table
    doc["runtime"] = {"checkpoint_dir": str(checkpoint_dir)}
    return parse_pipeline(doc)


def http_exporters(port: int, pipeline_id: str, token: str | None = None) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    headers = {PIPELINE_HEADER: pipeline_id}
    if token:
        headers["authorization"] = f"Bearer {token}"
    base = f"http://127.0.0.1:{port}"
    return {
        "logs": lambda: OTLPLogExporter(endpoint=f"{base}/v1/logs", headers=headers),
        "traces": lambda: OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=headers),
        "metrics": lambda: OTLPMetricExporter(endpoint=f"{base}/v1/metrics", headers=headers),
    }


def grpc_exporters(port: int, pipeline_id: str) -> dict[str, Any]:
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    kw = {
        "endpoint": f"127.0.0.1:{port}",
        "insecure": True,
        "headers": {PIPELINE_HEADER: pipeline_id},
    }
    return {
        "logs": lambda: OTLPLogExporter(**kw),
        "traces": lambda: OTLPSpanExporter(**kw),
        "metrics": lambda: OTLPMetricExporter(**kw),
    }


def send_logs(exporter: Any, count: int, service: str, tag: str) -> None:
    """`count` log records through the SDK's Logs API, each with attributes; every export
    must succeed (a batch processor would retry and hide a refusal: the simple one does not)."""
    import time

    from opentelemetry._logs import SeverityNumber
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    provider = LoggerProvider(resource=Resource.create({"service.name": service}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(_Checked(exporter)))
    logger = provider.get_logger(f"otlp-test-{tag}", "0.1")
    for i in range(count):
        logger.emit(
            timestamp=time.time_ns(),
            severity_number=SeverityNumber.WARN,
            severity_text="WARN",
            body=f"{tag} record {i}",
            attributes={"http.method": "GET", "seq": i},
        )
    provider.shutdown()


def send_spans(exporter: Any, count: int, service: str) -> list[tuple[str, str]]:
    """`count` spans (children of one root, which is one more): their (trace_id, span_id)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import SpanKind

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(_Checked(exporter)))
    tracer = provider.get_tracer("otlp-test", "1.2.3")
    ids = []
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER) as root:
        ctx = root.get_span_context()
        ids.append((f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"))
        for i in range(count - 1):
            with tracer.start_as_current_span(f"child-{i}", attributes={"i": i}) as span:
                span.add_event("step", {"n": i})
                c = span.get_span_context()
                ids.append((f"{c.trace_id:032x}", f"{c.span_id:016x}"))
    provider.shutdown()
    return ids


def send_metrics(exporter: Any, service: str) -> int:
    """A counter (sum) with two attribute sets, a gauge and a histogram, exported once:
    returns the number of data points (4)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    reader = PeriodicExportingMetricReader(_Checked(exporter), export_interval_millis=3_600_000)
    provider = MeterProvider(
        resource=Resource.create({"service.name": service}), metric_readers=[reader]
    )
    meter = provider.get_meter("otlp-test")
    counter = meter.create_counter("requests", unit="1", description="requests served")
    counter.add(3, {"route": "/a"})
    counter.add(4, {"route": "/b"})
    meter.create_gauge("temperature", unit="C").set(21.5)
    histogram = meter.create_histogram("latency", unit="ms")
    for v in (1.0, 7.0, 30.0, 600.0):
        histogram.record(v)
    provider.shutdown()  # exports once, then stops
    return 4


def send_gauges(
    exporter: Any, resource: dict[str, str], points: list[tuple[str, float, dict[str, str]]]
) -> None:
    """One export of gauge points `(metric name, value, attributes)` from one resource
    (a point per name and attribute set)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    reader = PeriodicExportingMetricReader(_Checked(exporter), export_interval_millis=3_600_000)
    provider = MeterProvider(resource=Resource.create(resource), metric_readers=[reader])
    meter = provider.get_meter("ran-test")
    gauges: dict[str, Any] = {}
    for name, value, attributes in points:
        gauges.setdefault(name, meter.create_gauge(name)).set(value, attributes)
    provider.shutdown()  # exports once, then stops


class _Checked:
    """Wraps an SDK exporter and fails the test when an export does not succeed."""

    def __init__(self, exporter: Any) -> None:
        self.exporter = exporter

    def __getattr__(self, name: str) -> Any:
        return getattr(self.exporter, name)

    def export(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        result = self.exporter.export(batch, *args, **kwargs)
        assert getattr(result, "name", str(result)) == "SUCCESS", result
        return result
