"""The pipeline document: which documents are refused, with which message, and the parsers behind them."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamsift.config import (
    CHType,
    ConfigError,
    FieldType,
    Pipeline,
    format_duration,
    parse_clickhouse_type,
    parse_duration,
    parse_pipeline,
)
from streamsift.config.types import check_compatible, parse_field_type
from support.pipeline_docs import fields, mapping, pipeline_doc

BASE: dict[str, Any] = pipeline_doc(
    version=1,
    name="users-dedup",
    topic="users",
    fields=fields(
        ("event_id", "string"),
        ("user.id", "string"),
        ("active", "bool"),
        ("created_at", "timestamp"),
    ),
    event_time="created_at",
    dedup={"key": "event_id", "time_window": "1h"},
    clickhouse={"path": ".streamsift/clickhouse"},
    mapping=mapping(
        ("event_id", "event_id", "UUID"),
        ("user.id", "user_id", "String"),
        ("active", "active", "Bool"),
        ("created_at", "created_at", "DateTime64(3)"),
    ),
)

DELETE = object()


def changed(path: str, value: object) -> dict[str, Any]:
    """A deep copy of BASE with the value at a dotted path (`sink.mapping[0].type`) replaced."""
    doc = copy.deepcopy(BASE)
    parts: list[str | int] = [
        int(p) if p.isdigit() else p for p in path.replace("]", "").replace("[", ".").split(".")
    ]
    node: Any = doc
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    if value is DELETE:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return doc


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_pipeline(doc)
    return info.value.problems


# ---------------------------------------------------------------------------- invalid documents

INVALID = [
    # durations and the dedup window
    ("dedup.time_window", "9d", "dedup.time_window: 9d exceeds the 7d maximum"),
    ("dedup.time_window", "168h1s", "dedup.time_window: 7d1s exceeds the 7d maximum"),
    ("dedup.time_window", "0s", "dedup.time_window: must be greater than zero"),
    (
        "dedup.time_window",
        "soon",
        "dedup.time_window: 'soon' is not a duration: use a number and a unit (ms, s, m, h, d), "
        "e.g. '30s', '1h', '7d'",
    ),
    (
        "dedup.time_window",
        "-1h",
        "dedup.time_window: '-1h' is not a duration: use a number and a unit (ms, s, m, h, d), "
        "e.g. '30s', '1h', '7d'",
    ),
    (
        "dedup.time_window",
        True,
        "dedup.time_window: expected a duration such as '30s', '1h' or '7d', got a boolean",
    ),
    (  # beyond what timedelta holds: a clean error with the limit, not an OverflowError
        "sink.max_delay_time",
        8.64e13,
        "sink.max_delay_time: 86400000000000.0 is too long a duration: the limit is 36500d "
        "(100 years)",
    ),
    (
        "sink.max_delay_time",
        "1 hour",
        "sink.max_delay_time: '1 hour' is not a duration: use a number and a unit (ms, s, m, h, d), "
        "e.g. '30s', '1h', '7d'",
    ),
    # unknown and missing fields
    ("sink.batch", 5, "sink.batch: unknown field (check its spelling and docs/configuration.md)"),
    (
        "source.group",
        "g",
        "source.group: unknown field (check its spelling and docs/configuration.md)",
    ),
    ("source.topic", DELETE, "source.topic: required field is missing"),
    ("sink.table", DELETE, "sink.table: required field is missing"),
    ("dedup.key", DELETE, "dedup.key: required field is missing"),
    ("version", 2, "version: Input should be 1"),
    (
        "name",
        "bad name",
        "name: 'bad name' is not a pipeline name: letters, digits, _ and -, at most 100",
    ),
    # field types and names
    (
        "source.schema.fields[0].type",
        "uuid",
        "source.schema.fields[0].type: unknown field type 'uuid'; "
        "use one of: string, int, float, bool, timestamp, array, map, json",
    ),
    (
        "source.schema.fields[0].type",
        3,
        "source.schema.fields[0].type: unknown field type 3; "
        "use one of: string, int, float, bool, timestamp, array, map, json",
    ),
    (
        "source.schema.fields[0].name",
        "1bad",
        "source.schema.fields[0].name: '1bad' is not a field path: use names of letters, digits "
        "and _ joined by dots, e.g. user.id",
    ),
    (
        "source.schema.fields[1].name",
        "event_id",
        "source.schema: field names must be unique; repeated: event_id",
    ),
    (
        "source.schema.fields[1].name",
        "event_id.x",
        "source.schema: field 'event_id' is an object holding field 'event_id.x'; declare only one",
    ),
    (
        "source.schema.fields",
        [],
        "source.schema: fields: list at least one field, or take them from the registry with "
        "from_registry",
    ),
    # event time
    (
        "source.schema.event_time",
        "ts",
        "source.schema: event_time names 'ts', which is not a schema field",
    ),
    (
        "source.schema.event_time",
        "event_id",
        "source.schema: event_time field 'event_id' must be of type timestamp "
        "(or int/float unix seconds), not string",
    ),
    # ClickHouse column types
    ("sink.mapping[0].type", "string", "sink.mapping[0].type: unknown ClickHouse type 'string'"),
    (
        "sink.mapping[0].type",
        "Nullable(String",
        "sink.mapping[0].type: unexpected end of ClickHouse type 'Nullable(String'",
    ),
    (
        "sink.mapping[0].type",
        "Decimal(10, 2, 1)",
        "sink.mapping[0].type: Decimal takes precision and scale: Decimal(18, 4), "
        "got Decimal(10, 2, 1)",
    ),
    (
        "sink.mapping[0].type",
        "Map(String)",
        "sink.mapping[0].type: Map takes 2 type argument(s): Map(String)",
    ),
    (
        "sink.mapping[0].type",
        "Bool(1)",
        "sink.mapping[0].type: ClickHouse type 'Bool' takes no arguments, got Bool(...)",
    ),
    (
        "sink.mapping[0].type",
        "",
        "sink.mapping[0].type: a ClickHouse column type is required, e.g. String, UInt64, DateTime64(3)",
    ),
    # mapping against the schema
    (
        "sink.mapping[2].type",
        "UUID",
        "sink.mapping[2].type: field 'active' (bool) cannot go into column 'active' (UUID) "
        "(a bool field can go into: Bool, Int8, String, UInt8)",
    ),
    (
        "sink.mapping[3].type",
        "UUID",
        "sink.mapping[3].type: field 'created_at' (timestamp) cannot go into column 'created_at' "
        "(UUID) (a timestamp field can go into: Date, Date32, DateTime, DateTime64, String)",
    ),
    (
        "sink.mapping[0].field",
        "nope",
        "sink.mapping[0].field: 'nope' is not a field of source.schema",
    ),
    (
        "sink.mapping[0].column",
        "user-id",
        "sink.mapping[0].column: 'user-id' is not a column name (letters, digits, _; dots join "
        "the parts of a Nested column, e.g. Events.Timestamp)",
    ),
    (
        "sink.mapping[1].column",
        "event_id",
        "sink: mapping writes column(s) event_id more than once",
    ),
    ("sink.mapping", [], "sink.mapping: Tuple should have at least 1 item after validation, not 0"),
    ("sink.order_by", ["nope"], "sink: order_by names 'nope', which is not a mapped column"),
    (
        "sink.table",
        "my-table",
        "sink.table: 'my-table' is not a plain table name (letters, digits, _)",
    ),
    ("sink.max_batch_size", 0, "sink.max_batch_size: Input should be greater than 0"),
    (
        "sink.on_missing_dedup_window",
        "ignore",
        "sink.on_missing_dedup_window: Input should be 'set' or 'refuse'",
    ),
    # dedup
    ("dedup.key", "nope", "dedup.key: 'nope' is not a field of source.schema"),
    ("dedup.key", ["event_id", "nope"], "dedup.key: 'nope' is not a field of source.schema"),
    ("dedup.mode", "newest", "dedup.mode: Input should be 'first', 'last' or 'exact'"),
    # Kafka security
    (
        "source.security",
        {"protocol": "SASL_SSL", "mechanism": "PLAIN", "username": "u"},
        "source.security: password is required with protocol SASL_SSL",
    ),
    (
        "source.security",
        {"protocol": "SASL_PLAINTEXT", "mechanism": "PLAIN", "username": "u", "password": ""},
        "source.security: password is required with protocol SASL_PLAINTEXT",
    ),
    (
        "source.security",
        {"protocol": "SASL_SSL", "username": "u", "password": "p"},
        "source.security: mechanism is required with protocol SASL_SSL",
    ),
    (
        "source.security",
        {"protocol": "SASL_SSL", "mechanism": "SCRAM-SHA-256", "password": "p"},
        "source.security: username is required with protocol SASL_SSL",
    ),
    (
        "source.security",
        {"protocol": "PLAINTEXT", "mechanism": "PLAIN"},
        "source.security: mechanism PLAIN needs protocol SASL_PLAINTEXT or SASL_SSL",
    ),
    (
        "source.security.mechanism",
        "NTLM",
        "source.security.mechanism: Input should be 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', "
        "'GSSAPI' or 'OAUTHBEARER'",
    ),
    (
        "source.properties",
        {"sasl.username": "x"},
        "source.properties: set sasl.username through the source's own fields, not properties",
    ),
    # Kafka addresses and offsets
    (
        "source.bootstrap_servers",
        "localhost",
        "source.bootstrap_servers: 'localhost' is not host:port",
    ),
    ("source.bootstrap_servers", "kafka:x", "source.bootstrap_servers: 'kafka:x' is not host:port"),
    (
        "source.bootstrap_servers",
        " , ",
        "source.bootstrap_servers: at least one broker address host:port is required",
    ),
    ("source.start_from", "middle", "source.start_from: Input should be 'earliest' or 'latest'"),
    # ClickHouse connection
    (
        "sink.clickhouse",
        {"path": "/tmp/ch", "host": "ch.example.com"},
        "sink.clickhouse: give either path (embedded ClickHouse) or host (a ClickHouse server)",
    ),
    (
        "sink.clickhouse",
        {},
        "sink.clickhouse: give either path (embedded ClickHouse) or host (a ClickHouse server)",
    ),
    (
        "sink.clickhouse",
        {"host": "ch.example.com", "port": 70000},
        "sink.clickhouse.port: Input should be less than or equal to 65535",
    ),
    (
        "sink.clickhouse",
        {"host": "ch.example.com", "database": "my-db"},
        "sink.clickhouse: database 'my-db' is not a plain name",
    ),
    # dead letters and runtime
    ("dlq", {"table": "users"}, "dlq.table: must differ from sink.table"),
    (
        "runtime",
        {"max_rows_per_batch": 0},
        "runtime.max_rows_per_batch: Input should be greater than 0",
    ),
    (
        "runtime",
        {"state_store": "redis"},
        "runtime.state_store: Input should be 'rocksdb' or 'memory'",
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "expected"), INVALID, ids=[f"{c[0]}={c[1]!r}" for c in INVALID]
)
def test_invalid_document_names_the_field(path: str, value: object, expected: str) -> None:
    assert problems(changed(path, value)) == [expected]


def test_every_field_problem_is_reported_at_once() -> None:
    doc = changed("sink.batch", 5)
    doc["source"]["topic"] = ""
    doc["dedup"]["time_window"] = "9d"
    assert sorted(problems(doc)) == [
        "dedup.time_window: 9d exceeds the 7d maximum",
        "sink.batch: unknown field (check its spelling and docs/configuration.md)",
        "source.topic: String should have at least 1 character",
    ]


def test_config_error_message_carries_the_file_name() -> None:
    with pytest.raises(ConfigError) as info:
        parse_pipeline(changed("dedup.time_window", "9d"), source="p.yaml")
    assert str(info.value) == "p.yaml: dedup.time_window: 9d exceeds the 7d maximum"
    assert info.value.source == "p.yaml"


# ---------------------------------------------------------------------------- valid documents

VALID = [
    ("name", "users_dedup-2"),
    ("dedup", DELETE),
    ("dedup.time_window", "7d"),
    ("dedup.time_window", "168h0m0s"),
    ("dedup.time_window", 3600),
    ("dedup.key", ["event_id", "user.id"]),
    ("source.schema.event_time", DELETE),
    ("source.bootstrap_servers", ["k1:9092", " k2:9093 "]),
    ("source.bootstrap_servers", "[::1]:9092"),
    ("source.schema.fields[0].type", "bytes"),
    ("source.schema.fields[2].type", "BOOLEAN"),
    ("sink.mapping[0].type", "LowCardinality(Nullable(String))"),
    ("sink.mapping[2].type", "UInt8"),
    ("sink.mapping[3].type", "DateTime64(6, 'UTC')"),
    ("sink.order_by", "created_at"),
    (
        "sink.clickhouse",
        {"host": "ch.example.com", "port": "8443", "secure": True, "password": "pw"},
    ),
    (
        "source.security",
        {"protocol": "SASL_SSL", "mechanism": "SCRAM-SHA-512", "username": "u", "password": "p"},
    ),
    ("source.security", {"protocol": "SSL", "ca_file": "/etc/ssl/ca.pem"}),
    ("source.properties", {"ssl.ca.pem": "-----BEGIN CERTIFICATE-----\n"}),
    ("dlq", {"table": "bad_users"}),
    ("runtime", {"checkpoint_dir": "/tmp/ckpt", "max_rows_per_batch": 400000}),
    ("runtime", {"state_store": "memory"}),
]


@pytest.mark.parametrize(("path", "value"), VALID, ids=[f"{c[0]}={c[1]!r}" for c in VALID])
def test_valid_document(path: str, value: object) -> None:
    assert isinstance(parse_pipeline(changed(path, value)), Pipeline)


def test_defaults_and_derived_values() -> None:
    p = parse_pipeline(BASE)
    assert p.consumer_group == "streamsift-users-dedup"
    assert p.dlq_table == "users_dlq"
    assert p.dedup is not None and p.dedup.key == ("event_id",)
    assert p.dedup.time_window == timedelta(hours=1)
    assert p.primary_source.start_from.value == "earliest"
    assert p.primary_source.security.protocol.value == "PLAINTEXT"
    assert p.sink.create_table is False
    assert p.sink.max_batch_size == 100_000
    assert p.sink.max_delay_time == timedelta(milliseconds=500)
    assert p.sink.clickhouse.embedded
    assert p.runtime.state_store.value == "rocksdb"
    assert p.primary_source.schema_.field("user.id") is not None
    assert p.primary_source.schema_.fields[1].column == "user__id"
    assert [m.type for m in p.sink.mapping] == ["UUID", "String", "Bool", "DateTime64(3)"]


def test_model_is_frozen() -> None:
    p = parse_pipeline(BASE)
    with pytest.raises(ValueError, match="frozen"):
        p.name = "other"  # type: ignore[misc]


def test_sasl_settings_reach_librdkafka() -> None:
    doc = changed(
        "source.security",
        {
            "protocol": "SASL_SSL",
            "mechanism": "PLAIN",
            "username": "u",
            "password": "p",
            "ca_file": "/ca.pem",
        },
    )
    assert parse_pipeline(doc).primary_source.security.librdkafka() == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "p",
        "ssl.ca.location": "/ca.pem",
    }


def test_secrets_are_hidden_in_repr() -> None:
    doc = changed("sink.clickhouse", {"host": "ch", "password": "hunter2"})
    assert "hunter2" not in repr(parse_pipeline(doc))


# ---------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("500ms", timedelta(milliseconds=500)),
        ("30s", timedelta(seconds=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("7d", timedelta(days=7)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("168h0m0s", timedelta(days=7)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        ("2w", timedelta(weeks=2)),
        (" 30S ", timedelta(seconds=30)),
        ("250us", timedelta(microseconds=250)),
        (90, timedelta(seconds=90)),
        (0.5, timedelta(milliseconds=500)),
        ("36500d", timedelta(days=36_500)),  # the limit itself
        (timedelta(minutes=2), timedelta(minutes=2)),
    ],
)
def test_parse_duration(text: object, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "got an empty string"),
        ("1x", "'1x' is not a duration"),
        ("h", "'h' is not a duration"),
        ("1h 30m", "'1h 30m' is not a duration"),
        ("-5s", "'-5s' is not a duration"),
        (-5, "a duration cannot be negative"),
        (True, "got a boolean"),
        (None, "got NoneType"),
        (float("nan"), "got NaN"),
        (float("inf"), "too long a duration: the limit is 36500d"),
        ("1000000000d", "too long a duration: the limit is 36500d"),
        ("36500d1s", "too long a duration"),
    ],
)
def test_parse_duration_rejects(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(days=7), "7d"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(days=1, hours=12), "1d12h"),
        (timedelta(milliseconds=250), "250ms"),
        (timedelta(seconds=61), "1m1s"),
        (timedelta(0), "0s"),
    ],
)
def test_format_duration(value: timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value


@given(st.integers(min_value=0, max_value=30 * 86_400_000))
def test_format_then_parse_is_exact(ms: int) -> None:
    value = timedelta(milliseconds=ms)
    assert parse_duration(format_duration(value)) == value


# ---------------------------------------------------------------------------- ClickHouse types


@pytest.mark.parametrize(
    ("text", "canonical", "inner", "nullable"),
    [
        ("String", "String", "String", False),
        ("  UInt64 ", "UInt64", "UInt64", False),
        ("Nullable(Int32)", "Nullable(Int32)", "Int32", True),
        ("LowCardinality(Nullable(String))", "LowCardinality(Nullable(String))", "String", True),
        ("LowCardinality(String)", "LowCardinality(String)", "String", False),
        ("Array(String)", "Array(String)", "Array", False),
        ("Map(String,Array(UInt8))", "Map(String, Array(UInt8))", "Map", False),
        ("DateTime", "DateTime", "DateTime", False),
        ("DateTime('UTC')", "DateTime('UTC')", "DateTime", False),
        ("DateTime64(6, 'Europe/Berlin')", "DateTime64(6, 'Europe/Berlin')", "DateTime64", False),
        ("Decimal(18, 4)", "Decimal(18, 4)", "Decimal", False),
        ("Decimal64(4)", "Decimal64(4)", "Decimal64", False),
        ("FixedString(16)", "FixedString(16)", "FixedString", False),
        ("Enum8('a' = 1, 'b' = -2)", "Enum8('a' = 1, 'b' = -2)", "Enum8", False),
        ("Tuple(String, Int64)", "Tuple(String, Int64)", "Tuple", False),
    ],
)
def test_parse_clickhouse_type(text: str, canonical: str, inner: str, nullable: bool) -> None:
    parsed = parse_clickhouse_type(text)
    assert str(parsed) == canonical
    assert parsed.inner.name == inner
    assert parsed.nullable is nullable
    assert parse_clickhouse_type(str(parsed)) == parsed


def test_parse_clickhouse_type_structure() -> None:
    assert parse_clickhouse_type("Map(String, Array(UInt8))") == CHType(
        "Map", (CHType("String"), CHType("Array", (CHType("UInt8"),)))
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("string", "unknown ClickHouse type 'string'"),
        ("Varchr", "unknown ClickHouse type 'Varchr'"),
        ("UUID(4)", "ClickHouse type 'UUID' takes no arguments"),
        ("Array(String", "unexpected end of ClickHouse type"),
        ("Array(String))", "unexpected text after ClickHouse type"),
        ("Array(String, Int8)", r"Array takes 1 type argument\(s\)"),
        ("Nullable()", r"Nullable takes 1 type argument\(s\)"),
        ("FixedString(String)", "FixedString takes a length"),
        ("DateTime64(,)", "expected a type name"),
        ("DateTime64(3, 'UTC', 1)", "bad arguments for DateTime64"),
        ("Decimal32(1, 2)", "Decimal32 takes a scale"),
        ("String;DROP", "cannot read ClickHouse type"),
        ("   ", "a ClickHouse column type is required"),
    ],
)
def test_parse_clickhouse_type_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_clickhouse_type(text)


# ---------------------------------------------------------------------------- field types


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("string", FieldType.STRING),
        ("bytes", FieldType.STRING),
        ("Int64", FieldType.INT),
        ("uint32", FieldType.INT),
        ("integer", FieldType.INT),
        ("float64", FieldType.FLOAT),
        ("number", FieldType.FLOAT),
        ("boolean", FieldType.BOOL),
        ("datetime", FieldType.TIMESTAMP),
        ("object", FieldType.MAP),
        ("list", FieldType.ARRAY),
        ("json", FieldType.JSON),
    ],
)
def test_field_type_aliases(name: str, expected: FieldType) -> None:
    assert parse_field_type(name) is expected


@pytest.mark.parametrize(
    ("field", "column", "ok"),
    [
        (FieldType.STRING, "UUID", True),
        (FieldType.STRING, "LowCardinality(String)", True),
        (FieldType.STRING, "DateTime64(3)", True),
        (FieldType.STRING, "Int64", False),
        (FieldType.INT, "Nullable(Int64)", True),
        (FieldType.INT, "DateTime", True),
        (FieldType.INT, "UUID", False),
        (FieldType.FLOAT, "Decimal(18, 4)", True),
        (FieldType.FLOAT, "Int32", False),
        (FieldType.BOOL, "Bool", True),
        (FieldType.BOOL, "UUID", False),
        (FieldType.TIMESTAMP, "DateTime64(6, 'UTC')", True),
        (FieldType.TIMESTAMP, "Int64", False),
        (FieldType.ARRAY, "Array(String)", True),
        (FieldType.ARRAY, "String", True),
        (FieldType.MAP, "Map(String, String)", True),
        (FieldType.MAP, "Array(String)", False),
        (FieldType.JSON, "String", True),
        (FieldType.JSON, "Int64", False),
    ],
)
def test_field_to_column_compatibility(field: FieldType, column: str, ok: bool) -> None:
    problem = check_compatible(field, parse_clickhouse_type(column))
    assert (problem is None) is ok
    if not ok:
        assert problem is not None and problem.startswith(
            f"a {field.value} field cannot be written to a {column} column"
        )


def test_every_state_store_has_a_spark_provider() -> None:
    from streamsift.config.models import StateStore
    from streamsift.spark_host.session import STATE_STORE_PROVIDERS

    assert set(STATE_STORE_PROVIDERS) == set(StateStore)
