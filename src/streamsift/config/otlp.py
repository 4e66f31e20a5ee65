"""OpenTelemetry sources (`otlp.logs`, `otlp.traces`, `otlp.metrics`): the signal, its
predefined record fields (GlassFlow's names and types), the receiver's settings.

An OTLP source is a Kafka source whose topic the OTLP receiver fills: the receiver turns each
log record, span or metric data point into one flat JSON record and acknowledges a request
only once its records are in that topic. The pipeline then reads the topic like any other,
so it is modelled as a `KafkaSource` with the schema and topic filled in.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field, SecretStr, field_validator, model_validator

from streamsift.config.base import ConfigModel, shorten
from streamsift.config.source import KafkaSource, Schema, check_bootstrap_servers
from streamsift.config.types import FieldType, parse_field_type

# `bootstrap_servers` of an OTLP source that names no Kafka: the bundled broker, started by
# `streamsift run` (or the service) beside the receiver.
BUNDLED_BROKER = "bundled"
DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024  # GlassFlow's and the OTel Collector's default
OTLP_GRPC_PORT = 4317
OTLP_HTTP_PORT = 4318


class OtlpSignal(str, Enum):
    LOGS = "otlp.logs"
    TRACES = "otlp.traces"
    METRICS = "otlp.metrics"

    @property
    def short(self) -> str:
        return self.value.split(".", 1)[1]


S, N, F, B, A, M = (
    FieldType.STRING,
    FieldType.INT,
    FieldType.FLOAT,
    FieldType.BOOL,
    FieldType.ARRAY,
    FieldType.MAP,
)

# S string, N int, F float, B bool, A array of strings, M map of strings.
# The flat record of each signal: GlassFlow's schema reference (docs/app/sources/otlp/
# schema-reference), in its order. Timestamps are RFC 3339 strings with nanoseconds, ids hex.
OTLP_FIELDS: dict[OtlpSignal, dict[str, FieldType]] = {
    OtlpSignal.LOGS: {
        "timestamp": S,
        "observed_timestamp": S,
        "severity_number": N,
        "severity_text": S,
        "body": S,
        "trace_id": S,
        "span_id": S,
        "flags": N,
        "dropped_attributes_count": N,
        "resource_attributes": M,
        "scope_name": S,
        "scope_version": S,
        "scope_attributes": M,
        "attributes": M,
    },
    OtlpSignal.TRACES: {
        "trace_id": S,
        "span_id": S,
        "parent_span_id": S,
        "trace_state": S,
        "flags": N,
        "name": S,
        "kind": S,
        "start_timestamp": S,
        "end_timestamp": S,
        "duration_ns": N,
        "status_code": S,
        "status_message": S,
        "dropped_attributes_count": N,
        "dropped_events_count": N,
        "dropped_links_count": N,
        "events": A,
        "links": A,
        "resource_attributes": M,
        "scope_name": S,
        "scope_version": S,
        "scope_attributes": M,
        "attributes": M,
    },
    OtlpSignal.METRICS: {
        "timestamp": S,
        "start_timestamp": S,
        "metric_name": S,
        "metric_description": S,
        "metric_unit": S,
        "metric_type": S,
        "aggregation_temporality": S,
        "is_monotonic": B,
        "flags": N,
        "value_double": F,
        "value_int": N,
        "count": N,
        "sum": F,
        "min": F,
        "max": F,
        "bucket_counts": A,
        "explicit_bounds": A,
        "resource": M,
        # the same map again: GlassFlow's 5G demo (2026) reads metrics' `resource_attributes`,
        # its observability-v2 demo `resource`; the receiver writes both
        "resource_attributes": M,
        "scope_name": S,
        "scope_version": S,
        "scope_attributes": M,
        "attributes": M,
    },
}


def map_fields(signal: OtlpSignal) -> tuple[str, ...]:
    """The attribute maps of a signal's record: `<map>.<key>` reads one attribute."""
    return tuple(n for n, t in OTLP_FIELDS[signal].items() if t is FieldType.MAP)


def otlp_field_type(signal: OtlpSignal, name: str) -> FieldType | None:
    """The type of `name` in a `signal` record (`resource_attributes.service.name`: one
    attribute, a string), or None when the record has no such field."""
    fields = OTLP_FIELDS[signal]
    if name in fields:
        return fields[name]
    head, _, rest = name.partition(".")
    if rest and fields.get(head) is FieldType.MAP:
        return FieldType.STRING
    return None


class OtlpReceiver(ConfigModel):
    """Where `streamsift run` listens for this pipeline's OTLP exporters, and its limits
    (`streamsift serve` takes host, ports and token from its own options; the limits apply
    per pipeline there too)."""

    host: str = "127.0.0.1"
    grpc_port: int | None = Field(default=OTLP_GRPC_PORT, ge=0, le=65535)  # null: no gRPC
    http_port: int | None = Field(default=OTLP_HTTP_PORT, ge=0, le=65535)  # null: no HTTP
    token: SecretStr | None = None  # exporters then send `Authorization: Bearer TOKEN`
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, gt=0)
    # Records in the topic the pipeline has not yet committed; above it: 429/RESOURCE_EXHAUSTED.
    max_lag: int | None = Field(default=1_000_000, gt=0)
    # Records the Kafka producer may hold unsent; a full queue answers 429 too.
    max_queued_records: int = Field(default=100_000, gt=0)

    @model_validator(mode="after")
    def _check(self) -> OtlpReceiver:
        if self.grpc_port is None and self.http_port is None:
            raise ValueError("give grpc_port, http_port or both: the receiver needs a port")
        if self.grpc_port and self.grpc_port == self.http_port:
            raise ValueError(f"grpc_port and http_port are both {self.grpc_port}")
        return self


class OtlpSchema(Schema):
    """An OTLP record's fields: attribute maps have keys with dots (`service.name`)."""

    literal_dots = True


def with_otlp_defaults(doc: dict[str, Any]) -> dict[str, Any]:
    """A pipeline document whose `source` is OTLP, with the source's defaults that depend on
    the rest of the document: the topic (one per pipeline and signal) and, when no schema
    is given, the attributes the mapping reads (`resource_attributes.service.name`)."""
    src = dict(doc["source"])
    name, kind = doc.get("name"), src.get("type")
    if not src.get("topic") and isinstance(name, str) and isinstance(kind, str):
        src["topic"] = f"streamsift-otlp-{name}-{kind.strip().lower().split('.')[-1]}"
    try:
        signal = OtlpSignal(str(kind).strip().lower())
    except ValueError:
        return {**doc, "source": src}
    schema = src.get("schema")
    if schema is None or (isinstance(schema, dict) and schema.get("fields") is None):
        fields = [{"name": n, "type": t.value} for n, t in OTLP_FIELDS[signal].items()]
        mapping = (
            (doc.get("sink") or {}).get("mapping") if isinstance(doc.get("sink"), dict) else None
        )
        for m in mapping if isinstance(mapping, (list, tuple)) else ():
            field = m.get("field") if isinstance(m, dict) else None
            if (
                isinstance(field, str)
                and field not in OTLP_FIELDS[signal]
                and otlp_field_type(signal, field) is not None
                and all(f["name"] != field for f in fields)
            ):
                fields.append({"name": field, "type": FieldType.STRING.value})
        src["schema"] = {**(schema or {}), "fields": fields}
    return {**doc, "source": src}


class OtlpSource(KafkaSource):
    """A Kafka source the OTLP receiver fills (see the module docstring).

    `schema.fields` is optional: without it every field of the signal's record is read; with
    it, only the listed ones, each a predefined field (its type may be restated, and must
    then match) or `<attribute map>.<key>`, one attribute as a string.
    """

    type: OtlpSignal
    bootstrap_servers: str = BUNDLED_BROKER
    receiver: OtlpReceiver = OtlpReceiver()
    schema_: OtlpSchema = Field(alias="schema")

    @field_validator("bootstrap_servers", mode="before")
    @classmethod
    def _servers(cls, v: object) -> object:
        return v if v == BUNDLED_BROKER else check_bootstrap_servers(v)

    @model_validator(mode="before")
    @classmethod
    def _fill_schema(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        try:
            signal = OtlpSignal(str(data.get("type", "")).strip().lower())
        except ValueError:
            return data  # the field validator names the problem
        data = {**data, "type": signal.value}
        schema = data.get("schema", data.get("schema_"))
        if schema is None:
            schema = {}
        if not isinstance(schema, dict):
            return data
        given = schema.get("fields")
        if given is None:
            fields = [{"name": n, "type": t.value} for n, t in OTLP_FIELDS[signal].items()]
        else:
            fields = _checked_fields(signal, given)
        data.pop("schema_", None)
        data["schema"] = {**schema, "fields": fields}
        return data

    @property
    def signal(self) -> OtlpSignal:
        return self.type

    @property
    def bundled(self) -> bool:
        return self.bootstrap_servers == BUNDLED_BROKER


def _checked_fields(signal: OtlpSignal, given: object) -> object:
    """The listed fields with their predefined types; a ValueError names a field the
    signal's record does not have or a type it does not have."""
    if not isinstance(given, (list, tuple)):
        return given
    out = []
    for i, f in enumerate(given):
        if not isinstance(f, dict) or "name" not in f:
            out.append(f)
            continue
        name = str(f["name"])
        ftype = otlp_field_type(signal, name)
        if ftype is None:
            known = ", ".join(OTLP_FIELDS[signal])
            raise ValueError(
                f"schema.fields[{i}].name: {shorten(name)} is not a field of {signal.value} "
                f"records (fields: {known}; <map>.<key> reads one attribute of "
                f"{', '.join(map_fields(signal))})"
            )
        if "type" in f and f["type"] is not None:
            try:
                stated = parse_field_type(f["type"])
            except ValueError:
                stated = None
            if stated is not ftype:
                raise ValueError(
                    f"schema.fields[{i}].type: {name!r} of {signal.value} records is "
                    f"{ftype.value}, not {f['type']!r}"
                )
        out.append({**f, "type": ftype.value})
    return out
