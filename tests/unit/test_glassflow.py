"""GlassFlow pipeline JSON (v1, v2, v3) imported as streamsift pipelines, and what is refused."""

from __future__ import annotations

import base64
import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from streamsift.config import ConfigError, Pipeline, load_pipeline, parse_pipeline
from streamsift.config.glassflow import (
    convert_glassflow,
    glassflow_to_yaml,
    glassflow_version,
    import_glassflow,
    parse_go_duration,
)
from streamsift.config.loader import is_glassflow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pipelines"
VERSIONS = ("v1", "v2", "v3")

MAPPING = [
    {"field": "event_id", "column": "event_id", "type": "UUID"},
    {"field": "user.id", "column": "user_id", "type": "UUID"},
    {"field": "user.name", "column": "name", "type": "String"},
    {"field": "user.email", "column": "email", "type": "String"},
    {"field": "created_at", "column": "created_at", "type": "DateTime"},
    {"field": "tags", "column": "tags", "type": "Array(String)"},
]

PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2FmZQ==\n-----END CERTIFICATE-----\n"

DELETE = object()


def example(version: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"glassflow-dedup-{version}.json").read_text(encoding="utf-8"))


def changed(doc: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """A deep copy of `doc` with the value at a dotted path replaced (or appended to a list)."""
    doc = copy.deepcopy(doc)
    parts: list[str | int] = [
        int(p) if p.isdigit() else p for p in path.replace("]", "").replace("[", ".").split(".")
    ]
    node: Any = doc
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    last = parts[-1]
    if value is DELETE:
        del node[last]
    elif isinstance(last, int) and last == len(node):
        node.append(value)
    else:
        node[last] = value
    return doc


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        convert_glassflow(doc)
    return info.value.problems


def kafka_source(source_id: str, topic: str, fields: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "type": "kafka",
        "source_id": source_id,
        "connection_params": {"brokers": ["127.0.0.1:9092"], "protocol": "PLAINTEXT"},
        "topic": topic,
        "schema_fields": fields,
    }


# ---------------------------------------------------------------------------- the example files


@pytest.mark.parametrize("version", VERSIONS)
def test_example_converts_field_by_field(version: str) -> None:
    doc = convert_glassflow(example(version))
    source = doc["source"]
    assert doc["version"] == 1
    assert doc["name"] == "users-dedup-demo"
    assert source["bootstrap_servers"] == "127.0.0.1:9092"
    assert source["topic"] == "users"
    assert source["start_from"] == "earliest"
    assert "security" not in source  # PLAINTEXT with NO_AUTH: our defaults
    assert source["schema"] == {
        "fields": [
            {"name": "event_id", "type": "string"},
            {"name": "user.id", "type": "string"},
            {"name": "user.name", "type": "string"},
            {"name": "user.email", "type": "string"},
            {"name": "created_at", "type": "string"},
            {"name": "tags", "type": "array"},
        ]
    }
    assert "event_time" not in source["schema"]  # GlassFlow dedups on processing time
    assert doc["dedup"] == {"key": "event_id", "time_window": "1h"}
    assert doc["sink"] == {
        "clickhouse": {
            "host": "127.0.0.1",
            "port": 8123,
            "database": "default",
            "username": "default",
            "password": "secret",  # base64 "c2VjcmV0" in v1/v2, plain in v3
        },
        "table": "users_dedup",
        "create_table": False,
        "mapping": MAPPING,
        "max_batch_size": 1000,
        "max_delay_time": "10s",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_example_validates_as_a_pipeline(version: str) -> None:
    pipeline = load_pipeline(EXAMPLES / f"glassflow-dedup-{version}.json")
    assert isinstance(pipeline, Pipeline)
    assert pipeline.dedup is not None
    assert pipeline.dedup.key == ("event_id",)
    assert pipeline.dedup.time_window == timedelta(hours=1)
    assert pipeline.source.schema_.event_time is None
    assert pipeline.sink.clickhouse.password.get_secret_value() == "secret"
    assert pipeline.sink.clickhouse.port == 8123
    assert not pipeline.sink.clickhouse.embedded
    assert pipeline.sink.create_table is False
    assert [(m.field, m.column, m.type) for m in pipeline.sink.mapping] == [
        (m["field"], m["column"], m["type"]) for m in MAPPING
    ]


def test_all_versions_give_the_same_pipeline_apart_from_the_source_name() -> None:
    v3 = convert_glassflow(example("v3"))
    assert v3["source"].pop("name") == "users"  # v3 source_id
    assert convert_glassflow(example("v1")) == convert_glassflow(example("v2")) == v3


@pytest.mark.parametrize(("version", "expected"), [("v1", "v1"), ("v2", "v2"), ("v3", "v3")])
def test_version_detection(version: str, expected: str) -> None:
    doc = example(version)
    assert is_glassflow(doc)
    assert glassflow_version(doc) == expected


@pytest.mark.parametrize(
    ("version", "detected"),
    [("2.0.0", "v2"), ("v2", "v2"), ("v3", "v3"), (" V3 ", "v3"), ("", "v3"), (None, "v3")],
)
def test_version_values(version: object, detected: str) -> None:
    doc = example("v3") if detected == "v3" else example("v2")
    if version is None:
        del doc["version"]
    else:
        doc["version"] = version
    assert glassflow_version(doc) == detected
    assert convert_glassflow(doc)["dedup"] == {"key": "event_id", "time_window": "1h"}


def test_unknown_version_is_refused() -> None:
    assert problems(changed(example("v3"), "version", "v4")) == [
        "version: unsupported GlassFlow pipeline version 'v4'; "
        'expected "v3", "v2" or "2.0.0" (v1 files have no version)'
    ]


def test_create_table_is_off_by_default_and_overridable() -> None:
    assert convert_glassflow(example("v3"))["sink"]["create_table"] is False
    assert convert_glassflow(example("v3"), create_table=True)["sink"]["create_table"] is True


def test_yaml_round_trips_with_notes_as_comments() -> None:
    text = glassflow_to_yaml(example("v1"))
    assert text.startswith(
        "# streamsift pipeline imported from GlassFlow pipeline 'users-dedup-demo' (format v1)."
    )
    assert "# Field reference: docs/configuration.md" in text
    assert "processing time" in text
    assert yaml.safe_load(text) == convert_glassflow(example("v1"))
    assert "password: secret" in text  # the user's own file: secrets as given (decoded)
    assert parse_pipeline(yaml.safe_load(text)).name == "users-dedup-demo"


def test_import_notes() -> None:
    result = import_glassflow(example("v3"))
    assert result.version == "v3"
    assert result.pipeline_id == "users-dedup-demo"
    notes = "\n".join(result.notes)
    assert "GlassFlow deduplicates on processing time" in notes
    assert "Kafka timestamp" in notes
    assert "GlassFlow's port 9000 is the native protocol port" in notes
    assert "create_table is false" in notes
    assert "'metadata' has no streamsift equivalent" in notes


def test_loader_converts_glassflow_documents() -> None:
    pipeline = parse_pipeline(example("v2"))
    assert pipeline.name == "users-dedup-demo"
    assert pipeline.sink.max_batch_size == 1000
    assert pipeline.sink.max_delay_time == timedelta(seconds=10)


# ---------------------------------------------------------------------------- conversion details


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1h", timedelta(hours=1)),
        ("168h0m0s", timedelta(days=7)),
        ("1h0m0s", timedelta(hours=1)),
        ("1d12h", timedelta(days=1, hours=12)),
        ("7d", timedelta(days=7)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        ("300ms", timedelta(milliseconds=300)),
        ("10µs", timedelta(microseconds=10)),
        ("0", timedelta(0)),
        ("-1h", timedelta(hours=-1)),
    ],
)
def test_go_durations(value: str, expected: timedelta) -> None:
    assert parse_go_duration(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (3600, 'must be a duration string such as "30s", "1h" or "1d", got 3600'),
        ("", "'' is not a duration"),
        ("1 hour", "'1 hour' is not a duration"),
        ("1.5d", "'1.5d' is not a duration"),
        ("2w", "'2w' is not a duration"),
        ("h", "'h' is not a duration"),
    ],
)
def test_go_durations_rejected(value: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_go_duration(value)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(
    ("window", "ours"),
    [("168h0m0s", "7d"), ("1d12h", "1d12h"), ("90m", "1h30m"), ("30s", "30s"), ("1h0m0s", "1h")],
)
def test_dedup_window_in_our_notation(window: str, ours: str) -> None:
    doc = changed(example("v3"), "transforms[0].config.time_window", window)
    assert convert_glassflow(doc)["dedup"]["time_window"] == ours


def test_v1_and_v2_dedup_key_spellings() -> None:
    v2 = changed(
        example("v2"),
        "source.topics[0].deduplication",
        {"enabled": True, "id_field": "user.id", "time_window": "2h"},
    )
    assert convert_glassflow(v2)["dedup"] == {"key": "user.id", "time_window": "2h"}
    v1 = changed(example("v1"), "source.topics[0].deduplication.enabled", False)
    assert "dedup" not in convert_glassflow(v1)


def test_no_dedup_transform_means_no_dedup() -> None:
    doc = changed(example("v3"), "transforms", [])
    assert "dedup" not in convert_glassflow(doc)


@pytest.mark.parametrize(
    ("glassflow", "ours"),
    [
        ("int64", "int"),
        ("uint8", "int"),
        ("integer", "int"),
        ("float32", "float"),
        ("number", "float"),
        ("boolean", "bool"),
        ("bytes", "string"),
        ("object", "map"),
        ("map", "map"),
        ("datetime", "timestamp"),
        ("DateTime", "timestamp"),
        ("uuid", "string"),
    ],
)
def test_field_type_names(glassflow: str, ours: str) -> None:
    doc = changed(
        example("v3"), "sources[0].schema_fields[6]", {"name": "extra", "type": glassflow}
    )
    assert convert_glassflow(doc)["source"]["schema"]["fields"][6] == {
        "name": "extra",
        "type": ours,
    }


def test_datetime_field_into_datetime64_column() -> None:
    doc = changed(example("v3"), "sources[0].schema_fields[4].type", "datetime")
    doc = changed(doc, "sink.mapping[4].column_type", "DateTime64(6, 'UTC')")
    out = convert_glassflow(doc)
    assert out["source"]["schema"]["fields"][4] == {"name": "created_at", "type": "timestamp"}
    assert out["sink"]["mapping"][4] == {
        "field": "created_at",
        "column": "created_at",
        "type": "DateTime64(6, 'UTC')",
    }


def test_lowercase_column_types_of_early_v1_files_are_repaired() -> None:
    doc = changed(example("v1"), "sink.table_mapping[2].column_type", "string")
    doc = changed(doc, "sink.table_mapping[5].column_type", "array(string)")
    result = import_glassflow(doc)
    assert result.document["sink"]["mapping"][2]["type"] == "String"
    assert result.document["sink"]["mapping"][5]["type"] == "Array(String)"
    assert (
        "sink.table_mapping[2].column_type: ClickHouse type 'string' read as 'String'"
        in result.notes
    )


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


def test_start_from_latest() -> None:
    doc = changed(example("v3"), "sources[0].consumer_group_initial_offset", "LATEST")
    assert convert_glassflow(doc)["source"]["start_from"] == "latest"
    doc = changed(example("v3"), "sources[0].consumer_group_initial_offset", DELETE)
    assert convert_glassflow(doc)["source"]["start_from"] == "earliest"  # GlassFlow's default


def test_sasl_credentials() -> None:
    doc = changed(
        example("v3"),
        "sources[0].connection_params",
        {
            "brokers": ["k1:9092", "k2:9092"],
            "protocol": "SASL_SSL",
            "mechanism": "SCRAM-SHA-512",
            "username": "etl",
            "password": "s3cret",
            "skip_tls_verification": True,
        },
    )
    source = convert_glassflow(doc)["source"]
    assert source["bootstrap_servers"] == "k1:9092,k2:9092"
    assert source["security"] == {
        "protocol": "SASL_SSL",
        "mechanism": "SCRAM-SHA-512",
        "username": "etl",
        "password": "s3cret",
        "skip_tls_verification": True,
    }
    assert parse_pipeline(doc).source.security.librdkafka()["sasl.password"] == "s3cret"


def test_skip_auth_drops_a_leftover_mechanism() -> None:
    doc = changed(
        example("v3"),
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "PLAINTEXT", "mechanism": "PLAIN", "skip_auth": True},
    )
    assert "security" not in convert_glassflow(doc)["source"]


@pytest.mark.parametrize("root_ca", [PEM, base64.b64encode(PEM.encode()).decode()])
def test_root_ca_is_kept_inline_as_a_librdkafka_property(root_ca: str) -> None:
    doc = changed(
        example("v3"),
        "sources[0].connection_params",
        {"brokers": ["k:9093"], "protocol": "SSL", "root_ca": root_ca},
    )
    result = import_glassflow(doc)
    source = result.document["source"]
    assert source["security"] == {"protocol": "SSL"}
    assert source["properties"] == {"ssl.ca.pem": PEM}
    assert any("source.security.ca_file" in n for n in result.notes)
    assert f"ssl.ca.pem: |\n      {PEM.splitlines()[0]}" in glassflow_to_yaml(doc)


def test_pipeline_id_is_sanitised_into_a_name() -> None:
    result = import_glassflow(changed(example("v3"), "pipeline_id", " users dedup (prod) "))
    assert result.document["name"] == "users-dedup-prod"
    assert any("became the name 'users-dedup-prod'" in n for n in result.notes)


# ---------------------------------------------------------------------------- refused shapes

JOIN_V3: dict[str, Any] = {
    "version": "v3",
    "pipeline_id": "orders-join",
    "sources": [
        kafka_source(
            "orders",
            "orders",
            [{"name": "order_id", "type": "string"}, {"name": "user_id", "type": "string"}],
        ),
        kafka_source(
            "users",
            "users",
            [{"name": "user.id", "type": "string"}, {"name": "user.name", "type": "string"}],
        ),
    ],
    "join": {
        "enabled": True,
        "type": "temporal",
        "left_source": {"source_id": "orders", "key": "user_id", "time_window": "1h"},
        "right_source": {"source_id": "users", "key": "user.id", "time_window": "1h"},
        "output_fields": [
            {"source_id": "orders", "name": "order_id"},
            {"source_id": "users", "name": "user.name", "output_name": "user_name"},
        ],
    },
    "sink": {
        "connection_params": {
            "host": "127.0.0.1",
            "port": "9000",
            "database": "default",
            "username": "default",
            "password": "x",
        },
        "table": "orders_enriched",
        "mapping": [{"name": "order_id", "column_name": "order_id", "column_type": "String"}],
    },
}


def test_v3_join_is_imported() -> None:
    doc = convert_glassflow(JOIN_V3)
    assert [src["name"] for src in doc["sources"]] == ["orders", "users"]
    assert doc["join"] == {
        "type": "inner",
        "left": {"source": "orders", "key": "user_id", "time_window": "1h"},
        "right": {"source": "users", "key": "user.id", "time_window": "1h"},
        "output": [
            {"from": "left", "field": "order_id"},
            {"from": "right", "field": "user.name", "as": "user_name"},
        ],
    }
    pipeline = parse_pipeline(JOIN_V3)
    assert pipeline.join is not None and pipeline.source.topic == "orders"


def test_v3_join_errors_name_the_glassflow_field() -> None:
    doc = changed(JOIN_V3, "join.right_source.key", "user.nope")
    assert problems(doc) == [
        "join.right_source.key: join key 'user.nope' not found in schema_fields for source 'users'"
    ]
    doc = changed(JOIN_V3, "join.output_fields[1].name", "nope")
    assert problems(doc) == [
        "join.output_fields[1].name: join output field 'nope' not found in schema for source 'users'"
    ]


def join_example(version: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"glassflow-join-{version}.json").read_text(encoding="utf-8"))


JOIN_OUTPUT_V3 = [
    {"from": "left", "field": "order_id"},
    {"from": "left", "field": "amount"},
    {"from": "right", "field": "user.name", "as": "user_name"},
]


def test_v1_join_example_converts_exactly_like_v3() -> None:
    """The three join examples describe one pipeline: v1 (table_mapping by source) gives the
    v3 document; v2 outputs every schema field, so it adds the two key fields."""
    v3 = convert_glassflow(join_example("v3"))
    assert v3["join"]["output"] == JOIN_OUTPUT_V3
    assert convert_glassflow(join_example("v1")) == v3
    v2 = convert_glassflow(join_example("v2"))
    assert v2["join"].pop("output") == [
        {"from": "left", "field": "order_id"},
        {"from": "left", "field": "user_id"},
        {"from": "left", "field": "amount"},
        {"from": "right", "field": "user.id"},
        {"from": "right", "field": "user.name", "as": "user_name"},
    ]
    v3["join"].pop("output")
    assert v2 == v3


@pytest.mark.parametrize("version", VERSIONS)
def test_join_example_field_by_field(version: str) -> None:
    doc = convert_glassflow(join_example(version))
    orders, users = doc["sources"]  # the left source first, whatever order GlassFlow lists
    assert (orders["name"], orders["topic"], users["name"], users["topic"]) == (
        "orders",
        "orders",
        "users",
        "users",
    )
    assert orders["schema"] == {
        "fields": [
            {"name": "order_id", "type": "string"},
            {"name": "user_id", "type": "string"},
            {"name": "amount", "type": "float"},
        ]
    }
    assert users["schema"] == {
        "fields": [{"name": "user.id", "type": "string"}, {"name": "user.name", "type": "string"}]
    }
    assert orders["dedup"] == {"key": "order_id", "time_window": "1h"}
    assert "dedup" not in users
    assert orders["bootstrap_servers"] == users["bootstrap_servers"] == "127.0.0.1:9092"
    assert doc["join"]["type"] == "inner"
    assert doc["join"]["left"] == {"source": "orders", "key": "user_id", "time_window": "1h"}
    assert doc["join"]["right"] == {"source": "users", "key": "user.id", "time_window": "1h"}
    assert doc["sink"]["mapping"] == [
        {"field": "order_id", "column": "order_id", "type": "String"},
        {"field": "amount", "column": "amount", "type": "Float64"},
        {"field": "user_name", "column": "user_name", "type": "String"},
    ]
    assert doc["sink"]["clickhouse"]["password"] == "secret"
    pipeline = load_pipeline(EXAMPLES / f"glassflow-join-{version}.json")
    assert pipeline.join is not None and pipeline.source.topic == "orders"
    assert [s.id for s in pipeline.inputs] == ["orders", "users"]
    assert pipeline.join.left.time_window == timedelta(hours=1)


# A GlassFlow 2.0.0 demo (demos/getting-started, 2025-12): right source listed first, SASL,
# every schema field an output, some renamed by column_name, one (the right key) not mapped.
V2_DEMO_JOIN: dict[str, Any] = {
    "version": "2.0.0",
    "pipeline_id": "join-demo-pipeline",
    "source": {
        "type": "kafka",
        "connection_params": {
            "brokers": ["kafka:9092"],
            "protocol": "SASL_PLAINTEXT",
            "mechanism": "PLAIN",
            "username": "user1",
            "password": "pw",
        },
        "topics": [
            {"name": "user_events", "consumer_group_initial_offset": "latest"},
            {"name": "orders", "consumer_group_initial_offset": "latest"},
        ],
    },
    "join": {
        "enabled": True,
        "type": "temporal",
        "sources": [
            {
                "source_id": "user_events",
                "join_key": "user.id",
                "join_key_type": "string",
                "time_window": "1h",
                "orientation": "right",
            },
            {
                "source_id": "orders",
                "join_key": "user_id",
                "join_key_type": "string",
                "time_window": "30m",
                "orientation": "left",
            },
        ],
    },
    "sink": {
        "type": "clickhouse",
        "host": "clickhouse",
        "port": "9000",
        "http_port": "8123",
        "database": "default",
        "username": "default",
        "password": "c2VjcmV0",
        "table": "orders_with_user_data",
    },
    "schema": {
        "fields": [
            {"source_id": "orders", "name": "order_id", "type": "string"}
            | {"column_name": "order_id", "column_type": "UUID"},
            {"source_id": "orders", "name": "user_id", "type": "string"}
            | {"column_name": "user_id", "column_type": "UUID"},
            {"source_id": "user_events", "name": "user.id", "type": "string"},
            {"source_id": "user_events", "name": "user.name", "type": "string"}
            | {"column_name": "name", "column_type": "String"},
            {"source_id": "orders", "name": "amount", "type": "int32"}
            | {"column_name": "amount", "column_type": "Int32"},
            {"source_id": "orders", "name": "created_at", "type": "string"}
            | {"column_name": "created_at", "column_type": "DateTime"},
            {"source_id": "user_events", "name": "tags", "type": "array"}
            | {"column_name": "tags", "column_type": "Array(String)"},
        ]
    },
}


def test_v2_demo_join_imports_with_every_schema_field_as_output() -> None:
    doc = convert_glassflow(V2_DEMO_JOIN)
    assert [s["name"] for s in doc["sources"]] == ["orders", "user_events"]
    assert doc["sources"][0]["start_from"] == "latest"
    assert doc["sources"][1]["security"] == {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "PLAIN",
        "username": "user1",
        "password": "pw",
    }
    assert doc["join"] == {
        "type": "inner",
        "left": {"source": "orders", "key": "user_id", "time_window": "30m"},
        "right": {"source": "user_events", "key": "user.id", "time_window": "1h"},
        "output": [
            {"from": "left", "field": "order_id"},
            {"from": "left", "field": "user_id"},
            {"from": "right", "field": "user.id"},
            {"from": "right", "field": "user.name", "as": "name"},
            {"from": "left", "field": "amount"},
            {"from": "left", "field": "created_at"},
            {"from": "right", "field": "tags"},
        ],
    }
    assert [(m["field"], m["column"], m["type"]) for m in doc["sink"]["mapping"]] == [
        ("order_id", "order_id", "UUID"),
        ("user_id", "user_id", "UUID"),
        ("name", "name", "String"),
        ("amount", "amount", "Int32"),
        ("created_at", "created_at", "DateTime"),
        ("tags", "tags", "Array(String)"),
    ]
    assert doc["sink"]["clickhouse"]["password"] == "secret"
    assert parse_pipeline(V2_DEMO_JOIN).join is not None


def test_v2_join_with_key_instead_of_join_key_and_an_explicit_mapping() -> None:
    """A 2026-03 v2 variant wrote `key`; `sink.mapping` names the join's output fields."""
    doc = changed(join_example("v2"), "join.sources[0].join_key", DELETE)
    doc = changed(doc, "join.sources[0].key", "user.id")
    doc = changed(
        doc,
        "sink.mapping",
        [
            {"name": "order_id", "column_name": "id", "column_type": "String"},
            {"name": "user.id", "column_name": "uid", "column_type": "String"},
        ],
    )
    out = convert_glassflow(doc)
    assert out["join"]["right"] == {"source": "users", "key": "user.id", "time_window": "1h"}
    assert out["sink"]["mapping"] == [
        {"field": "order_id", "column": "id", "type": "String"},
        {"field": "user.id", "column": "uid", "type": "String"},
    ]
    assert parse_pipeline(doc).sink.mapping[1].field == "user.id"


# (format, path, value, the problems reported), each on the version's join example.
JOIN_INVALID = [
    (
        "v2",
        "join.sources[0].orientation",
        "left",
        [
            "join.sources: join requires exactly one left and one right source, found 2 left and 0 right"
        ],
    ),
    (
        "v2",
        "join.sources[0].orientation",
        "up",
        [
            "join.sources[0].orientation: must be left or right, got 'up'",
            "join.sources: join requires exactly one left and one right source, found 1 left and 0 right",
        ],
    ),
    (
        "v2",
        "join.sources[1].source_id",
        "payments",
        ["join.sources[1].source_id: unknown source_id 'payments' (sources: 'orders', 'users')"],
    ),
    (
        "v2",
        "join.sources[1].source_id",
        "users",
        [
            "join.sources[1].join_key: join key 'user_id' not found in schema_fields for source "
            "'users'",
            "join.sources: the left and the right source must differ",
        ],
    ),
    (
        "v2",
        "join.sources[1].join_key",
        "uid",
        ["join.sources[1].join_key: join key 'uid' not found in schema_fields for source 'orders'"],
    ),
    ("v2", "join.sources[1].join_key", " ", ["join.sources[1].join_key: join key cannot be empty"]),
    (
        "v2",
        "join.sources[0].time_window",
        "8d",
        ["join.sources[0].time_window: 8d exceeds the 7d maximum"],
    ),
    (
        "v2",
        "join.sources[0].time_window",
        "0s",
        ["join.sources[0].time_window: time_window must be greater than zero"],
    ),
    (
        "v2",
        "join.sources[0].time_window",
        DELETE,
        ["join.sources[0].time_window: required field is missing"],
    ),
    (
        "v2",
        "join.type",
        "lookup",
        ["join.type: invalid join type; only temporal joins are supported"],
    ),
    (
        "v2",
        "source.topics[1]",
        DELETE,
        ["source.topics: join.enabled=true requires exactly two kafka sources"],
    ),
    (
        "v2",
        "schema.fields[4].source_id",
        "payments",
        [
            "schema.fields[4].source_id: 'payments' is not a source of this pipeline "
            "(sources: 'orders', 'users')"
        ],
    ),
    (
        "v2",
        "schema.fields[4].source_id",
        "",
        [
            "schema.fields[4].source_id: source_id cannot be empty with a join: name the topic "
            "('orders', 'users')"
        ],
    ),
    (
        "v2",
        "schema.fields[2].column_name",
        "order_id",
        [
            "schema.fields[2]: join output name 'order_id' is used twice (also schema.fields[0]); "
            "give one of them another column_name"
        ],
    ),
    (
        "v2",
        "schema.fields[5]",
        {"source_id": "users", "name": "user.@x", "type": "string"},
        [
            "schema.fields[5].name: 'user.@x' is not a field path: use names of letters, digits "
            "and _ joined by dots, e.g. user.id"
        ],
    ),
    (
        "v2",
        "source.deduplication",
        {"enabled": True, "key": "order_id", "time_window": "1h"},
        [
            "source.deduplication: with two topics, deduplication goes on each topic "
            "(source.topics[i].deduplication)"
        ],
    ),
    (
        "v2",
        "sink.mapping",
        [{"name": "user.nick", "column_name": "nick", "column_type": "String"}],
        [
            "sink.mapping[0].name: mapping field 'user.nick' not found in schema for source_id "
            "'orders-users-join-join'"
        ],
    ),
    (
        "v2",
        "filter",
        {"enabled": True, "expression": "amount > 0"},
        ["filter: filter/stateless transforms are not supported with join (GlassFlow's own rule)"],
    ),
    (
        "v1",
        "sink.table_mapping[2].source_id",
        "payments",
        [
            "sink.table_mapping[2].source_id: 'payments' is not a source of this pipeline "
            "(sources: 'orders', 'users')"
        ],
    ),
    (
        "v1",
        "sink.table_mapping[2].source_id",
        DELETE,
        [
            "sink.table_mapping[2].source_id: source_id cannot be empty with a join: name the "
            "topic ('orders', 'users')"
        ],
    ),
    (
        "v1",
        "sink.table_mapping[2].field_name",
        "user.nick",
        [
            "sink.table_mapping[2].field_name: join output field 'user.nick' not found in schema "
            "for source 'users'"
        ],
    ),
    (
        "v1",
        "sink.table_mapping[2].column_name",
        "amount",
        [
            "sink.table_mapping[2]: join output name 'amount' is used twice "
            "(also sink.table_mapping[1]); give one of them another column_name"
        ],
    ),
    (
        "v1",
        "sink.table_mapping[2].column_name",
        "user.name",
        [
            "sink.table_mapping[2].column_name: 'user.name' is not a plain column name "
            "(letters, digits, _)"
        ],
    ),
    (
        "v1",
        "join.sources[1].join_key_type",
        "int",
        [
            "join.sources[1].join_key_type: 'int' does not match the type of 'user.id' in the "
            "schema of 'users' (string)"
        ],
    ),
    (
        "v1",
        "source.topics[0].deduplication.time_window",
        "9d",
        ["source.topics[0].deduplication.time_window: 9d exceeds the 7d maximum"],
    ),
    (
        "v1",
        "source.topics[1].schema.fields[2]",
        {"name": "user.@x", "type": "string"},
        [
            "source.topics[1].schema.fields[2].name: 'user.@x' is not a field path: use names of "
            "letters, digits and _ joined by dots, e.g. user.id"
        ],
    ),
]


@pytest.mark.parametrize(
    ("version", "path", "value", "expected"),
    JOIN_INVALID,
    ids=[f"{c[0]}:{c[1]}={c[2]!r}"[:80] for c in JOIN_INVALID],
)
def test_invalid_legacy_join_names_the_glassflow_field(
    version: str, path: str, value: object, expected: list[str]
) -> None:
    assert problems(changed(join_example(version), path, value)) == expected


def test_two_sources_without_join_are_refused() -> None:
    doc = copy.deepcopy(JOIN_V3)
    doc["join"] = {"enabled": False}
    assert problems(doc) == [
        "sources: pipelines with 2 sources are not supported yet; streamsift reads one Kafka topic per pipeline"
    ]


def test_v3_filter_and_stateless_are_translated() -> None:
    doc = changed(
        example("v3"),
        "transforms",
        [
            {
                "type": "filter",
                "source_id": "users",
                "config": {"expression": "user.id != '' && !(user.name in ['bot', \"x\"])"},
            },
            {
                "type": "dedup",
                "source_id": "users",
                "config": {"key": "event_id", "time_window": "1h"},
            },
            {
                "type": "stateless",
                "source_id": "users",
                "config": {
                    "transforms": [
                        {
                            "expression": "user.name",
                            "output_name": "user.name",
                            "output_type": "string",
                        },
                        {"expression": "len(tags) * 2", "output_name": "n", "output_type": "int"},
                    ]
                },
            },
        ],
    )
    assert problems(doc) == [
        "transforms[2].config.transforms[1].expression: cannot translate GlassFlow expression "
        "'len(tags) * 2': function calls (len(...)) are not translated; streamsift translates "
        "comparisons, &&, ||, !, arithmetic, literals, field paths and in lists"
    ]
    doc["transforms"][2]["config"]["transforms"][1]["expression"] = "-(2 + 3) % 2"
    out = convert_glassflow(doc)
    assert out["filter"] == "((`user.id` != '') AND (NOT ((`user.name` IN ('bot', 'x')))))"
    assert out["transform"] == [{"name": "n", "expression": "((-((2 + 3))) % 2)", "type": "int"}]
    assert parse_pipeline(doc).filter == out["filter"]


V2_STATELESS = {
    "id": "stateless-1",
    "type": "expr_lang_transform",
    "enabled": True,
    "source_id": "users",
    "config": {
        "transform": [
            {"expression": "user.name", "output_name": "user.name", "output_type": "string"},
            {"expression": "user.name == 'Ada'", "output_name": "is_ada", "output_type": "bool"},
        ]
    },
}


def test_v2_filter_and_stateless_are_translated() -> None:
    doc = changed(
        example("v2"),
        "filter",
        {"enabled": True, "expression": "user.id != '' and not (user.name in ['bot', 'x'])"},
    )
    doc = changed(doc, "stateless_transformation", V2_STATELESS)
    doc = changed(
        doc,
        "sink.mapping",
        [
            {"name": "event_id", "column_name": "event_id", "column_type": "UUID"},
            {"name": "is_ada", "column_name": "is_ada", "column_type": "Bool"},
        ],
    )
    result = import_glassflow(doc)
    out = result.document
    assert out["filter"] == "((`user.id` != '') AND (NOT ((`user.name` IN ('bot', 'x')))))"
    assert out["transform"] == [
        {"name": "is_ada", "expression": "(`user.name` = 'Ada')", "type": "bool"}
    ]
    assert out["sink"]["mapping"][1] == {"field": "is_ada", "column": "is_ada", "type": "Bool"}
    assert any("computed fields are added" in n for n in result.notes)
    pipeline = parse_pipeline(doc)
    assert pipeline.filter == out["filter"]
    assert [t.name for t in pipeline.transform] == ["is_ada"]


# (path, value, the problems reported), each on the v2 dedup example.
V2_EXPRESSIONS_INVALID = [
    (
        "filter",
        {"enabled": True, "expression": "len(tags) > 1"},
        [
            "filter.expression: cannot translate GlassFlow expression 'len(tags) > 1': function "
            "calls (len(...)) are not translated; streamsift translates comparisons, &&, ||, !, "
            "arithmetic, literals, field paths and in lists"
        ],
    ),
    (
        "filter",
        {"enabled": True, "expression": " "},
        ["filter.expression: expression cannot be empty"],
    ),
    (
        "filter",
        {"enabled": "yes", "expression": "tags != nil"},
        ["filter.enabled: must be true or false, got 'yes'"],
    ),
    (
        "filter",
        {"enabled": True, "expression": "nickname == 'x'"},
        ["filter.expression: unknown field 'nickname'"],
    ),
    (
        "stateless_transformation",
        {**V2_STATELESS, "source_id": "orders"},
        [
            "stateless_transformation.source_id: 'orders' is not a source of this pipeline "
            "(sources: 'users')"
        ],
    ),
    (
        "stateless_transformation",
        {**V2_STATELESS, "type": "python"},
        [
            "stateless_transformation.type: unsupported stateless transformation type 'python'; "
            "only expr_lang_transform"
        ],
    ),
    (
        "stateless_transformation",
        {**V2_STATELESS, "config": {}},
        ["stateless_transformation.config.transform: required field is missing"],
    ),
    (
        "stateless_transformation",
        {
            **V2_STATELESS,
            "config": {
                "transform": [{"expression": "1 + 2", "output_name": "tags", "output_type": "int"}]
            },
        },
        [
            "stateless_transformation.config.transform[0].output_name: 'tags' is also a schema "
            "field; streamsift keeps both, so rename the output"
        ],
    ),
    (
        "stateless_transformation",
        {
            **V2_STATELESS,
            "config": {
                "transform": [{"expression": "user.name", "output_name": "n", "output_type": "int"}]
            },
        },
        [
            "stateless_transformation.config.transform[0].output_type: type mismatch: the "
            "expression gives string, declared int"
        ],
    ),
]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    V2_EXPRESSIONS_INVALID,
    ids=[f"{c[0]}={c[1]!r}"[:80] for c in V2_EXPRESSIONS_INVALID],
)
def test_invalid_v2_filter_or_stateless_names_the_glassflow_field(
    path: str, value: object, expected: list[str]
) -> None:
    found = problems(changed(example("v2"), path, value))
    assert len(found) == len(expected)
    for line, start in zip(found, expected, strict=True):
        assert line.startswith(start), line


def test_disabled_filter_is_fine() -> None:
    assert "dedup" in convert_glassflow(example("v2"))  # has "filter": {"enabled": false}


def test_otlp_source_is_refused() -> None:
    doc = {
        "version": "v3",
        "pipeline_id": "otel-logs",
        "sources": [{"type": "otlp.logs", "source_id": "logs"}],
        "sink": copy.deepcopy(example("v3")["sink"]),
    }
    assert problems(doc) == [
        "sources[0].type: OTLP sources (otlp.logs) are not supported yet; streamsift reads JSON messages from a Kafka topic"
    ]


def test_v2_otlp_source_is_refused() -> None:
    doc = changed(example("v2"), "source.type", "otlp.traces")
    assert problems(doc) == [
        "source.type: OTLP sources (otlp.traces) are not supported yet; streamsift reads JSON messages from a Kafka topic"
    ]


def test_schema_registry_is_refused() -> None:
    doc = changed(example("v3"), "sources[0].schema_registry", {"url": "http://registry:8081"})
    assert problems(doc) == [
        "sources[0].schema_registry: Schema Registry is not supported yet; streamsift reads plain JSON messages"
    ]


# ---------------------------------------------------------------------------- invalid GlassFlow documents

CLIENT_CERT = (
    "client certificates (mutual TLS) are not imported: save the certificate and key to files "
    "and set source.properties ssl.certificate.location and ssl.key.location"
)

INVALID = [
    ("v3", "pipeline_id", "abc", "pipeline_id: pipeline ID must be at least 5 characters"),
    ("v3", "pipeline_id", DELETE, "pipeline_id: required field is missing"),
    ("v3", "sources", [], "sources: pipeline must have at least one source"),
    (
        "v3",
        "sources[0].source_id",
        "",
        "sources[0].source_id: source at index 0 has empty source_id",
    ),
    ("v3", "sources[0].topic", " ", "sources[0].topic: kafka topic cannot be empty"),
    (
        "v3",
        "sources[0].connection_params",
        DELETE,
        "sources[0].connection_params: kafka source must declare connection_params",
    ),
    (
        "v3",
        "sources[0].connection_params.brokers",
        [],
        "sources[0].connection_params.brokers: must have at least one kafka server",
    ),
    (
        "v3",
        "sources[0].connection_params.brokers",
        ["k:1", ""],
        "sources[0].connection_params.brokers[1]: kafka server cannot be empty",
    ),
    (
        "v3",
        "sources[0].connection_params.brokers",
        ["kafka"],
        "sources[0].connection_params.brokers[0]: 'kafka' is not host:port",
    ),
    (
        "v3",
        "sources[0].connection_params.protocol",
        "TLS",
        "sources[0].connection_params.protocol: unsupported protocol 'TLS'; allowed: PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "SASL_SSL", "mechanism": "PLAIN", "username": "u"},
        "sources[0].connection_params.password: SASL password cannot be empty",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "SASL_PLAINTEXT",
            "mechanism": "PLAIN",
            "password": "p",
        },
        "sources[0].connection_params.username: SASL username cannot be empty",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "SASL_SSL",
            "mechanism": "NO_AUTH",
            "username": "u",
            "password": "p",
        },
        "sources[0].connection_params.mechanism: protocol SASL_SSL needs mechanism PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; got NO_AUTH",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "PLAINTEXT",
            "mechanism": "PLAIN",
            "username": "u",
            "password": "p",
        },
        "sources[0].connection_params.mechanism: mechanism PLAIN needs protocol SASL_PLAINTEXT or SASL_SSL, "
        "got PLAINTEXT (or set skip_auth: true)",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "SASL_SSL",
            "mechanism": "GSSAPI",
            "kerberos_realm": "EXAMPLE.COM",
        },
        "sources[0].connection_params.mechanism: GSSAPI (Kerberos) authentication is not supported yet",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "SSL", "client_key": "-----BEGIN PRIVATE KEY-----"},
        f"sources[0].connection_params.client_key: {CLIENT_CERT}",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "SSL", "root_ca": "hello"},
        "sources[0].connection_params.root_ca: not a PEM certificate (nor base64 of one): expected -----BEGIN CERTIFICATE-----",
    ),
    (
        "v3",
        "sources[0].consumer_group_initial_offset",
        "middle",
        "sources[0].consumer_group_initial_offset: invalid consumer_group_initial_offset; allowed values: earliest or latest",
    ),
    (
        "v3",
        "sources[0].schema_fields",
        [],
        "sources[0].schema_fields: at least one schema field is required",
    ),
    (
        "v3",
        "sources[0].schema_fields[1].type",
        "uuid4",
        "sources[0].schema_fields[1].type: unknown type 'uuid4'; GlassFlow types: string, int, uint, float, bool, "
        "array, map (and int8..int64, uint8..uint64, float32, float64, bytes, integer, number, boolean, object, datetime)",
    ),
    (
        "v3",
        "sources[0].schema_fields[6]",
        {"name": "event_id", "type": "string"},
        "sources[0].schema_fields[6].name: field 'event_id' is declared twice (first at sources[0].schema_fields[0])",
    ),
    (
        "v3",
        "transforms[0].config.key",
        "id",
        "transforms[0].config.key: dedup key 'id' not found in schema_fields for source 'users'",
    ),
    ("v3", "transforms[0].config.key", "", "transforms[0].config.key: key cannot be empty"),
    (
        "v3",
        "transforms[0].config.time_window",
        "9d",
        "transforms[0].config.time_window: 9d exceeds the 7d maximum",
    ),
    (
        "v3",
        "transforms[0].config.time_window",
        "0s",
        "transforms[0].config.time_window: time_window must be greater than zero",
    ),
    (
        "v3",
        "transforms[0].config.time_window",
        DELETE,
        "transforms[0].config.time_window: required field is missing",
    ),
    (
        "v3",
        "transforms[0].config.time_window",
        3600,
        'transforms[0].config.time_window: must be a duration string such as "30s", "1h" or "1d", got 3600',
    ),
    (
        "v3",
        "transforms[0].config.time_window",
        "1 hour",
        'transforms[0].config.time_window: \'1 hour\' is not a duration (e.g. "30s", "1h30m", "1d12h", "168h0m0s")',
    ),
    (
        "v3",
        "transforms[0].source_id",
        "orders",
        "transforms[0].source_id: transform at index 0 references unknown source_id 'orders'",
    ),
    (
        "v3",
        "transforms[0].type",
        "enrich",
        "transforms[0].type: transform at index 0 has unsupported type 'enrich'",
    ),
    (
        "v3",
        "transforms[1]",
        {"type": "dedup", "source_id": "users", "config": {"key": "user.id", "time_window": "2h"}},
        "transforms[1]: at most one dedup transform per source; 'users' already has one",
    ),
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
        "Varchar",
        "sink.mapping[0].column_type: unsupported ClickHouse column type 'Varchar': unknown ClickHouse type 'Varchar'",
    ),
    (
        "v3",
        "sink.mapping[0].column_type",
        "Bool",
        "sink.mapping[0].column_type: a string field cannot be written to a Bool column (allowed: Date, Date32, "
        "DateTime, DateTime64, Decimal, Decimal128, Decimal256, Decimal32, Decimal64, Enum16, Enum8, FixedString, "
        "IPv4, IPv6, JSON, String, UUID)",
    ),
    (
        "v3",
        "sink.mapping[0].column_name",
        "user.id",
        "sink.mapping[0].column_name: 'user.id' is not a plain column name (letters, digits, _)",
    ),
    (
        "v3",
        "sink.mapping[1].column_name",
        "event_id",
        "sink: mapping writes column(s) event_id more than once",
    ),
    (
        "v1",
        "source.topics[0].deduplication.id_field",
        "id",
        "source.topics[0].deduplication.id_field: dedup key 'id' not found in schema_fields for source 'users'",
    ),
    (
        "v1",
        "source.topics[0].deduplication.time_window",
        "8d",
        "source.topics[0].deduplication.time_window: 8d exceeds the 7d maximum",
    ),
    (
        "v1",
        "sink.table_mapping[0].field_name",
        "id",
        "sink.table_mapping[0].field_name: mapping field 'id' not found in schema for source_id 'users'",
    ),
    (
        "v1",
        "source.topics[0].schema",
        DELETE,
        "source.topics[0].schema.fields: required field is missing: streamsift needs the message schema (field names and types)",
    ),
    ("v1", "sink.host", "", "sink.host: clickhouse host cannot be empty"),
    (
        "v1",
        "sink.table_mapping",
        DELETE,
        "sink.table_mapping: no column mapping found: map at least one field to a ClickHouse column",
    ),
    (
        "v2",
        "schema.fields[0].source_id",
        "orders",
        "schema.fields[0].source_id: 'orders' is not a source of this pipeline (sources: 'users')",
    ),
    (
        "v2",
        "schema.fields[0].column_type",
        DELETE,
        "schema.fields[0].column_type: column type cannot be empty",
    ),
    (
        "v2",
        "schema.fields[1].column_type",
        "Float64",
        "schema.fields[1].column_type: a string field cannot be written to a Float64 column (allowed: Date, Date32, "
        "DateTime, DateTime64, Decimal, Decimal128, Decimal256, Decimal32, Decimal64, Enum16, Enum8, FixedString, "
        "IPv4, IPv6, JSON, String, UUID)",
    ),
    (
        "v2",
        "source.topics[0].deduplication.key",
        "nope",
        "source.topics[0].deduplication.key: dedup key 'nope' not found in schema_fields for source 'users'",
    ),
]


@pytest.mark.parametrize(
    ("version", "path", "value", "expected"),
    INVALID,
    ids=[f"{c[0]}:{c[1]}={c[2]!r}"[:80] for c in INVALID],
)
def test_invalid_glassflow_document_names_the_glassflow_field(
    version: str, path: str, value: object, expected: str
) -> None:
    assert problems(changed(example(version), path, value)) == [expected]


def test_problems_from_our_model_are_reported_in_glassflow_paths() -> None:
    doc = changed(example("v3"), "sources[0].schema_fields[1].name", "@user")
    doc = changed(doc, "sink.mapping[1].name", "@user")
    assert problems(doc) == [
        "sources[0].schema_fields[1].name: '@user' is not a field path: use names of letters, digits "
        "and _ joined by dots, e.g. user.id"
    ]


def test_several_problems_are_reported_together() -> None:
    doc = changed(example("v3"), "transforms[0].config.key", "id")
    doc = changed(doc, "sink.connection_params.host", "")
    doc = changed(doc, "sources[0].consumer_group_initial_offset", "middle")
    assert problems(doc) == [
        "sources[0].consumer_group_initial_offset: invalid consumer_group_initial_offset; allowed values: earliest or latest",
        "transforms[0].config.key: dedup key 'id' not found in schema_fields for source 'users'",
        "sink.connection_params.host: clickhouse host cannot be empty",
    ]


def test_not_an_object() -> None:
    with pytest.raises(ConfigError, match="a GlassFlow pipeline must be a JSON object"):
        convert_glassflow([])  # type: ignore[arg-type]


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix] if prefix else []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in items:
        found.extend(_paths(value, (*prefix, key)))
    return found


@pytest.mark.parametrize("version", VERSIONS)
def test_junk_anywhere_in_a_join_example_is_a_config_error_not_a_crash(version: str) -> None:
    """Any value replaced by a value of another shape (or removed) gives a pipeline or a
    ConfigError naming a field, never an exception from the converter itself."""
    doc = join_example(version)
    junk = [None, 0, True, "", "x", [], {}, [1], {"a": 1}, "left", "-1h", DELETE]
    checked = 0
    for path in _paths(doc):
        for value in junk:
            bad = copy.deepcopy(doc)
            node: Any = bad
            for key in path[:-1]:
                node = node[key]
            if value is DELETE:
                del node[path[-1]]
            else:
                node[path[-1]] = value
            try:
                convert_glassflow(bad)
            except ConfigError as exc:
                assert exc.problems and all(isinstance(p, str) for p in exc.problems)
            checked += 1
    assert checked > 500


def test_problems_in_a_translated_v3_expression_name_the_glassflow_expression() -> None:
    doc = changed(
        example("v3"),
        "transforms[1]",
        {"type": "filter", "source_id": "users", "config": {"expression": "nickname == 'x'"}},
    )
    assert problems(doc)[0].startswith("transforms[1].config.expression: unknown field 'nickname'")
