"""Joins: v3 `join.left_source/right_source` and v1/v2 `join.sources[]`, examples and errors."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from streamsift.config import ConfigError, load_pipeline, parse_pipeline
from streamsift.config.glassflow import convert_glassflow

from .documents import DELETE, EXAMPLES, VERSIONS, changed, join_example, kafka_source, problems

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
        "mode": "latest",
        "left": {"source": "orders", "key": "user_id", "time_window": "1h"},
        "right": {"source": "users", "key": "user.id", "time_window": "1h"},
        "output": [
            {"from": "left", "field": "order_id"},
            {"from": "right", "field": "user.name", "as": "user_name"},
        ],
    }
    pipeline = parse_pipeline(JOIN_V3)
    assert pipeline.join is not None and pipeline.primary_source.topic == "orders"


def test_two_sources_without_join_are_refused() -> None:
    doc = copy.deepcopy(JOIN_V3)
    doc["join"] = {"enabled": False}
    assert problems(doc) == [
        "sources: pipelines with 2 sources are not supported yet; streamsift reads one Kafka topic per pipeline"
    ]


def test_v3_join_errors_name_the_glassflow_field() -> None:
    doc = changed(JOIN_V3, "join.right_source.key", "user.nope")
    assert problems(doc) == [
        "join.right_source.key: join key 'user.nope' not found in schema_fields for source 'users'"
    ]
    doc = changed(JOIN_V3, "join.output_fields[1].name", "nope")
    assert problems(doc) == [
        "join.output_fields[1].name: join output field 'nope' not found in schema for source 'users'"
    ]


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
    assert (doc["join"]["type"], doc["join"]["mode"]) == ("inner", "latest")
    assert doc["join"]["left"] == {"source": "orders", "key": "user_id", "time_window": "1h"}
    assert doc["join"]["right"] == {"source": "users", "key": "user.id", "time_window": "1h"}
    assert doc["sink"]["mapping"] == [
        {"field": "order_id", "column": "order_id", "type": "String"},
        {"field": "amount", "column": "amount", "type": "Float64"},
        {"field": "user_name", "column": "user_name", "type": "String"},
    ]
    assert doc["sink"]["clickhouse"]["password"] == "secret"
    pipeline = load_pipeline(EXAMPLES / f"glassflow-join-{version}.json")
    assert pipeline.join is not None and pipeline.primary_source.topic == "orders"
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
        "mode": "latest",
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
        "user-name",
        [
            "sink.table_mapping[2].column_name: 'user-name' is not a column name (letters, "
            "digits, _; dots join the parts of a Nested column, e.g. Events.Timestamp)"
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
