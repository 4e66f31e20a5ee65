"""OTLP export requests (protobuf or JSON bodies) into flat records, one per log record, span
or metric data point, with GlassFlow's field names and types (config/otlp.py).

Pure functions: bytes in, dicts out. Value forms: timestamps as UTC strings
`YYYY-MM-DD hh:mm:ss.nnnnnnnnn`, the text ClickHouse reads into DateTime64(9) as it is
(GlassFlow writes RFC 3339, which ClickHouse's default parser refuses); ids as lower-case hex;
attribute maps as string -> string (strings as they are, other values as JSON text); span
events and links and histogram buckets as arrays of strings. What a record lacks holds the
zero value ("", 0, false, the epoch, []), as GlassFlow's records and the ClickHouse OTel
exporter's non-Nullable columns have it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from streamsift.config.otlp import OtlpSignal
from streamsift.errors import ConfigurationError

Record = dict[str, Any]

REQUEST_TYPES: dict[OtlpSignal, type[Message]] = {
    OtlpSignal.LOGS: ExportLogsServiceRequest,
    OtlpSignal.TRACES: ExportTraceServiceRequest,
    OtlpSignal.METRICS: ExportMetricsServiceRequest,
}
# OTLP/JSON writes these ids as hex, where protobuf's JSON mapping expects base64.
_HEX_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id"})
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class MalformedOtlp(ConfigurationError):
    """An OTLP body that cannot be read: the sender's mistake (HTTP 400, gRPC INVALID_ARGUMENT)."""


# ---------------------------------------------------------------------------- bodies


def parse_protobuf(signal: OtlpSignal, body: bytes) -> Message:
    request = REQUEST_TYPES[signal]()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise MalformedOtlp(f"the body is not a protobuf {type(request).__name__}: {exc}") from None
    return request


def parse_json(signal: OtlpSignal, body: bytes) -> Message:
    """OTLP/JSON: protobuf's JSON mapping with hex ids; unknown fields are ignored (the spec)."""
    request = REQUEST_TYPES[signal]()
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise MalformedOtlp(f"the body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise MalformedOtlp("the body must be a JSON object")
    try:
        json_format.ParseDict(_hex_ids_to_base64(doc), request, ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        raise MalformedOtlp(f"the body is not an OTLP {type(request).__name__}: {exc}") from None
    return request


def _hex_ids_to_base64(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in _HEX_ID_KEYS and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError:
                    raise MalformedOtlp(f"{key} {value[:64]!r} is not hex") from None
            out[key] = _hex_ids_to_base64(value)
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(v) for v in node]
    return node


def records(signal: OtlpSignal, request: Message) -> list[Record]:
    """The flat records of one export request."""
    if signal is OtlpSignal.LOGS:
        return list(log_records(request))  # type: ignore[arg-type]
    if signal is OtlpSignal.TRACES:
        return list(span_records(request))  # type: ignore[arg-type]
    return list(metric_records(request))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- values


def timestamp(nanos: int) -> str:
    """Unix nanoseconds as UTC `2026-01-02 03:04:05.123456789` (the text ClickHouse reads
    into DateTime64(9) columns as they are); 0 (unset) is the epoch, a zero value."""
    seconds, frac = divmod(int(nanos), 1_000_000_000)
    whole = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return f"{whole:%Y-%m-%d %H:%M:%S}.{frac:09d}"


def hex_id(raw: bytes) -> str:
    return raw.hex()


def any_value(value: AnyValue) -> Any:
    """An AnyValue as plain Python (nested arrays and maps included)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def as_text(value: Any) -> str | None:
    """A value for a string column: strings as they are, others as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def attributes(kvs: Iterable[KeyValue]) -> dict[str, str | None]:
    return {kv.key: as_text(any_value(kv.value)) for kv in kvs}


def _scope(scope: Any) -> Record:
    return {
        "scope_name": scope.name,
        "scope_version": scope.version,
        "scope_attributes": attributes(scope.attributes),
    }


# ---------------------------------------------------------------------------- signals


def _scoped(groups: Iterable[Any], scopes: str, items: str) -> Iterator[tuple[Any, Record, Any]]:
    """(resource attributes, scope fields, item) of every item of an export request: its
    resource groups hold scope groups (`scopes`), which hold the items (`items`)."""
    for group in groups:
        resource = attributes(group.resource.attributes)
        for scoped in getattr(group, scopes):
            scope = _scope(scoped.scope)
            for item in getattr(scoped, items):
                yield resource, scope, item


def log_records(request: ExportLogsServiceRequest) -> Iterator[Record]:
    for resource, scope, lr in _scoped(request.resource_logs, "scope_logs", "log_records"):
        yield {
            "timestamp": timestamp(lr.time_unix_nano or lr.observed_time_unix_nano),
            "observed_timestamp": timestamp(lr.observed_time_unix_nano),
            "severity_number": int(lr.severity_number),
            "severity_text": lr.severity_text,
            "body": as_text(any_value(lr.body)),
            "trace_id": hex_id(lr.trace_id),
            "span_id": hex_id(lr.span_id),
            "flags": lr.flags,
            "dropped_attributes_count": lr.dropped_attributes_count,
            "resource_attributes": resource,
            **scope,
            "attributes": attributes(lr.attributes),
        }


_SPAN_KINDS = {
    trace_pb2.Span.SPAN_KIND_UNSPECIFIED: "UNSPECIFIED",
    trace_pb2.Span.SPAN_KIND_INTERNAL: "INTERNAL",
    trace_pb2.Span.SPAN_KIND_SERVER: "SERVER",
    trace_pb2.Span.SPAN_KIND_CLIENT: "CLIENT",
    trace_pb2.Span.SPAN_KIND_PRODUCER: "PRODUCER",
    trace_pb2.Span.SPAN_KIND_CONSUMER: "CONSUMER",
}
_STATUS_CODES = {
    trace_pb2.Status.STATUS_CODE_UNSET: "UNSET",
    trace_pb2.Status.STATUS_CODE_OK: "OK",
    trace_pb2.Status.STATUS_CODE_ERROR: "ERROR",
}


def span_records(request: ExportTraceServiceRequest) -> Iterator[Record]:
    for resource, scope, span in _scoped(request.resource_spans, "scope_spans", "spans"):
        start, end = span.start_time_unix_nano, span.end_time_unix_nano
        yield {
            "trace_id": hex_id(span.trace_id),
            "span_id": hex_id(span.span_id),
            "parent_span_id": hex_id(span.parent_span_id),
            "trace_state": span.trace_state,
            "flags": span.flags,
            "name": span.name,
            "kind": _SPAN_KINDS.get(span.kind, str(span.kind)),
            "start_timestamp": timestamp(start),
            "end_timestamp": timestamp(end),
            "duration_ns": max(0, end - start) if start and end else None,
            "status_code": _STATUS_CODES.get(span.status.code, str(span.status.code)),
            "status_message": span.status.message,
            "dropped_attributes_count": span.dropped_attributes_count,
            "dropped_events_count": span.dropped_events_count,
            "dropped_links_count": span.dropped_links_count,
            "events": [
                as_text(
                    {
                        "timestamp": timestamp(e.time_unix_nano),
                        "name": e.name,
                        "attributes": attributes(e.attributes),
                    }
                )
                for e in span.events
            ],
            "links": [
                as_text(
                    {
                        "trace_id": hex_id(link.trace_id),
                        "span_id": hex_id(link.span_id),
                        "trace_state": link.trace_state,
                        "attributes": attributes(link.attributes),
                    }
                )
                for link in span.links
            ],
            "resource_attributes": resource,
            **scope,
            "attributes": attributes(span.attributes),
        }


_TEMPORALITY = {
    metrics_pb2.AGGREGATION_TEMPORALITY_UNSPECIFIED: "UNSPECIFIED",
    metrics_pb2.AGGREGATION_TEMPORALITY_DELTA: "DELTA",
    metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE: "CUMULATIVE",
}
_METRIC_TYPES = {
    "gauge": "gauge",
    "sum": "sum",
    "histogram": "histogram",
    "exponential_histogram": "exponential_histogram",
    "summary": "summary",
}


def metric_records(request: ExportMetricsServiceRequest) -> Iterator[Record]:
    for resource, scope, metric in _scoped(request.resource_metrics, "scope_metrics", "metrics"):
        kind = metric.WhichOneof("data")
        if kind is None:
            continue  # a metric without data has no points
        data = getattr(metric, kind)
        common = {
            "metric_name": metric.name,
            "metric_description": metric.description,
            "metric_unit": metric.unit,
            "metric_type": _METRIC_TYPES[kind],
            "aggregation_temporality": (
                _TEMPORALITY.get(data.aggregation_temporality, "")
                if hasattr(data, "aggregation_temporality")
                else ""
            ),
            "is_monotonic": data.is_monotonic if kind == "sum" else False,
        }
        for point in data.data_points:
            yield {
                "timestamp": timestamp(point.time_unix_nano),
                "start_timestamp": timestamp(point.start_time_unix_nano),
                **common,
                "flags": point.flags,
                **_point_values(kind, point),
                "resource": resource,
                "resource_attributes": resource,  # the name GlassFlow's newer demos use
                **scope,
                "attributes": attributes(point.attributes),
            }


def _point_values(kind: str, point: Any) -> Record:
    """The value fields of one data point; those that do not apply to its kind hold zero
    values (as in GlassFlow's records, so non-Nullable columns take every point):
    `metric_type` says which apply."""
    values: Record = {
        "value_double": 0.0,
        "value_int": 0,
        "count": 0,
        "sum": 0.0,
        "min": 0.0,
        "max": 0.0,
        "bucket_counts": [],
        "explicit_bounds": [],
    }
    if kind in ("gauge", "sum"):
        which = point.WhichOneof("value")
        if which == "as_double":
            values["value_double"] = point.as_double
        elif which == "as_int":
            values["value_int"] = point.as_int
        if kind == "sum":
            values["sum"] = float(point.as_int) if which == "as_int" else point.as_double
        return values
    values["count"] = point.count
    values["sum"] = point.sum
    if kind in ("histogram", "exponential_histogram"):
        values["min"] = point.min
        values["max"] = point.max
    if kind == "histogram":
        values["bucket_counts"] = [str(c) for c in point.bucket_counts]
        values["explicit_bounds"] = [repr(float(b)) for b in point.explicit_bounds]
    return values


def epoch_nanos(text: str) -> int:
    """The inverse of `timestamp` (for tests and readers)."""
    whole, frac = text.split(".")
    moment = datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return int((moment - _EPOCH).total_seconds()) * 1_000_000_000 + int(frac)
