"""v3 pipelines of one source: sources, transforms (dedup, filter, stateless) and refusals."""

from __future__ import annotations

import copy

from streamsift.config import parse_pipeline
from streamsift.config.glassflow import convert_glassflow

from .documents import DELETE, changed, example, names_the_field, problems


def test_no_dedup_transform_means_no_dedup() -> None:
    doc = changed(example("v3"), "transforms", [])
    assert "dedup" not in convert_glassflow(doc)


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
        "comparisons, &&, ||, !, arithmetic, literals, field paths, in lists, ??, map['key'], "
        "{'key': value} maps, contains/startsWith/endsWith, toFloat(), toInt(), upper(), "
        "lower(), trim(), hasPrefix(), hasSuffix(), containsStr()"
    ]
    doc["transforms"][2]["config"]["transforms"][1]["expression"] = "-(2 + 3) % 2"
    out = convert_glassflow(doc)
    assert out["filter"] == "((`user.id` != '') AND (NOT ((`user.name` IN ('bot', 'x')))))"
    assert out["transform"] == [{"name": "n", "expression": "((-((2 + 3))) % 2)", "type": "int"}]
    assert parse_pipeline(doc).filter == out["filter"]


def test_otlp_source_imports_with_its_predefined_fields() -> None:
    sink = copy.deepcopy(example("v3")["sink"])
    sink["mapping"] = [
        {"name": "body", "column_name": "Body", "column_type": "String"},
        {"name": "resource_attributes.service.name", "column_name": "Svc", "column_type": "String"},
    ]
    doc = {
        "version": "v3",
        "pipeline_id": "otel-logs",
        "sources": [{"type": "otlp.logs", "source_id": "logs"}],
        "sink": sink,
    }
    pipeline = parse_pipeline(doc)
    assert pipeline.primary_source.type.value == "otlp.logs"
    assert pipeline.primary_source.topic == "streamsift-otlp-otel-logs-logs"
    assert pipeline.primary_source.schema_.field("resource_attributes.service.name") is not None


def test_otlp_dedup_on_a_composite_key_of_fields() -> None:
    """GlassFlow's OTLP example dedups on an expr-lang map of fields: our key list."""
    sink = copy.deepcopy(example("v3")["sink"])
    sink["mapping"] = [{"name": "span_id", "column_name": "SpanId", "column_type": "String"}]
    doc = {
        "version": "v3",
        "pipeline_id": "otel-traces",
        "sources": [{"type": "otlp.traces", "source_id": "traces"}],
        "transforms": [
            {
                "type": "dedup",
                "source_id": "traces",
                "config": {"key": '{"trace_id":trace_id, "span_id":span_id}', "time_window": "1h"},
            }
        ],
        "sink": sink,
    }
    assert parse_pipeline(doc).dedup.key == ("trace_id", "span_id")
    doc["transforms"][0]["config"]["key"] = '{"trace_id":trace_id,"x":x}'
    assert problems(doc) == [
        "transforms[0].config.key: dedup key 'x' not found in schema_fields for source 'traces'"
    ]


def test_otlp_source_refusals_name_the_field() -> None:
    sink = copy.deepcopy(example("v3")["sink"])
    doc = {
        "version": "v3",
        "pipeline_id": "otel-logs",
        "sources": [{"type": "otlp.profiles", "source_id": "p"}],
        "sink": sink,
    }
    assert problems(doc) == [
        "sources[0].type: unsupported source type 'otlp.profiles'; use kafka, otlp.logs, "
        "otlp.traces or otlp.metrics"
    ]
    doc["sources"] = [{"type": "otlp.logs", "source_id": "logs", "topic": "t"}]
    assert "sources[0].topic: an OTLP source must not declare topic" in problems(doc)
    assert (
        "sink.mapping[0].name: mapping field 'event_id' not found in schema for source_id 'logs'"
        in problems(doc)
    )


def test_schema_registry_without_a_binary_format_is_refused() -> None:
    doc = changed(example("v3"), "sources[0].schema_registry", {"url": "http://registry:8081"})
    assert problems(doc) == ["sources[0].schema_registry: used only with format avro or protobuf"]


def test_problems_in_a_translated_v3_expression_name_the_glassflow_expression() -> None:
    doc = changed(
        example("v3"),
        "transforms[1]",
        {"type": "filter", "source_id": "users", "config": {"expression": "nickname == 'x'"}},
    )
    assert problems(doc)[0].startswith("transforms[1].config.expression: unknown field 'nickname'")


# (format, path, value, the problem reported) in v3 sources and transforms, each on the version's example.
INVALID = [
    ("v3", "sources", [], "sources: pipeline must have at least one source"),
    (
        "v3",
        "sources[0].source_id",
        "",
        "sources[0].source_id: source at index 0 has empty source_id",
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
]


test_invalid_glassflow_document_names_the_glassflow_field = names_the_field(INVALID)
