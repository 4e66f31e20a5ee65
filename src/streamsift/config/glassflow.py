"""Import GlassFlow for ClickHouse pipeline JSON (v1, v2 and v3) as a streamsift pipeline.

GlassFlow documents come in three shapes (see docs/configuration.md, "Importing GlassFlow
pipelines"): v1 (no `version` key, `source.topics[]`, `sink.table_mapping`), v2 (`"version":
"2.0.0"` or `"v2"`, top-level `schema.fields`) and v3 (`"version": "v3"`, `sources[]`,
`transforms[]`, `sink.connection_params`, `sink.mapping`). `convert_glassflow` turns any of
them into OUR document (a plain dict that `Pipeline.model_validate` accepts).

Joins (v3 `join.left_source/right_source`, v1/v2 `join.sources[]` by orientation), filters
and stateless transforms (expr-lang translated to Spark SQL, see exprlang.py) are imported.
What we cannot run yet (OTLP sources, two sources without a join, filters or stateless
transforms with a join, Schema Registry, Kerberos, AWS IAM, client certificates) is refused
with a `ConfigError` naming the GlassFlow field, never dropped silently. Problems are
reported with GlassFlow's field paths (`transforms[0].config.key: ...`) so users can find
them in their own file.
"""

from __future__ import annotations

import base64
import binascii
import re
import textwrap
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import yaml
from pydantic import ValidationError

from streamsift.config.durations import format_duration
from streamsift.config.errors import ConfigError, format_validation_error
from streamsift.config.exprlang import ExprLangError, translate
from streamsift.config.models import MAX_DEDUP_WINDOW, Pipeline
from streamsift.config.types import (
    FIELD_TYPE_ALIASES,
    CHType,
    FieldType,
    check_compatible,
    parse_clickhouse_type,
)

__all__ = [
    "GlassFlowImport",
    "convert_glassflow",
    "glassflow_to_yaml",
    "glassflow_version",
    "import_glassflow",
    "parse_go_duration",
]

MIN_PIPELINE_ID_LENGTH = 5
"""GlassFlow's `MinPipelineIDLength`."""

CLICKHOUSE_HTTP_PORT = 8123
CLICKHOUSE_HTTPS_PORT = 8443
_HTTP_PORTS = {str(CLICKHOUSE_HTTP_PORT), str(CLICKHOUSE_HTTPS_PORT)}

# Type names GlassFlow lets through without a check, read as the obvious streamsift type.
_EXTRA_FIELD_TYPES: dict[str, FieldType] = {
    "date": FieldType.TIMESTAMP,
    "date_time": FieldType.TIMESTAMP,
    "time": FieldType.TIMESTAMP,
    "timestamptz": FieldType.TIMESTAMP,
    "uuid": FieldType.STRING,
}

# GlassFlow's ClickHouse type vocabulary, to repair the lowercase names of early v1 files.
_CH_NAMES = {
    name.lower(): name
    for name in (
        "String",
        "FixedString",
        "Bool",
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
        "Enum8",
        "Enum16",
        "UUID",
        "DateTime",
        "DateTime64",
        "LowCardinality",
        "Map",
        "Array",
        "Nullable",
        "Date",
        "Date32",
    )
}
_CH_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_GO_DURATION = re.compile(r"^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$")
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_DAYS = re.compile(r"(?<![\d.])(\d+)d")
_GO_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}

_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_NO_MECHANISM = ("", "NO_AUTH", "NONE")

# Top-level keys that carry nothing streamsift can use (display name, tags, k8s sizing, export info).
_IGNORED_KEYS = (
    "name",
    "metadata",
    "resources",
    "pipeline_resources",
    "exported_at",
    "exported_by",
)


# ---------------------------------------------------------------------------- public API


@dataclass(frozen=True)
class GlassFlowImport:
    """A converted GlassFlow pipeline: our document plus notes on what changed in meaning."""

    version: str
    pipeline_id: str
    document: dict[str, Any]
    notes: tuple[str, ...]


def glassflow_version(doc: dict[str, Any]) -> str:
    """Which GlassFlow format `doc` is in: "v1", "v2" or "v3"; ConfigError for unknown versions."""
    raw = doc.get("version")
    text = "" if raw is None else str(raw).strip().lower()
    if text == "":
        return "v3" if "sources" in doc else "v1"
    if text == "v3":
        return "v3"
    if text in ("v2", "2.0.0"):
        return "v2"
    if text in ("v1", "1.0.0"):
        return "v1"
    raise ConfigError(
        f"version: unsupported GlassFlow pipeline version {raw!r}; "
        'expected "v3", "v2" or "2.0.0" (v1 files have no version)'
    )


def import_glassflow(doc: dict[str, Any], *, create_table: bool = False) -> GlassFlowImport:
    """Convert and validate a GlassFlow pipeline; ConfigError lists every problem found.

    `create_table` defaults to False because GlassFlow expects the table to exist.
    """
    if not isinstance(doc, dict):
        raise ConfigError("a GlassFlow pipeline must be a JSON object")
    version = glassflow_version(doc)
    converter = _Converter(doc, version)
    document = converter.convert(create_table=create_table)
    converter.validate(document)
    return GlassFlowImport(
        version=version,
        pipeline_id=str(doc.get("pipeline_id", "")).strip(),
        document=document,
        notes=tuple(converter.notes),
    )


def convert_glassflow(doc: dict[str, Any], *, create_table: bool = False) -> dict[str, Any]:
    """A GlassFlow pipeline (v1, v2 or v3) as a streamsift pipeline document (a plain dict)."""
    return import_glassflow(doc, create_table=create_table).document


def glassflow_to_yaml(doc: dict[str, Any], *, create_table: bool = False) -> str:
    """A GlassFlow pipeline as streamsift YAML, with the import notes as comments on top.

    Secrets are written as given (v1/v2 passwords base64-decoded): the result is the user's own
    pipeline file, so treat it like the GlassFlow file it came from.
    """
    result = import_glassflow(doc, create_table=create_table)
    header = [
        f"# streamsift pipeline imported from GlassFlow pipeline {result.pipeline_id!r} "
        f"(format {result.version}).",
        "# Field reference: docs/configuration.md. Import notes:",
    ]
    for note in result.notes:
        lines = textwrap.wrap(note, width=94)
        header.append(f"#  - {lines[0]}")
        header.extend(f"#    {line}" for line in lines[1:])
    body = yaml.dump(result.document, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True)
    return "\n".join(header) + "\n" + body


def parse_go_duration(value: object) -> timedelta:
    """A GlassFlow duration: a JSON string, `Nd` read as N*24h, then Go's time.ParseDuration."""
    if not isinstance(value, str):
        raise ValueError(f'must be a duration string such as "30s", "1h" or "1d", got {value!r}')
    text = _GO_DAYS.sub(lambda m: f"{int(m.group(1)) * 24}h", value)
    if text.lstrip("+-") == "0":
        return timedelta(0)
    if not _GO_DURATION.match(text):
        raise ValueError(f'{value!r} is not a duration (e.g. "30s", "1h30m", "1d12h", "168h0m0s")')
    seconds = sum(float(n) * _GO_UNIT_SECONDS[u] for n, u in _GO_PART.findall(text))
    return timedelta(seconds=-seconds if text.startswith("-") else seconds)


# ---------------------------------------------------------------------------- internals


class _YamlDumper(yaml.SafeDumper):
    """Safe YAML, with multi-line strings (PEM certificates) as readable `|` blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_YamlDumper.add_representer(str, _str_representer)


@dataclass(frozen=True)
class _Field:
    name: str
    type: FieldType | None  # None: the type was refused (reported once, not again per use)
    path: str


@dataclass(frozen=True)
class _Column:
    field: str
    column: str
    type: str
    path: str
    field_key: str
    column_key: str
    type_key: str


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _decode_base64_password(value: str) -> str:
    """GlassFlow v1/v2 store the ClickHouse password base64-encoded; undecodable text is kept."""
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return value


class _Converter:
    """One conversion: collects problems and notes, and where each of our fields came from."""

    def __init__(self, doc: dict[str, Any], version: str) -> None:
        self.doc = doc
        self.version = version
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.origins: dict[str, str] = {}

    # -- bookkeeping

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def origin(self, ours: str, theirs: str) -> None:
        self.origins[ours] = theirs

    def fail_if_problems(self) -> None:
        if self.problems:
            raise ConfigError(self.problems)

    def validate(self, document: dict[str, Any]) -> None:
        """Run our own model over the result and report its problems in GlassFlow's paths."""
        try:
            Pipeline.model_validate(document)
        except ValidationError as exc:
            raise ConfigError(
                [self.translate(line) for line in format_validation_error(exc)]
            ) from None

    def translate(self, line: str) -> str:
        best = ""
        for ours in self.origins:
            if (
                len(ours) > len(best)
                and line.startswith(ours)
                and line[len(ours) : len(ours) + 1] in (".", "[", ":")
            ):
                best = ours
        return self.origins[best] + line[len(best) :] if best else line

    # -- typed access

    def obj(
        self, parent: dict[str, Any], key: str, path: str, *, required: bool
    ) -> dict[str, Any] | None:
        return self._typed(parent, key, path, dict, "an object", required)

    def array(
        self, parent: dict[str, Any], key: str, path: str, *, required: bool
    ) -> list[Any] | None:
        return self._typed(parent, key, path, list, "a list", required)

    def _typed(
        self, parent: dict[str, Any], key: str, path: str, kind: type, label: str, required: bool
    ) -> Any:
        """`parent[key]` if it is of `kind`; else None, with a problem recorded where due."""
        value = parent.get(key)
        if value is None:
            if required:
                self.problem(path, "required field is missing")
            return None
        if not isinstance(value, kind):
            self.problem(path, f"must be {label}, got {type(value).__name__}")
            return None
        return value

    def text(
        self, parent: dict[str, Any], key: str, path: str, *, empty: str | None = None
    ) -> str | None:
        """A string field; `empty` is the message for a missing or blank value (None: optional)."""
        value = parent.get(key)
        if _blank(value):
            if empty is not None:
                self.problem(path, empty)
            return None
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            self.problem(path, f"must be a string, got {type(value).__name__}")
            return None
        return str(value).strip()

    def flag(self, parent: dict[str, Any], key: str, path: str) -> bool:
        value = parent.get(key, False)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.problem(path, f"must be true or false, got {value!r}")
            return False
        return value

    def duration(self, parent: dict[str, Any], key: str, path: str) -> timedelta | None:
        if parent.get(key) is None:
            return None
        try:
            return parse_go_duration(parent[key])
        except ValueError as exc:
            self.problem(path, str(exc))
            return None

    # -- the whole document

    def convert(self, *, create_table: bool) -> dict[str, Any]:
        name = self.pipeline_name()
        extras: dict[str, Any] = {}
        if self.version == "v3":
            self.refuse_v3()
            join = self.doc.get("join")
            if isinstance(join, dict) and join.get("enabled"):
                return self.v3_join(name, create_table)
            source, fields, dedup, sink_input = self.v3_source_and_dedup(extras)
            sink = self.v3_sink(fields, sink_input)
        else:
            self.refuse_legacy()
            join = self.doc.get("join")
            if isinstance(join, dict) and join.get("enabled"):
                return self.legacy_join(name, create_table)
            source, fields, dedup, topic_id = self.legacy_source_and_dedup()
            self.legacy_expressions(fields, topic_id, extras)
            sink = self.legacy_sink(fields, topic_id)
        self.fail_if_problems()
        document: dict[str, Any] = {"version": 1, "name": name, "source": source}
        if dedup is not None:
            document["dedup"] = dedup
        document.update(extras)
        assert sink is not None  # no problems means the sink was read
        document["sink"] = {}
        for key, value in sink.items():  # create_table right after table, where readers look
            document["sink"][key] = value
            if key == "table":
                document["sink"]["create_table"] = create_table
        self.add_notes(dedup is not None, create_table)
        return document

    def pipeline_name(self) -> str:
        raw = self.text(self.doc, "pipeline_id", "pipeline_id", empty="required field is missing")
        self.origin("name", "pipeline_id")
        if raw is None:
            return ""
        if len(raw) < MIN_PIPELINE_ID_LENGTH:
            self.problem(
                "pipeline_id", f"pipeline ID must be at least {MIN_PIPELINE_ID_LENGTH} characters"
            )
        name = re.sub(r"[^A-Za-z0-9_\-]+", "-", raw)
        name = re.sub(r"^[^A-Za-z0-9]+", "", name)[:100].rstrip("-")
        if not name:
            self.problem(
                "pipeline_id", f"{raw!r} has no letters or digits to name the pipeline after"
            )
        elif name != raw:
            self.notes.append(
                f"pipeline_id {raw!r} became the name {name!r} (letters, digits, _ and - only)"
            )
        for key in _IGNORED_KEYS:
            if self.doc.get(key) not in (None, "", {}, []):
                self.notes.append(
                    f"GlassFlow's {key!r} has no streamsift equivalent and was not imported"
                )
        return name

    def add_notes(self, has_dedup: bool, create_table: bool) -> None:
        if has_dedup:
            self.notes.append(
                "GlassFlow deduplicates on processing time; this pipeline sets no source.schema.event_time, "
                "so streamsift windows on each message's Kafka timestamp. Name a timestamp field in "
                "source.schema.event_time to window on event time instead"
            )
        if not create_table:
            self.notes.append(
                "create_table is false: GlassFlow expects the ClickHouse table to exist. "
                "Set it to true to let streamsift create the table"
            )

    # -- refusals: shapes we do not run yet

    def refuse_v3(self) -> None:
        refused: list[str] = []
        join = self.doc.get("join")
        joined = isinstance(join, dict) and bool(join.get("enabled"))
        sources = self.doc.get("sources")
        if isinstance(sources, list):
            for i, src in enumerate(sources):
                if not isinstance(src, dict):
                    continue
                kind = str(src.get("type") or "kafka").strip().lower()
                if kind.startswith("otlp"):
                    refused.append(
                        f"sources[{i}].type: OTLP sources ({kind}) are not supported yet; "
                        "streamsift reads JSON messages from a Kafka topic"
                    )
                refused.extend(self.refuse_source_extras(src, f"sources[{i}]"))
            if len(sources) > 1 and not joined:
                refused.append(
                    f"sources: pipelines with {len(sources)} sources are not supported yet; "
                    "streamsift reads one Kafka topic per pipeline"
                )
        transforms = self.doc.get("transforms")
        if isinstance(transforms, list):
            for i, tr in enumerate(transforms):
                kind = str(tr.get("type", "")).strip().lower() if isinstance(tr, dict) else ""
                if kind in ("filter", "stateless") and joined:
                    refused.append(
                        f"transforms[{i}].type: filter/stateless transforms are not supported "
                        "with join (GlassFlow's own rule)"
                    )
        if refused:
            raise ConfigError(refused)

    def refuse_legacy(self) -> None:
        refused: list[str] = []
        join = self.doc.get("join")
        joined = isinstance(join, dict) and bool(join.get("enabled"))
        source = self.doc.get("source")
        if isinstance(source, dict):
            kind = str(source.get("type") or "kafka").strip().lower()
            if kind.startswith("otlp"):
                refused.append(
                    f"source.type: OTLP sources ({kind}) are not supported yet; "
                    "streamsift reads JSON messages from a Kafka topic"
                )
            topics = source.get("topics")
            if isinstance(topics, list):
                for i, topic in enumerate(topics):
                    if isinstance(topic, dict):
                        refused.extend(self.refuse_source_extras(topic, f"source.topics[{i}]"))
                if len(topics) > 1 and not joined:
                    refused.append(
                        f"source.topics: pipelines with {len(topics)} topics are not supported yet; "
                        "streamsift reads one Kafka topic per pipeline"
                    )
        for key in ("filter", "stateless_transformation"):
            block = self.doc.get(key)
            if joined and isinstance(block, dict) and block.get("enabled"):
                refused.append(
                    f"{key}: filter/stateless transforms are not supported with join "
                    "(GlassFlow's own rule)"
                )
        if refused:
            raise ConfigError(refused)

    @staticmethod
    def refuse_source_extras(src: dict[str, Any], path: str) -> list[str]:
        refused = []
        if src.get("schema_registry") not in (None, {}, ""):
            refused.append(
                f"{path}.schema_registry: Schema Registry is not supported yet; "
                "streamsift reads plain JSON messages"
            )
        fmt = src.get("format")
        if fmt not in (None, "") and str(fmt).strip().lower() != "json":
            refused.append(f"{path}.format: {fmt!r} messages are not supported yet; only JSON")
        return refused

    # -- source pieces shared by all versions

    def kafka_source(
        self,
        conn: dict[str, Any] | None,
        conn_path: str,
        holder: dict[str, Any],
        holder_path: str,
        topic_key: str,
        source_name: str | None,
    ) -> dict[str, Any]:
        """Our `source` (without schema) from a connection object and a topic holder."""
        source: dict[str, Any] = {}
        if source_name:
            source["name"] = source_name
        self.origin("source", holder_path)
        self.origin("source.name", f"{holder_path}.source_id")
        if conn is not None:
            brokers = self.brokers(conn, f"{conn_path}.brokers")
            if brokers:
                source["bootstrap_servers"] = brokers
        self.origin("source.bootstrap_servers", f"{conn_path}.brokers")
        topic = self.text(
            holder, topic_key, f"{holder_path}.{topic_key}", empty="kafka topic cannot be empty"
        )
        if topic is not None:
            source["topic"] = topic
        self.origin("source.topic", f"{holder_path}.{topic_key}")
        offset = self.text(
            holder, "consumer_group_initial_offset", f"{holder_path}.consumer_group_initial_offset"
        )
        self.origin("source.start_from", f"{holder_path}.consumer_group_initial_offset")
        if offset is not None:
            if offset.lower() not in ("earliest", "latest"):
                self.problem(
                    f"{holder_path}.consumer_group_initial_offset",
                    "invalid consumer_group_initial_offset; allowed values: earliest or latest",
                )
            else:
                source["start_from"] = offset.lower()
        else:
            source["start_from"] = "earliest"
        if conn is not None:
            security, properties = self.security(conn, conn_path)
            if security:
                source["security"] = security
            if properties:
                source["properties"] = properties
        self.origin("source.security", conn_path)
        self.origin("source.properties", conn_path)
        return source

    def brokers(self, conn: dict[str, Any], path: str) -> str | None:
        value = conn.get("brokers")
        if isinstance(value, str):
            value = value.split(",")
        if not isinstance(value, list) or not value:
            self.problem(path, "must have at least one kafka server")
            return None
        servers = []
        for i, server in enumerate(value):
            if not isinstance(server, str) or not server.strip():
                self.problem(f"{path}[{i}]", "kafka server cannot be empty")
                continue
            host, _, port = server.strip().rpartition(":")
            if not host or not port.isdigit():
                self.problem(f"{path}[{i}]", f"{server!r} is not host:port")
                continue
            servers.append(server.strip())
        return ",".join(servers) if servers else None

    def security(self, conn: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, str]]:
        """Our `source.security` and librdkafka `properties` from GlassFlow's connection_params."""
        protocol = self.text(conn, "protocol", f"{path}.protocol") or "PLAINTEXT"
        if protocol not in _PROTOCOLS:
            self.problem(
                f"{path}.protocol",
                f"unsupported protocol {protocol!r}; allowed: {', '.join(_PROTOCOLS)}",
            )
            return {}, {}
        mechanism = (self.text(conn, "mechanism", f"{path}.mechanism") or "").upper()
        skip_auth = self.flag(conn, "skip_auth", f"{path}.skip_auth")
        security: dict[str, Any] = {}
        if protocol != "PLAINTEXT":
            security["protocol"] = protocol
        if mechanism == "GSSAPI" or any(
            not _blank(conn.get(k)) for k in ("kerberos_service_name", "kerberos_keytab")
        ):
            self.problem(
                f"{path}.mechanism", "GSSAPI (Kerberos) authentication is not supported yet"
            )
        elif conn.get("iam_enable"):
            self.problem(f"{path}.iam_enable", "AWS IAM authentication is not supported yet")
        elif protocol in _SASL_PROTOCOLS:
            if mechanism not in _MECHANISMS:
                shown = mechanism or "none"
                self.problem(
                    f"{path}.mechanism",
                    f"protocol {protocol} needs mechanism {', '.join(_MECHANISMS)}; got {shown}",
                )
            else:
                security["mechanism"] = mechanism
            username = self.text(
                conn, "username", f"{path}.username", empty="SASL username cannot be empty"
            )
            password = conn.get("password")
            if not isinstance(password, str) or not password:
                self.problem(f"{path}.password", "SASL password cannot be empty")
            if username is not None:
                security["username"] = username
            if isinstance(password, str) and password:
                security["password"] = password
        elif mechanism not in _NO_MECHANISM and not skip_auth:
            self.problem(
                f"{path}.mechanism",
                f"mechanism {mechanism} needs protocol SASL_PLAINTEXT or SASL_SSL, got {protocol} "
                "(or set skip_auth: true)",
            )
        if self.flag(conn, "skip_tls_verification", f"{path}.skip_tls_verification"):
            security["skip_tls_verification"] = True
        for key in ("client_cert", "client_key", "tls_cert", "tls_key"):
            if not _blank(conn.get(key)):
                self.problem(
                    f"{path}.{key}",
                    "client certificates (mutual TLS) are not imported: save the certificate and key "
                    "to files and set source.properties ssl.certificate.location and ssl.key.location",
                )
        properties: dict[str, str] = {}
        root_ca = conn.get("root_ca")
        if not _blank(root_ca):
            pem = self.pem(root_ca, f"{path}.root_ca")
            if pem is not None:
                properties["ssl.ca.pem"] = pem
                self.notes.append(
                    "the Kafka CA certificate (root_ca) is kept inline as the librdkafka property "
                    "source.properties.ssl.ca.pem; to use a file instead, delete it and set "
                    "source.security.ca_file"
                )
        return security, properties

    def pem(self, value: object, path: str) -> str | None:
        """PEM text as given, or decoded from base64 (as GlassFlow's v2 docs write it)."""
        if not isinstance(value, str):
            self.problem(path, f"must be a string, got {type(value).__name__}")
            return None
        text = value.strip()
        if "-----BEGIN" in text:
            return text + "\n"
        try:
            decoded = base64.b64decode("".join(text.split()), validate=True).decode("ascii")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        if "-----BEGIN" in decoded:
            return decoded.strip() + "\n"
        self.problem(
            path, "not a PEM certificate (nor base64 of one): expected -----BEGIN CERTIFICATE-----"
        )
        return None

    def schema(
        self, raw: list[Any] | None, paths: list[str], container: str
    ) -> tuple[dict[str, Any], dict[str, _Field]]:
        """Our `source.schema` from GlassFlow `{name, type}` entries (paths: each entry's own)."""
        fields: dict[str, _Field] = {}
        out: list[dict[str, str]] = []
        self.origin("source.schema", container)
        self.origin("source.schema.fields", container)
        for i, (entry, path) in enumerate(zip(raw or [], paths, strict=True)):
            self.origin(f"source.schema.fields[{i}]", path)
            if not isinstance(entry, dict):
                self.problem(path, "must be an object {name, type}")
                continue
            name = self.text(entry, "name", f"{path}.name", empty="field name cannot be empty")
            ftype = self.field_type(entry.get("type"), f"{path}.type")
            if name is None:
                continue
            if name in fields:
                self.problem(
                    f"{path}.name",
                    f"field {name!r} is declared twice (first at {fields[name].path})",
                )
                continue
            fields[name] = _Field(name, ftype, path)
            if ftype is not None:
                out.append({"name": name, "type": ftype.value})
        if raw is not None and not raw:
            self.problem(container, "at least one schema field is required")
        return {"fields": out}, fields

    def field_type(self, value: object, path: str) -> FieldType | None:
        if not isinstance(value, str) or not value.strip():
            self.problem(path, "field type cannot be empty")
            return None
        key = value.strip().lower()
        found = FIELD_TYPE_ALIASES.get(key) or _EXTRA_FIELD_TYPES.get(key)
        if found is None:
            self.problem(
                path,
                f"unknown type {value!r}; GlassFlow types: string, int, uint, float, bool, array, map "
                "(and int8..int64, uint8..uint64, float32, float64, bytes, integer, number, boolean, "
                "object, datetime)",
            )
        return found

    def dedup(
        self,
        key: str | None,
        key_path: str,
        config: dict[str, Any],
        window_key: str,
        path: str,
        fields: dict[str, _Field],
        source_label: str,
    ) -> dict[str, Any] | None:
        """Our `dedup` from a GlassFlow key and time window; the key must be a schema field."""
        self.origin("dedup", path)
        self.origin("dedup.key", key_path)
        self.origin("dedup.time_window", f"{path}.{window_key}")
        if key is not None and fields and key not in fields:
            self.problem(
                key_path,
                f"dedup key {key!r} not found in schema_fields for source {source_label!r}",
            )
        window = self.duration(config, window_key, f"{path}.{window_key}")
        if config.get(window_key) is None:
            self.problem(f"{path}.{window_key}", "required field is missing")
        elif window is not None and window <= timedelta(0):
            self.problem(f"{path}.{window_key}", "time_window must be greater than zero")
        elif window is not None and window > MAX_DEDUP_WINDOW:
            self.problem(
                f"{path}.{window_key}", f"{format_duration(window)} exceeds the 7d maximum"
            )
        if key is None or window is None:
            return None
        return {"key": key, "time_window": format_duration(window)}

    # -- v3

    def v3_source_and_dedup(
        self, extras: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, _Field], dict[str, Any] | None, str]:
        sources = self.array(self.doc, "sources", "sources", required=True)
        if sources is not None and not sources:
            self.problem("sources", "pipeline must have at least one source")
        src = sources[0] if sources else None
        if src is None or not isinstance(src, dict):
            if src is not None:
                self.problem("sources[0]", "must be an object")
            self.fail_if_problems()
            return {}, {}, None, ""
        path = "sources[0]"
        source_id = self.text(
            src, "source_id", f"{path}.source_id", empty="source at index 0 has empty source_id"
        )
        conn = self.obj(src, "connection_params", f"{path}.connection_params", required=False)
        if conn is None and "connection_params" not in src:
            self.problem(f"{path}.connection_params", "kafka source must declare connection_params")
        source = self.kafka_source(conn, f"{path}.connection_params", src, path, "topic", source_id)
        raw = self.array(src, "schema_fields", f"{path}.schema_fields", required=True)
        schema, fields = self.schema(
            raw,
            [f"{path}.schema_fields[{i}]" for i in range(len(raw or []))],
            f"{path}.schema_fields",
        )
        source["schema"] = schema
        dedup = None
        transforms = self.array(self.doc, "transforms", "transforms", required=False) or []
        for i, tr in enumerate(transforms):
            tpath = f"transforms[{i}]"
            if not isinstance(tr, dict):
                self.problem(tpath, "must be an object {type, source_id, config}")
                continue
            kind = str(tr.get("type", "")).strip().lower()
            if kind in ("filter", "stateless") and extras is not None:
                self.expression_transform(tr, tpath, kind, fields, extras)
                continue
            if kind != "dedup":
                self.problem(
                    f"{tpath}.type",
                    f"transform at index {i} has unsupported type {tr.get('type')!r}",
                )
                continue
            ref = self.text(
                tr, "source_id", f"{tpath}.source_id", empty="source_id cannot be empty"
            )
            if ref is not None and source_id is not None and ref != source_id:
                self.problem(
                    f"{tpath}.source_id",
                    f"transform at index {i} references unknown source_id {ref!r}",
                )
                continue
            if dedup is not None:
                self.problem(
                    tpath, f"at most one dedup transform per source; {source_id!r} already has one"
                )
                continue
            config = self.obj(tr, "config", f"{tpath}.config", required=True)
            if config is None:
                continue
            key = self.text(config, "key", f"{tpath}.config.key", empty="key cannot be empty")
            dedup = self.dedup(
                key,
                f"{tpath}.config.key",
                config,
                "time_window",
                f"{tpath}.config",
                fields,
                source_id or "",
            )
            if dedup is None:
                dedup = {}  # reported; keeps later duplicates detectable
        return source, fields, dedup or None, source_id or ""

    def expression_transform(
        self,
        tr: dict[str, Any],
        tpath: str,
        kind: str,
        fields: dict[str, _Field],
        extras: dict[str, Any],
    ) -> None:
        """A GlassFlow filter (kept when true) or stateless transform, as our filter/transform."""
        config = self.obj(tr, "config", f"{tpath}.config", required=True) or {}
        if kind == "filter":
            self.filter_expression(config, f"{tpath}.config", extras)
            return
        entries = self.array(config, "transforms", f"{tpath}.config.transforms", required=True)
        self.stateless_entries(entries or [], f"{tpath}.config.transforms", fields, extras)

    def filter_expression(self, holder: dict[str, Any], path: str, extras: dict[str, Any]) -> None:
        """`holder.expression` (expr-lang, kept when true) as our Spark SQL `filter`."""
        text = self.text(
            holder, "expression", f"{path}.expression", empty="expression cannot be empty"
        )
        self.origin("filter", f"{path}.expression")
        if text is not None:
            try:
                extras["filter"] = translate(text)
            except ExprLangError as exc:
                self.problem(f"{path}.expression", str(exc))

    def stateless_entries(
        self, entries: list[Any], path: str, fields: dict[str, _Field], extras: dict[str, Any]
    ) -> None:
        """GlassFlow `{expression, output_name, output_type}` entries as our `transform`."""
        out = extras.setdefault("transform", [])
        for j, entry in enumerate(entries):
            epath = f"{path}[{j}]"
            if not isinstance(entry, dict):
                self.problem(epath, "must be an object {expression, output_name, output_type}")
                continue
            text = self.text(
                entry, "expression", f"{epath}.expression", empty="expression is empty"
            )
            name = self.text(entry, "output_name", f"{epath}.output_name", empty="name is empty")
            ftype = self.field_type(entry.get("output_type"), f"{epath}.output_type")
            if text is None or name is None or ftype is None:
                continue
            try:
                sql = translate(text)
            except ExprLangError as exc:
                self.problem(f"{epath}.expression", str(exc))
                continue
            if name in fields:
                if sql == f"`{name}`":
                    continue  # a field passed through unchanged: already there
                self.problem(
                    f"{epath}.output_name",
                    f"{name!r} is also a schema field; streamsift keeps both, so rename the output",
                )
                continue
            for ours, theirs in (("", ""), (".name", ".output_name"), (".type", ".output_type")):
                self.origin(f"transform[{len(out)}]{ours}", f"{epath}{theirs}")
            self.origin(f"transform[{len(out)}].expression", f"{epath}.expression")
            out.append({"name": name, "expression": sql, "type": ftype.value})
            fields[name] = _Field(name, ftype, epath)
        self.notes.append(
            "GlassFlow's stateless output replaces the record; here computed fields are added "
            "to the schema fields, and the mapping may use both"
        )

    def v3_join(self, name: str, create_table: bool) -> dict[str, Any]:
        """A GlassFlow v3 join pipeline: two sources, per-source dedup, a temporal inner join."""
        sources = self.array(self.doc, "sources", "sources", required=True) or []
        if len(sources) != 2:
            self.problem("sources", "join.enabled=true requires exactly two kafka sources")
            self.fail_if_problems()
        ours: dict[str, dict[str, Any]] = {}
        schemas: dict[str, dict[str, _Field]] = {}
        for i, src in enumerate(sources):
            path = f"sources[{i}]"
            if not isinstance(src, dict):
                self.problem(path, "must be an object")
                continue
            sid = self.text(src, "source_id", f"{path}.source_id", empty="source_id is empty")
            conn = self.obj(src, "connection_params", f"{path}.connection_params", required=True)
            source = self.kafka_source(conn, f"{path}.connection_params", src, path, "topic", sid)
            raw = self.array(src, "schema_fields", f"{path}.schema_fields", required=True)
            schema, fields = self.schema(
                raw,
                [f"{path}.schema_fields[{j}]" for j in range(len(raw or []))],
                f"{path}.schema_fields",
            )
            source["schema"] = schema
            if sid is not None:
                ours[sid], schemas[sid] = source, fields
        for i, tr in enumerate(
            self.array(self.doc, "transforms", "transforms", required=False) or []
        ):
            tpath = f"transforms[{i}]"
            if not isinstance(tr, dict) or str(tr.get("type", "")).lower() != "dedup":
                self.problem(f"{tpath}.type", "only dedup transforms are imported with a join")
                continue
            sid = tr.get("source_id")
            if not isinstance(sid, str) or sid not in ours:
                self.problem(
                    f"{tpath}.source_id",
                    f"transform at index {i} references unknown source_id {sid!r}",
                )
                continue
            config = self.obj(tr, "config", f"{tpath}.config", required=True) or {}
            key = self.text(config, "key", f"{tpath}.config.key", empty="key cannot be empty")
            dedup = self.dedup(
                key,
                f"{tpath}.config.key",
                config,
                "time_window",
                f"{tpath}.config",
                schemas[sid],
                sid,
            )
            if dedup is not None:
                ours[sid]["dedup"] = dedup
        join = self.doc["join"]
        kind = str(join.get("type") or "temporal").strip().lower()
        if kind != "temporal":
            self.problem("join.type", "invalid join type; only temporal joins are supported")
        sides: dict[str, Any] = {}
        for side in ("left", "right"):
            jpath = f"join.{side}_source"
            spec = self.obj(join, f"{side}_source", jpath, required=True) or {}
            sid = self.text(spec, "source_id", f"{jpath}.source_id", empty="source_id is empty")
            key = self.text(spec, "key", f"{jpath}.key", empty="join key cannot be empty")
            window = self.duration(spec, "time_window", f"{jpath}.time_window")
            if sid is not None and sid not in ours:
                self.problem(f"{jpath}.source_id", f"unknown source_id {sid!r}")
            elif sid is not None and key is not None and key not in schemas[sid]:
                self.problem(
                    f"{jpath}.key",
                    f"join key {key!r} not found in schema_fields for source {sid!r}",
                )
            if window is None:
                self.problem(f"{jpath}.time_window", "required field is missing")
            sides[side] = {
                "source": sid,
                "key": key,
                "time_window": format_duration(window) if window else None,
            }
        output: list[dict[str, Any]] = []
        out_fields: dict[str, _Field] = {}
        for i, entry in enumerate(
            self.array(join, "output_fields", "join.output_fields", required=True) or []
        ):
            opath = f"join.output_fields[{i}]"
            if not isinstance(entry, dict):
                self.problem(opath, "must be an object {source_id, name, output_name}")
                continue
            sid, field = entry.get("source_id"), entry.get("name")
            side = next((k for k, v in sides.items() if v["source"] == sid), None)
            if side is None:
                self.problem(f"{opath}.source_id", f"unknown source_id {sid!r}")
                continue
            if not isinstance(field, str) or field not in schemas.get(sid, {}):
                self.problem(
                    f"{opath}.name",
                    f"join output field {field!r} not found in schema for source {sid!r}",
                )
                continue
            as_ = self.text(entry, "output_name", f"{opath}.output_name") or field
            output.append({"from": side, "field": field, **({"as": as_} if as_ != field else {})})
            out_fields[as_] = _Field(as_, schemas[sid][field].type, opath)
        self.fail_if_problems()
        sink = self.v3_sink(out_fields, f"{name}-join")
        self.fail_if_problems()
        assert sink is not None
        return self.join_document(name, ours, sides, output, sink, create_table)

    def join_document(
        self,
        name: str,
        sources: dict[str, dict[str, Any]],
        sides: dict[str, dict[str, Any]],
        output: list[dict[str, Any]],
        sink: dict[str, Any],
        create_table: bool,
    ) -> dict[str, Any]:
        """Our join pipeline: the left source first, an inner join, the sink; with the notes."""
        document: dict[str, Any] = {
            "version": 1,
            "name": name,
            "sources": [sources[sides["left"]["source"]], sources[sides["right"]["source"]]],
            "join": {
                "type": "inner",
                "left": sides["left"],
                "right": sides["right"],
                "output": output,
            },
            "sink": {},
        }
        for key, value in sink.items():
            document["sink"][key] = value
            if key == "table":
                document["sink"]["create_table"] = create_table
        self.notes.append(
            "GlassFlow's join is inner, on processing time, keeping the latest right record per "
            "key; streamsift joins every matching pair within the windows, on each source's Kafka "
            "timestamps (set schema.event_time to use a payload field); type: left keeps orders "
            "without a match"
        )
        self.add_notes(any("dedup" in s for s in sources.values()), create_table)
        return document

    def v3_sink(self, fields: dict[str, _Field], source_id: str) -> dict[str, Any] | None:
        sink = self.obj(self.doc, "sink", "sink", required=True)
        if sink is None:
            return None
        kind = sink.get("type")
        if kind is not None and str(kind).strip().lower() != "clickhouse":
            self.problem("sink.type", f"unsupported sink type {kind!r}; only clickhouse")
        conn = self.obj(sink, "connection_params", "sink.connection_params", required=True)
        raw = self.array(sink, "mapping", "sink.mapping", required=True)
        columns = []
        for i, entry in enumerate(raw or []):
            path = f"sink.mapping[{i}]"
            if not isinstance(entry, dict):
                self.problem(path, "must be an object {name, column_name, column_type}")
                continue
            columns.append(
                _Column(
                    field=entry.get("name"),
                    column=entry.get("column_name"),
                    type=entry.get("column_type"),
                    path=path,
                    field_key="name",
                    column_key="column_name",
                    type_key="column_type",
                )
            )
        self.origin("sink.mapping", "sink.mapping")
        return self.sink(
            sink,
            "sink",
            conn,
            "sink.connection_params",
            columns,
            fields,
            source_id,
            base64_password=False,
            empty_mapping="sink.mapping",
        )

    # -- v1 and v2

    def legacy_source_and_dedup(
        self,
    ) -> tuple[dict[str, Any], dict[str, _Field], dict[str, Any] | None, str]:
        src = self.obj(self.doc, "source", "source", required=True)
        if src is None:
            self.fail_if_problems()
        assert src is not None
        topics = self.array(src, "topics", "source.topics", required=True)
        if topics is not None and not topics:
            self.problem("source.topics", "at least one topic is required")
        topic = topics[0] if topics else None
        if not isinstance(topic, dict):
            if topic is not None:
                self.problem("source.topics[0]", "must be an object")
            self.fail_if_problems()
            return {}, {}, None, ""
        tpath = "source.topics[0]"
        conn = self.obj(src, "connection_params", "source.connection_params", required=True)
        topic_id = str(topic.get("id") or topic.get("name") or "").strip()
        source = self.kafka_source(conn, "source.connection_params", topic, tpath, "name", None)
        raw, paths, container = self.legacy_schema_fields(topic, tpath, topic_id)
        schema, fields = self.schema(raw, paths, container)
        source["schema"] = schema

        dedup = None
        holder, hpath = topic.get("deduplication"), f"{tpath}.deduplication"
        if not isinstance(holder, dict) or not holder.get("enabled"):
            holder, hpath = src.get("deduplication"), "source.deduplication"
        if isinstance(holder, dict) and holder.get("enabled"):
            key_name = "key" if not _blank(holder.get("key")) else "id_field"
            key = self.text(
                holder,
                key_name,
                f"{hpath}.{key_name}",
                empty="deduplication key (id_field) cannot be empty",
            )
            dedup = self.dedup(
                key, f"{hpath}.{key_name}", holder, "time_window", hpath, fields, topic_id
            )
        return source, fields, dedup, topic_id

    def legacy_expressions(
        self, fields: dict[str, _Field], topic_id: str, extras: dict[str, Any]
    ) -> None:
        """v2's top-level `filter` and `stateless_transformation`, on the pipeline's one topic."""
        filt = self.obj(self.doc, "filter", "filter", required=False)
        if filt is not None and self.flag(filt, "enabled", "filter.enabled"):
            self.filter_expression(filt, "filter", extras)
        path = "stateless_transformation"
        block = self.obj(self.doc, path, path, required=False)
        if block is None or not self.flag(block, "enabled", f"{path}.enabled"):
            return
        kind = self.text(block, "type", f"{path}.type")
        if kind is not None and kind.lower() != "expr_lang_transform":
            self.problem(
                f"{path}.type",
                f"unsupported stateless transformation type {kind!r}; only expr_lang_transform",
            )
        ref = self.text(block, "source_id", f"{path}.source_id")
        if ref is not None and ref != topic_id:
            self.problem(
                f"{path}.source_id",
                f"{ref!r} is not a source of this pipeline (sources: {topic_id!r})",
            )
        config = self.obj(block, "config", f"{path}.config", required=True) or {}
        entries = self.array(config, "transform", f"{path}.config.transform", required=True)
        self.stateless_entries(entries or [], f"{path}.config.transform", fields, extras)

    def legacy_join(self, name: str, create_table: bool) -> dict[str, Any]:
        """A GlassFlow v1/v2 join: two topics (each with its own dedup) and `join.sources[]`,
        one `orientation: left`, one `right`. The join's output fields are the v2 top-level
        `schema.fields` (named by their `column_name`, else their `name`) or the v1
        `sink.table_mapping` entries (named by their `column_name`)."""
        src = self.obj(self.doc, "source", "source", required=True)
        if src is None:
            self.fail_if_problems()
        assert src is not None
        topics = self.array(src, "topics", "source.topics", required=True) or []
        if len(topics) != 2:
            self.problem("source.topics", "join.enabled=true requires exactly two kafka sources")
            self.fail_if_problems()
        conn = self.obj(src, "connection_params", "source.connection_params", required=True)
        ids = [
            str(t.get("id") or t.get("name") or "").strip() if isinstance(t, dict) else ""
            for t in topics
        ]
        if ids[0] and ids[0] == ids[1]:
            self.problem(
                "source.topics[1].name", f"both topics are {ids[0]!r}; a join reads two topics"
            )
        self.check_join_schema_sources(ids)
        holder = src.get("deduplication")
        if isinstance(holder, dict) and holder.get("enabled"):
            self.problem(
                "source.deduplication",
                "with two topics, deduplication goes on each topic (source.topics[i].deduplication)",
            )
        ours: dict[str, dict[str, Any]] = {}
        schemas: dict[str, dict[str, _Field]] = {}
        origins: dict[str, dict[str, str]] = {}
        for i, topic in enumerate(topics):
            tpath = f"source.topics[{i}]"
            if not isinstance(topic, dict):
                self.problem(tpath, "must be an object")
                continue
            sid = ids[i]
            source = self.kafka_source(
                conn, "source.connection_params", topic, tpath, "name", sid or None
            )
            raw, paths, container = self.legacy_schema_fields(topic, tpath, sid, joined=True)
            source["schema"], fields = self.schema(raw, paths, container)
            holder, hpath = topic.get("deduplication"), f"{tpath}.deduplication"
            if isinstance(holder, dict) and holder.get("enabled"):
                key_name = "key" if not _blank(holder.get("key")) else "id_field"
                key = self.text(
                    holder,
                    key_name,
                    f"{hpath}.{key_name}",
                    empty="deduplication key (id_field) cannot be empty",
                )
                dedup = self.dedup(
                    key, f"{hpath}.{key_name}", holder, "time_window", hpath, fields, sid
                )
                if dedup is not None:
                    source["dedup"] = dedup
            origins[sid] = self.take_source_origins()
            if sid:
                ours[sid], schemas[sid] = source, fields
        sides = self.legacy_join_sides(ours, schemas)
        for position, side in enumerate(("left", "right")):  # our sources[0] is the left one
            for key, theirs in origins.get(sides.get(side, {}).get("source") or "", {}).items():
                self.origin(f"sources[{position}]{key}", theirs)
        output, out_fields, columns, container = self.legacy_join_output(sides, schemas)
        self.fail_if_problems()
        sink = self.obj(self.doc, "sink", "sink", required=True)
        if sink is not None:
            conn, conn_path = self.legacy_sink_connection(sink)
            self.origin("sink.mapping", container)
            sink = self.sink(
                sink,
                "sink",
                conn,
                conn_path,
                columns,
                out_fields,
                f"{name}-join",
                base64_password=True,
                empty_mapping=container,
            )
        self.fail_if_problems()
        assert sink is not None
        return self.join_document(name, ours, sides, output, sink, create_table)

    def take_source_origins(self) -> dict[str, str]:
        """Remove and return the origins of the source just read (`source…` and `dedup…`),
        keyed by what follows `source` (`.topic`, `.dedup.key`, ...), to file under its index
        among our `sources` once the join's orientation is known."""
        taken: dict[str, str] = {}
        for key in list(self.origins):
            if key == "source" or key.startswith("source."):
                taken[key[len("source") :]] = self.origins.pop(key)
            elif key == "dedup" or key.startswith("dedup."):
                taken[f".{key}"] = self.origins.pop(key)
        return taken

    def check_join_schema_sources(self, ids: list[str]) -> None:
        """Each v2 top-level schema field of a join names one of the two topics."""
        top = self.doc.get("schema")
        if not isinstance(top, dict) or not isinstance(top.get("fields"), list):
            return
        known = ", ".join(repr(i) for i in ids)
        for j, entry in enumerate(top["fields"]):
            if not isinstance(entry, dict):
                continue  # reported where the schema is read
            ref = entry.get("source_id")
            if _blank(ref):
                self.problem(
                    f"schema.fields[{j}].source_id",
                    f"source_id cannot be empty with a join: name the topic ({known})",
                )
            elif not isinstance(ref, str) or ref not in ids:
                self.problem(
                    f"schema.fields[{j}].source_id",
                    f"{ref!r} is not a source of this pipeline (sources: {known})",
                )

    def legacy_join_sides(
        self, ours: dict[str, dict[str, Any]], schemas: dict[str, dict[str, _Field]]
    ) -> dict[str, dict[str, Any]]:
        """Our `join.left` and `join.right` from v1/v2 `join.sources[]` (by `orientation`)."""
        join = self.doc["join"]
        kind = str(join.get("type") or "temporal").strip().lower()
        if kind != "temporal":
            self.problem("join.type", "invalid join type; only temporal joins are supported")
        entries = self.array(join, "sources", "join.sources", required=True) or []
        known = ", ".join(repr(i) for i in ours)
        sides: dict[str, dict[str, Any]] = {}
        oriented: list[str] = []
        for i, spec in enumerate(entries):
            jpath = f"join.sources[{i}]"
            if not isinstance(spec, dict):
                self.problem(
                    jpath, "must be an object {source_id, join_key, time_window, orientation}"
                )
                continue
            orientation = str(spec.get("orientation") or "").strip().lower()
            if orientation not in ("left", "right"):
                self.problem(
                    f"{jpath}.orientation",
                    f"must be left or right, got {spec.get('orientation')!r}",
                )
                continue
            oriented.append(orientation)
            if orientation in sides:
                continue  # reported below
            sid = self.text(spec, "source_id", f"{jpath}.source_id", empty="source_id is empty")
            # GlassFlow reads join_key; a 2026-03 variant of v2 wrote key.
            key_name = "key" if _blank(spec.get("join_key")) and "key" in spec else "join_key"
            key = self.text(spec, key_name, f"{jpath}.{key_name}", empty="join key cannot be empty")
            window = self.duration(spec, "time_window", f"{jpath}.time_window")
            if sid is not None and sid not in ours:
                self.problem(f"{jpath}.source_id", f"unknown source_id {sid!r} (sources: {known})")
            elif sid is not None and key is not None:
                field = schemas[sid].get(key)
                if field is None:
                    self.problem(
                        f"{jpath}.{key_name}",
                        f"join key {key!r} not found in schema_fields for source {sid!r}",
                    )
                elif not _blank(spec.get("join_key_type")):  # v1 repeats the key's type
                    declared = self.field_type(spec["join_key_type"], f"{jpath}.join_key_type")
                    if declared is not None and field.type is not None and declared != field.type:
                        self.problem(
                            f"{jpath}.join_key_type",
                            f"{spec['join_key_type']!r} does not match the type of {key!r} in "
                            f"the schema of {sid!r} ({field.type.value})",
                        )
            if spec.get("time_window") is None:
                self.problem(f"{jpath}.time_window", "required field is missing")
            elif window is not None and window <= timedelta(0):
                self.problem(f"{jpath}.time_window", "time_window must be greater than zero")
            elif window is not None and window > MAX_DEDUP_WINDOW:
                self.problem(
                    f"{jpath}.time_window", f"{format_duration(window)} exceeds the 7d maximum"
                )
            self.origin(f"join.{orientation}", jpath)
            self.origin(f"join.{orientation}.source", f"{jpath}.source_id")
            self.origin(f"join.{orientation}.key", f"{jpath}.{key_name}")
            self.origin(f"join.{orientation}.time_window", f"{jpath}.time_window")
            sides[orientation] = {
                "source": sid,
                "key": key,
                "time_window": format_duration(window) if window else None,
            }
        if sorted(oriented) != ["left", "right"]:
            self.problem(
                "join.sources",
                "join requires exactly one left and one right source, found "
                f"{oriented.count('left')} left and {oriented.count('right')} right",
            )
        elif sides["left"]["source"] is not None and (
            sides["left"]["source"] == sides["right"]["source"]
        ):
            self.problem("join.sources", "the left and the right source must differ")
        return sides

    def legacy_join_output(
        self, sides: dict[str, dict[str, Any]], schemas: dict[str, dict[str, _Field]]
    ) -> tuple[list[dict[str, Any]], dict[str, _Field], list[_Column], str]:
        """The join output fields and the sink columns of a v1/v2 join.

        v2 (top-level `schema.fields`): every schema field is an output field, named by its
        `column_name` if it has one (as GlassFlow's migration does); the sink maps
        `sink.mapping` (by output name) or else the fields with a `column_name`. v1: each
        `sink.table_mapping` entry is an output field named by its `column_name`, and a column.
        """
        side_of = {v["source"]: k for k, v in sides.items() if v.get("source")}
        known = ", ".join(repr(i) for i in schemas)
        output: list[dict[str, Any]] = []
        out_fields: dict[str, _Field] = {}
        columns: list[_Column] = []

        def add(sid: object, field: str, as_: str, path: str, field_key: str) -> bool:
            side = side_of.get(sid) if isinstance(sid, str) else None
            if side is None or sid not in schemas:
                return False  # reported with the sides or the schema
            if field not in schemas[sid]:
                self.problem(
                    f"{path}.{field_key}",
                    f"join output field {field!r} not found in schema for source {sid!r}",
                )
                return False
            if as_ in out_fields:
                self.problem(
                    path,
                    f"join output name {as_!r} is used twice (also {out_fields[as_].path}); "
                    "give one of them another column_name",
                )
                return False
            self.origin(f"join.output[{len(output)}]", path)
            output.append({"from": side, "field": field, **({"as": as_} if as_ != field else {})})
            out_fields[as_] = _Field(as_, schemas[sid][field].type, path)
            return True

        sink = self.doc.get("sink") if isinstance(self.doc.get("sink"), dict) else {}
        top = self.doc.get("schema")
        if isinstance(top, dict) and isinstance(top.get("fields"), list):
            entries = top["fields"]
            for j, entry in enumerate(entries):
                if not isinstance(entry, dict) or _blank(entry.get("name")):
                    continue  # reported where the schema is read
                name = str(entry["name"]).strip()
                column = entry.get("column_name")
                as_ = column.strip() if isinstance(column, str) and column.strip() else name
                add(entry.get("source_id"), name, as_, f"schema.fields[{j}]", "name")
            if isinstance(sink.get("mapping"), list) and sink["mapping"]:
                for i, entry in enumerate(sink["mapping"]):
                    path = f"sink.mapping[{i}]"
                    if not isinstance(entry, dict):
                        self.problem(path, "must be an object {name, column_name, column_type}")
                        continue
                    columns.append(
                        _Column(
                            entry.get("name"),
                            entry.get("column_name"),
                            entry.get("column_type"),
                            path,
                            "name",
                            "column_name",
                            "column_type",
                        )
                    )
                return output, out_fields, columns, "sink.mapping"
            for j, entry in enumerate(entries):
                if isinstance(entry, dict) and not _blank(entry.get("column_name")):
                    column = entry["column_name"]
                    columns.append(
                        _Column(
                            column.strip() if isinstance(column, str) else column,
                            column,
                            entry.get("column_type"),
                            f"schema.fields[{j}]",
                            "column_name",
                            "column_name",
                            "column_type",
                        )
                    )
            return output, out_fields, columns, "schema.fields"
        mapping = sink.get("table_mapping")
        for i, entry in enumerate(mapping if isinstance(mapping, list) else []):
            path = f"sink.table_mapping[{i}]"
            if not isinstance(entry, dict):
                self.problem(
                    path, "must be an object {source_id, field_name, column_name, column_type}"
                )
                continue
            sid, field, column = (entry.get(k) for k in ("source_id", "field_name", "column_name"))
            if _blank(sid):
                self.problem(
                    f"{path}.source_id",
                    f"source_id cannot be empty with a join: name the topic ({known})",
                )
                continue
            if not isinstance(sid, str) or sid not in schemas:
                self.problem(
                    f"{path}.source_id",
                    f"{sid!r} is not a source of this pipeline (sources: {known})",
                )
                continue
            if _blank(field) or _blank(column):
                self.problem(
                    f"{path}.{'field_name' if _blank(field) else 'column_name'}",
                    f"{'field' if _blank(field) else 'column'} name cannot be empty",
                )
                continue
            if add(sid, str(field).strip(), str(column).strip(), path, "field_name"):
                columns.append(
                    _Column(
                        str(column).strip(),
                        column,
                        entry.get("column_type"),
                        path,
                        "field_name",
                        "column_name",
                        "column_type",
                    )
                )
        return output, out_fields, columns, "sink.table_mapping"

    def legacy_schema_fields(
        self, topic: dict[str, Any], tpath: str, topic_id: str, *, joined: bool = False
    ) -> tuple[list[Any] | None, list[str], str]:
        """Schema entries: v3-style `schema_fields`, v2 top-level `schema.fields`, or v1 `topic.schema`.

        With `joined`, the v2 top-level entries are those whose `source_id` is `topic_id`
        (the others are checked once, by `check_join_schema_sources`).
        """
        if isinstance(topic.get("schema_fields"), list):
            raw = topic["schema_fields"]
            return (
                raw,
                [f"{tpath}.schema_fields[{i}]" for i in range(len(raw))],
                f"{tpath}.schema_fields",
            )
        top = self.doc.get("schema")
        if isinstance(top, dict) and isinstance(top.get("fields"), list) and joined:
            raw, paths = [], []
            for i, entry in enumerate(top["fields"]):
                if isinstance(entry, dict) and entry.get("source_id") == topic_id:
                    raw.append(entry)
                    paths.append(f"schema.fields[{i}]")
            if not raw:
                self.problem(
                    "schema.fields",
                    f"no field has source_id {topic_id!r}: declare the fields of both topics",
                )
                return None, [], "schema.fields"
            return raw, paths, "schema.fields"
        if isinstance(top, dict) and isinstance(top.get("fields"), list):
            raw, paths = [], []
            for i, entry in enumerate(top["fields"]):
                ref = entry.get("source_id") if isinstance(entry, dict) else None
                if not _blank(ref) and ref != topic_id:
                    self.problem(
                        f"schema.fields[{i}].source_id",
                        f"{ref!r} is not a source of this pipeline (sources: {topic_id!r})",
                    )
                raw.append(entry)
                paths.append(f"schema.fields[{i}]")
            return raw, paths, "schema.fields"
        inner = topic.get("schema")
        if isinstance(inner, dict) and isinstance(inner.get("fields"), list):
            kind = inner.get("type")
            if kind not in (None, "") and str(kind).strip().lower() != "json":
                self.problem(
                    f"{tpath}.schema.type", f"{kind!r} schemas are not supported; only json"
                )
            raw = inner["fields"]
            return (
                raw,
                [f"{tpath}.schema.fields[{i}]" for i in range(len(raw))],
                f"{tpath}.schema.fields",
            )
        where = "schema.fields" if self.version == "v2" else f"{tpath}.schema.fields"
        self.problem(
            where,
            "required field is missing: streamsift needs the message schema (field names and types)",
        )
        return None, [], where

    def legacy_sink_connection(self, sink: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The sink type check, and where the ClickHouse connection keys are (nested or flat)."""
        kind = sink.get("type")
        if kind is not None and str(kind).strip().lower() != "clickhouse":
            self.problem("sink.type", f"unsupported sink type {kind!r}; only clickhouse")
        if isinstance(sink.get("connection_params"), dict):
            return sink["connection_params"], "sink.connection_params"
        return sink, "sink"

    def legacy_sink(self, fields: dict[str, _Field], topic_id: str) -> dict[str, Any] | None:
        sink = self.obj(self.doc, "sink", "sink", required=True)
        if sink is None:
            return None
        conn, conn_path = self.legacy_sink_connection(sink)
        columns: list[_Column] = []
        if isinstance(sink.get("mapping"), list) and sink["mapping"]:
            container = "sink.mapping"
            for i, entry in enumerate(sink["mapping"]):
                if isinstance(entry, dict):
                    columns.append(
                        _Column(
                            entry.get("name"),
                            entry.get("column_name"),
                            entry.get("column_type"),
                            f"sink.mapping[{i}]",
                            "name",
                            "column_name",
                            "column_type",
                        )
                    )
                else:
                    self.problem(
                        f"sink.mapping[{i}]", "must be an object {name, column_name, column_type}"
                    )
        elif isinstance(sink.get("table_mapping"), list) and sink["table_mapping"]:
            container = "sink.table_mapping"
            for i, entry in enumerate(sink["table_mapping"]):
                if isinstance(entry, dict):
                    columns.append(
                        _Column(
                            entry.get("field_name"),
                            entry.get("column_name"),
                            entry.get("column_type"),
                            f"sink.table_mapping[{i}]",
                            "field_name",
                            "column_name",
                            "column_type",
                        )
                    )
                else:
                    self.problem(
                        f"sink.table_mapping[{i}]",
                        "must be an object {field_name, column_name, column_type}",
                    )
        else:
            container = "schema.fields" if self.version == "v2" else "sink.table_mapping"
            top = self.doc.get("schema")
            entries = top.get("fields") if isinstance(top, dict) else None
            for i, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, dict) and not _blank(entry.get("column_name")):
                    columns.append(
                        _Column(
                            entry.get("name"),
                            entry.get("column_name"),
                            entry.get("column_type"),
                            f"schema.fields[{i}]",
                            "name",
                            "column_name",
                            "column_type",
                        )
                    )
        self.origin("sink.mapping", container)
        return self.sink(
            sink,
            "sink",
            conn,
            conn_path,
            columns,
            fields,
            topic_id,
            base64_password=True,
            empty_mapping=container,
        )

    # -- sink pieces shared by all versions

    def sink(
        self,
        sink: dict[str, Any],
        path: str,
        conn: dict[str, Any] | None,
        conn_path: str,
        columns: list[_Column],
        fields: dict[str, _Field],
        source_id: str,
        *,
        base64_password: bool,
        empty_mapping: str,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "clickhouse": self.clickhouse(conn, conn_path, base64_password) if conn else {}
        }
        self.origin("sink", path)
        self.origin("sink.clickhouse", conn_path)
        table = self.text(sink, "table", f"{path}.table", empty="clickhouse table cannot be empty")
        if table is not None:
            out["table"] = table
        mapping = []
        for i, col in enumerate(columns):
            entry = self.column(col, fields, source_id)
            self.origin(f"sink.mapping[{i}]", col.path)
            self.origin(f"sink.mapping[{i}].field", f"{col.path}.{col.field_key}")
            self.origin(f"sink.mapping[{i}].column", f"{col.path}.{col.column_key}")
            self.origin(f"sink.mapping[{i}].type", f"{col.path}.{col.type_key}")
            if entry is not None:
                mapping.append(entry)
        if not columns:
            self.problem(
                empty_mapping,
                "no column mapping found: map at least one field to a ClickHouse column",
            )
        out["mapping"] = mapping
        size = sink.get("max_batch_size")
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
                self.problem(
                    f"{path}.max_batch_size", "clickhouse max_batch_size must be greater than 0"
                )
            else:
                out["max_batch_size"] = size
        delay = self.duration(sink, "max_delay_time", f"{path}.max_delay_time")
        if delay is not None and delay < timedelta(0):
            self.problem(f"{path}.max_delay_time", "max_delay_time cannot be negative")
        elif delay:
            out["max_delay_time"] = format_duration(delay)
        return out

    def clickhouse(self, conn: dict[str, Any], path: str, base64_password: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        host = self.text(conn, "host", f"{path}.host", empty="clickhouse host cannot be empty")
        if host is not None:
            out["host"] = host
        secure = self.flag(conn, "secure", f"{path}.secure")
        native = self.text(conn, "port", f"{path}.port")
        http = self.text(conn, "http_port", f"{path}.http_port")
        if http is not None:
            port_path = f"{path}.http_port"
            if native is not None and native != http:
                self.notes.append(
                    f"sink.clickhouse.port is ClickHouse's HTTP port ({http}, GlassFlow's http_port); "
                    f"GlassFlow's port {native} is the native protocol port, which streamsift does not use"
                )
        elif native in _HTTP_PORTS:
            http, port_path = native, f"{path}.port"
        else:
            http = str(CLICKHOUSE_HTTPS_PORT if secure else CLICKHOUSE_HTTP_PORT)
            port_path = f"{path}.http_port"
            self.notes.append(
                f"GlassFlow's port {native!r} is ClickHouse's native protocol port; streamsift speaks "
                f"HTTP and, with no http_port given, uses {http}. Check sink.clickhouse.port"
            )
        self.origin("sink.clickhouse.port", port_path)
        if not http.isdigit() or not 1 <= int(http) <= 65535:
            self.problem(port_path, f"{http!r} is not a port number")
        else:
            out["port"] = int(http)
        out["database"] = self.text(conn, "database", f"{path}.database") or "default"
        out["username"] = self.text(conn, "username", f"{path}.username") or "default"
        password = conn.get("password")
        if password is not None and not isinstance(password, str):
            self.problem(f"{path}.password", f"must be a string, got {type(password).__name__}")
        elif password:
            if base64_password:
                decoded = _decode_base64_password(password)
                if decoded == password:
                    self.notes.append(
                        "the ClickHouse password is not base64 as GlassFlow v1/v2 expect: kept as written"
                    )
                password = decoded
            out["password"] = password
        if secure:
            out["secure"] = True
        skip = (
            "skip_certificate_verification"
            if "skip_certificate_verification" in conn
            else "skip_certificate_check"
        )
        if self.flag(conn, skip, f"{path}.{skip}"):
            out["skip_certificate_verification"] = True
        self.origin("sink.clickhouse.skip_certificate_verification", f"{path}.{skip}")
        return out

    def column(
        self, col: _Column, fields: dict[str, _Field], source_id: str
    ) -> dict[str, str] | None:
        """One mapping entry, checked against the schema and our type compatibility rules."""
        fpath, cpath, tpath = (
            f"{col.path}.{k}" for k in (col.field_key, col.column_key, col.type_key)
        )
        ok = True
        field = None
        if _blank(col.field) or not isinstance(col.field, str):
            self.problem(fpath, "field name cannot be empty")
            ok = False
        else:
            field = fields.get(col.field.strip())
            if field is None and fields:
                where = f" for source_id {source_id!r}" if source_id else ""
                self.problem(fpath, f"mapping field {col.field!r} not found in schema{where}")
                ok = False
        if _blank(col.column) or not isinstance(col.column, str):
            self.problem(cpath, "column name cannot be empty")
            ok = False
        ch = self.column_type(col.type, tpath)
        if ch is None:
            return None
        if field is not None and field.type is not None:
            problem = check_compatible(field.type, ch)
            if problem:
                self.problem(tpath, problem)
                ok = False
        if not ok:
            return None
        assert isinstance(col.field, str) and isinstance(col.column, str)
        return {"field": col.field.strip(), "column": col.column.strip(), "type": str(ch)}

    def column_type(self, value: object, path: str) -> CHType | None:
        """A ClickHouse type; the lowercase names of early GlassFlow files are repaired, with a note."""
        if not isinstance(value, str) or not value.strip():
            self.problem(path, "column type cannot be empty")
            return None
        try:
            return parse_clickhouse_type(value)
        except ValueError as exc:
            repaired = _CH_WORD.sub(lambda m: _CH_NAMES.get(m.group(0).lower(), m.group(0)), value)
            if repaired != value:
                try:
                    result = parse_clickhouse_type(repaired)
                except ValueError:
                    pass
                else:
                    self.notes.append(f"{path}: ClickHouse type {value!r} read as {str(result)!r}")
                    return result
            self.problem(path, f"unsupported ClickHouse column type {value!r}: {exc}")
            return None
