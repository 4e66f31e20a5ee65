"""The ClickHouse sink: ports, TLS, passwords, column mapping, with GlassFlow field paths."""

from __future__ import annotations

from typing import Any

import pytest

from streamsift.config.glassflow import convert_glassflow, import_glassflow

from .documents import changed, example, names_the_field


def test_v2_mapping_comes_from_schema_fields_with_a_column() -> None:
    doc = example("v2")
    del doc["schema"]["fields"][3]["column_name"]  # user.email: in the schema, not written
    out = convert_glassflow(doc)
    assert [m["field"] for m in out["sink"]["mapping"]] == [
        "event_id",
        "user.id",
        "user.name",
        "created_at",
        "tags",
    ]
    assert len(out["source"]["schema"]["fields"]) == 6


def test_v2_nested_connection_params_and_sink_mapping() -> None:
    doc = example("v2")
    sink = doc["sink"]
    doc["sink"] = {
        "type": "clickhouse",
        "connection_params": {
            k: sink[k]
            for k in ("host", "port", "http_port", "database", "username", "password", "secure")
        },
        "table": "users_dedup",
        "mapping": [{"name": "event_id", "column_name": "id", "column_type": "String"}],
    }
    out = convert_glassflow(doc)
    assert out["sink"]["clickhouse"]["password"] == "secret"
    assert out["sink"]["mapping"] == [{"field": "event_id", "column": "id", "type": "String"}]


def test_v2_password_that_is_not_base64_is_kept() -> None:
    result = import_glassflow(changed(example("v2"), "sink.password", "not base64!"))
    assert result.document["sink"]["clickhouse"]["password"] == "not base64!"
    assert any("not base64" in n for n in result.notes)


def test_v3_password_is_not_decoded() -> None:
    doc = changed(example("v3"), "sink.connection_params.password", "c2VjcmV0")
    assert convert_glassflow(doc)["sink"]["clickhouse"]["password"] == "c2VjcmV0"


@pytest.mark.parametrize(
    ("params", "expected_port"),
    [
        ({"port": "9000"}, 8123),
        ({"port": "9440", "secure": True}, 8443),
        ({"port": "8123"}, 8123),
        ({"port": "9000", "http_port": "18123"}, 18123),
        ({"port": "9000", "http_port": 8124}, 8124),
    ],
)
def test_http_port(params: dict[str, Any], expected_port: int) -> None:
    doc = example("v3")
    conn = doc["sink"]["connection_params"]
    del conn["http_port"]
    conn.update(params)
    clickhouse = convert_glassflow(doc)["sink"]["clickhouse"]
    assert clickhouse["port"] == expected_port
    assert clickhouse.get("secure", False) is params.get("secure", False)


def test_clickhouse_tls_settings() -> None:
    doc = example("v3")
    doc["sink"]["connection_params"].update(
        secure=True, skip_certificate_verification=True, http_port="8443"
    )
    clickhouse = convert_glassflow(doc)["sink"]["clickhouse"]
    assert clickhouse["secure"] is True
    assert clickhouse["skip_certificate_verification"] is True


# (format, path, value, the problem reported) in the v3 sink, each on the version's example.
INVALID = [
    ("v3", "sink.type", "postgres", "sink.type: unsupported sink type 'postgres'; only clickhouse"),
    (
        "v3",
        "sink.connection_params.host",
        "",
        "sink.connection_params.host: clickhouse host cannot be empty",
    ),
    (
        "v3",
        "sink.connection_params.http_port",
        "http",
        "sink.connection_params.http_port: 'http' is not a port number",
    ),
    (
        "v3",
        "sink.connection_params.secure",
        "yes",
        "sink.connection_params.secure: must be true or false, got 'yes'",
    ),
    (
        "v3",
        "sink.connection_params.database",
        "my-db",
        "sink.connection_params: database 'my-db' is not a plain name",
    ),
    ("v3", "sink.table", "", "sink.table: clickhouse table cannot be empty"),
    (
        "v3",
        "sink.table",
        "my-table",
        "sink.table: 'my-table' is not a plain table name (letters, digits, _)",
    ),
    (
        "v3",
        "sink.max_batch_size",
        0,
        "sink.max_batch_size: clickhouse max_batch_size must be greater than 0",
    ),
    (
        "v3",
        "sink.max_delay_time",
        "soon",
        'sink.max_delay_time: \'soon\' is not a duration (e.g. "30s", "1h30m", "1d12h", "168h0m0s")',
    ),
    (
        "v3",
        "sink.mapping",
        [],
        "sink.mapping: no column mapping found: map at least one field to a ClickHouse column",
    ),
    (
        "v3",
        "sink.mapping[0].name",
        "id",
        "sink.mapping[0].name: mapping field 'id' not found in schema for source_id 'users'",
    ),
    (
        "v3",
        "sink.mapping[0].column_type",
        "Varchr",
        "sink.mapping[0].column_type: unsupported ClickHouse column type 'Varchr': unknown ClickHouse type 'Varchr'",
    ),
    (
        "v3",
        "sink.mapping[0].column_type",
        "Bool",
        "sink.mapping[0].column_type: field 'event_id' (string) cannot go into column 'event_id' (Bool) (a string "
        "field can go into: Date, Date32, DateTime, DateTime64, Decimal, Decimal128, Decimal256, Decimal32, "
        "Decimal64, Enum, Enum16, Enum8, FixedString, IPv4, IPv6, JSON, String, UUID)",
    ),
    (
        "v3",
        "sink.mapping[0].column_name",
        "user-id",
        "sink.mapping[0].column_name: 'user-id' is not a column name (letters, digits, _; dots "
        "join the parts of a Nested column, e.g. Events.Timestamp)",
    ),
    (
        "v3",
        "sink.mapping[1].column_name",
        "event_id",
        "sink: mapping writes column(s) event_id more than once",
    ),
]


test_invalid_glassflow_document_names_the_glassflow_field = names_the_field(INVALID)
