"""Our pipeline as GlassFlow v3 JSON, as far as v3 can express it (the reverse of the import).

`export_v3(pipeline)` builds the document `GET /api/v1/pipeline/{id}` of the GlassFlow-
compatible API returns for a pipeline created natively, in the shape GlassFlow's own Python
SDK (its pydantic v3 model) accepts. What v3 cannot say is approximated or left out, and each
such loss is named in `V3Export.notes` (docs/glassflow.md lists them):

- dedup modes `last` and `exact`, composite dedup or join keys, left joins, interval joins
  and table joins (GlassFlow's join is `mode: latest`), event time
  (`schema.event_time`), computed fields and filters (Spark SQL, not GlassFlow's expr-lang),
  Kafka `properties` and CA files, DLQ table names, runtime settings: left out;
- field types `timestamp` and `json` become `string` (GlassFlow parses DateTime columns from
  strings); ClickHouse column types outside the SDK's list lose their parameters or wrapper
  (`DateTime64(3, 'UTC')` -> `DateTime64`, `Nullable(String)` -> `String`), others become
  `String`;
- an embedded ClickHouse (a `path`) has no host: it is shown as host `embedded`, port `0`.

A pipeline of three or more sources (`join` as a list of steps) cannot be exported: GlassFlow's
join reads two sources; `export_v3` raises a `ConfigError` naming why.

Secrets are exported as the document holds them: pass a masked document ("***") to keep them out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamsift.config.durations import format_duration
from streamsift.config.errors import ConfigError
from streamsift.config.models import (
    ClickHouseSink,
    Dedup,
    DedupMode,
    JoinType,
    KafkaSecurity,
    KafkaSource,
    Pipeline,
)
from streamsift.config.otlp import OtlpSource
from streamsift.config.stages import JoinMode
from streamsift.config.types import CHType, FieldType, parse_clickhouse_type

EMBEDDED_HOST = "embedded"

# The ClickHouse column types GlassFlow's SDK accepts in `sink.mapping[].column_type`.
_SCALARS = [
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
    "String",
    "FixedString",
    "DateTime",
    "DateTime64",
    "Bool",
    "UUID",
    "Enum8",
    "Enum16",
]
_LOW_CARDINALITY = [
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
    "String",
    "FixedString",
    "DateTime",
]
_ARRAYS = [
    "String",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Float32",
    "Float64",
    "Bool",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
]
_ARRAYS_LOW_CARDINALITY = [
    "String",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float32",
    "Float64",
    "DateTime",
    "FixedString",
]
V3_COLUMN_TYPES = frozenset(
    [*_SCALARS]
    + [f"LowCardinality({t})" for t in _LOW_CARDINALITY]
    + [f"Array({t})" for t in _ARRAYS]
    + [f"Array(LowCardinality({t}))" for t in _ARRAYS_LOW_CARDINALITY]
    + ["Array(Map(String, String))", "Map(String, String)", "Map(LowCardinality(String), String)"]
)
# Types GlassFlow knows only by their family name (its parameters are not part of the name).
_FAMILY_ONLY = frozenset({"DateTime", "DateTime64", "FixedString", "Enum8", "Enum16"})

_FIELD_TYPES = {
    FieldType.STRING: "string",
    FieldType.INT: "int",
    FieldType.FLOAT: "float",
    FieldType.BOOL: "bool",
    FieldType.TIMESTAMP: "string",
    FieldType.JSON: "string",
    FieldType.ARRAY: "array",
    FieldType.MAP: "map",
}


@dataclass(frozen=True)
class V3Export:
    """A GlassFlow v3 document and what it could not express of our pipeline."""

    document: dict[str, Any]
    notes: tuple[str, ...]


def export_v3(pipeline: Pipeline, display_name: str | None = None) -> V3Export:
    """Our pipeline as a GlassFlow v3 document (see the module docstring for the losses)."""
    if len(pipeline.inputs) > 2:
        raise ConfigError(
            f"sources: GlassFlow's pipelines join two sources; this one joins "
            f"{len(pipeline.inputs)} in {len(pipeline.joins)} steps (join as a list), which "
            "GlassFlow cannot express: it has no GlassFlow export"
        )
    notes: list[str] = []
    sources: list[dict[str, Any]] = []
    transforms: list[dict[str, Any]] = []
    for i, src in enumerate(pipeline.inputs):
        where = "source" if pipeline.sources is None else f"sources[{i}]"
        sources.append(_source(src, where, notes))
        dedup = pipeline.dedup if pipeline.sources is None else getattr(src, "dedup", None)
        if dedup is not None:
            transform = _dedup(
                dedup, src.id, f"{where}.dedup" if pipeline.sources else "dedup", notes
            )
            if transform is not None:
                transforms.append(transform)
        for stage in ("transform", "filter"):
            if getattr(src, stage, None):
                notes.append(f"{where}.{stage}: Spark SQL has no GlassFlow v3 form; left out")
    if pipeline.transform:
        notes.append("transform: computed fields (Spark SQL) have no GlassFlow v3 form; left out")
    if pipeline.filter:
        notes.append("filter: a Spark SQL filter has no GlassFlow v3 form; left out")
    document: dict[str, Any] = {
        "version": "v3",
        "pipeline_id": pipeline.name,
        "name": display_name or pipeline.name,
        "sources": sources,
    }
    if transforms:
        document["transforms"] = transforms
    if pipeline.join is not None:
        document["join"] = _join(pipeline, notes)
    document["sink"] = _sink(pipeline.sink, notes)
    document["metadata"] = {"tags": []}
    if pipeline.dlq.table:
        notes.append(
            f"dlq.table: GlassFlow keeps dead letters in its own stream; {pipeline.dlq.table!r} is not shown"
        )
    return V3Export(document, tuple(notes))


def _source(src: KafkaSource, where: str, notes: list[str]) -> dict[str, Any]:
    if isinstance(src, OtlpSource):  # GlassFlow's OTLP source: its schema is predefined
        return {"type": src.signal.value, "source_id": src.id}
    security = src.security
    conn: dict[str, Any] = {
        "brokers": src.bootstrap_servers.split(","),
        "protocol": security.protocol.value,
        "mechanism": security.mechanism.value if security.mechanism else "NO_AUTH",
        "skip_tls_verification": security.skip_tls_verification,
    }
    if security.username:
        conn["username"] = security.username
    if security.password is not None:
        conn["password"] = security.password.get_secret_value()
    if security.ca_file is not None:
        notes.append(
            f"{where}.security.ca_file: a file path, not the PEM GlassFlow's root_ca holds; left out"
        )
    conn.update(_auth_extras(security, where, notes))
    if src.properties:
        notes.append(
            f"{where}.properties: librdkafka properties have no GlassFlow v3 form; left out"
        )
    schema = src.schema_
    if schema.event_time is not None:
        notes.append(
            f"{where}.schema.event_time: GlassFlow windows on processing time; event time "
            f"({schema.event_time!r}) is not expressed"
        )
    fields = []
    for field in schema.fields:
        if field.type in (FieldType.TIMESTAMP, FieldType.JSON):
            notes.append(
                f"{where}.schema: field {field.name!r} ({field.type.value}) is a string in v3"
            )
        fields.append({"name": field.name, "type": _FIELD_TYPES[field.type]})
    out = {
        "type": "kafka",
        "source_id": src.id,
        "connection_params": conn,
        "topic": src.topic,
        "consumer_group_initial_offset": src.start_from.value,
        "schema_fields": fields,
    }
    registry = src.schema_registry
    if registry is not None:  # GlassFlow Enterprise's form of the same source
        out["format"] = src.format.value
        out["schema_registry"] = {"url": registry.url}
        if registry.username:
            out["schema_registry"]["api_key"] = registry.username
        if registry.password is not None:
            out["schema_registry"]["api_secret"] = registry.password.get_secret_value()
    if schema.fields_pending:  # from_registry, as stored: GlassFlow reads the topic's subject
        del out["schema_fields"]
        notes.append(
            f"{where}.schema.from_registry: no schema_fields; imported again, the fields come "
            f"from the registry's latest {src.topic}-value schema"
        )
    return out


def _auth_extras(security: KafkaSecurity, where: str, notes: list[str]) -> dict[str, Any]:
    """Kerberos, mutual TLS, an inline CA and AWS IAM in GlassFlow's connection_params."""
    extra: dict[str, Any] = {}
    if security.ca_pem:
        extra["root_ca"] = security.ca_pem
    if security.client_cert_pem and security.client_key_pem:
        extra["client_cert"] = security.client_cert_pem
        extra["client_key"] = security.client_key_pem.get_secret_value()
    elif security.client_cert_file is not None:
        notes.append(f"{where}.security.client_cert_file: files are not exported; left out")
    kerberos = security.kerberos
    if kerberos is not None:
        user, _, realm = kerberos.principal.partition("@")
        extra.update(username=user, kerberos_service_name=kerberos.service_name)
        if realm:
            extra["kerberos_realm"] = realm
        if kerberos.keytab_base64 is not None:
            extra["kerberos_keytab"] = kerberos.keytab_base64.get_secret_value()
        else:
            extra["kerberos_keytab"] = str(kerberos.keytab)
        if kerberos.krb5_config_text or kerberos.krb5_config:
            extra["kerberos_config"] = kerberos.krb5_config_text or str(kerberos.krb5_config)
    oauth = security.oauthbearer
    if oauth is not None and oauth.token_provider == "aws_msk_iam":
        extra.update(iam_enable=True, iam_region=oauth.args.get("region", ""))
    elif oauth is not None:
        notes.append(f"{where}.security.oauthbearer: GlassFlow has no OAUTHBEARER form; left out")
    return extra


def _dedup(dedup: Dedup, source_id: str, where: str, notes: list[str]) -> dict[str, Any] | None:
    if dedup.mode is not DedupMode.FIRST:
        notes.append(
            f"{where}.mode: {dedup.mode.value} has no GlassFlow v3 form (it keeps the first); left out"
        )
        return None
    if len(dedup.key) != 1:
        notes.append(
            f"{where}.key: GlassFlow dedups on one field, not {'+'.join(dedup.key)}; left out"
        )
        return None
    return {
        "type": "dedup",
        "source_id": source_id,
        "config": {"key": dedup.key[0], "time_window": format_duration(dedup.time_window)},
    }


def _join(pipeline: Pipeline, notes: list[str]) -> dict[str, Any]:
    (join,) = pipeline.joins  # export_v3 refused a chain
    if join.type is not JoinType.INNER:
        notes.append(
            f"join.type: a {join.type.value} join has no GlassFlow v3 form (temporal inner joins only); shown as temporal"
        )
    if join.mode is JoinMode.TABLE:
        notes.append(
            "join.mode: table has no GlassFlow v3 form (GlassFlow keeps a right record for its "
            "time_window only, and has no tombstones); shown as temporal, the right "
            "time_window being the ttl, or the left window without one"
        )
    elif join.mode is not JoinMode.LATEST:
        notes.append(
            f"join.mode: GlassFlow joins each left record once, with the newest right record "
            f"of its key (mode latest); this {join.mode.value} join's row per matching pair "
            "has no GlassFlow v3 form"
        )
    if join.allowed_lateness is not None:
        notes.append("join.allowed_lateness: no GlassFlow v3 form; left out")
    sides = {}
    for name, side in (("left", join.left), ("right", join.right)):
        if len(side.key) != 1:
            notes.append(
                f"join.{name}.key: GlassFlow joins on one field; only {side.key[0]!r} is shown"
            )
        sides[name] = {
            "source_id": side.source,
            "key": side.key[0],
            "time_window": format_duration(side.time_window or join.right.ttl or join.left_window),
        }
    output = []
    for out in join.output:
        entry = {"source_id": sides[out.from_]["source_id"], "name": out.field}
        if out.as_ is not None:
            entry["output_name"] = out.as_
        output.append(entry)
    return {
        "enabled": True,
        "type": "temporal",
        "left_source": sides["left"],
        "right_source": sides["right"],
        "output_fields": output,
    }


def _sink(sink: ClickHouseSink, notes: list[str]) -> dict[str, Any]:
    ch = sink.clickhouse
    if ch.embedded:
        notes.append(
            f"sink.clickhouse.path: an embedded ClickHouse has no host; shown as host "
            f"{EMBEDDED_HOST!r}, port 0"
        )
        host, port = EMBEDDED_HOST, "0"
    else:
        host, port = ch.host or "", str(ch.port or (8443 if ch.secure else 8123))
    mapping = []
    for i, m in enumerate(sink.mapping):
        column_type, loss = v3_column_type(m.type)
        if loss:
            notes.append(f"sink.mapping[{i}].type: {loss}")
        mapping.append({"name": m.field, "column_name": m.column, "column_type": column_type})
    return {
        "type": "clickhouse",
        "connection_params": {
            "host": host,
            "port": port,  # GlassFlow's native port; streamsift speaks HTTP on this one
            "http_port": port,
            "database": ch.database,
            "username": ch.username,
            "password": ch.password.get_secret_value(),
            "secure": ch.secure,
            "skip_certificate_verification": ch.skip_certificate_verification,
        },
        "table": sink.table,
        "max_batch_size": sink.max_batch_size,
        "max_delay_time": format_duration(sink.max_delay_time),
        "mapping": mapping,
    }


def v3_column_type(type_: str) -> tuple[str, str | None]:
    """The v3 column type for one of ours, and what was lost on the way (None: nothing)."""
    text = str(parse_clickhouse_type(type_))
    if text in V3_COLUMN_TYPES:
        return text, None
    reduced = str(_reduce(parse_clickhouse_type(text)))
    if reduced in V3_COLUMN_TYPES:
        return reduced, f"{text} is {reduced} in GlassFlow v3"
    return "String", f"{text} has no GlassFlow v3 form; shown as String"


def _reduce(t: CHType) -> CHType:
    """Nullable wrappers dropped, family-only types without their parameters."""
    if t.name == "Nullable" and t.args and isinstance(t.args[0], CHType):
        return _reduce(t.args[0])
    if t.name in _FAMILY_ONLY:
        return CHType(t.name)
    args = tuple(_reduce(a) if isinstance(a, CHType) else a for a in t.args)
    return CHType(t.name, args)
