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


def test_v1_join_is_refused() -> None:
    doc = example("v1")
    topic = copy.deepcopy(doc["source"]["topics"][0])
    topic["name"] = "orders"
    doc["source"]["topics"].append(topic)
    doc["join"] = {
        "enabled": True,
        "type": "temporal",
        "sources": [
            {
                "source_id": "users",
                "join_key": "user.id",
                "time_window": "1h",
                "orientation": "left",
            },
            {
                "source_id": "orders",
                "join_key": "user.id",
                "time_window": "1h",
                "orientation": "right",
            },
        ],
    }
    assert problems(doc) == ["join: GlassFlow join pipelines are not supported yet"]


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


def test_v2_filter_and_stateless_are_refused() -> None:
    doc = changed(example("v2"), "filter", {"enabled": True, "expression": "tags != nil"})
    doc = changed(
        doc,
        "stateless_transformation",
        {"enabled": True, "type": "expr_lang_transform", "config": {"transform": []}},
    )
    assert problems(doc) == [
        "filter: GlassFlow filters are not supported yet",
        "stateless_transformation: GlassFlow stateless transforms (computed fields) are not supported yet",
    ]


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
