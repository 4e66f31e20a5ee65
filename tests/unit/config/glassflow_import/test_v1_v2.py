"""v1 and v2 pipelines of one topic: dedup, schema, filter, stateless transforms, refusals."""

from __future__ import annotations

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.glassflow import convert_glassflow, import_glassflow

from .documents import DELETE, changed, example, names_the_field, problems


def test_v1_and_v2_dedup_key_spellings() -> None:
    v2 = changed(
        example("v2"),
        "source.topics[0].deduplication",
        {"enabled": True, "id_field": "user.id", "time_window": "2h"},
    )
    assert convert_glassflow(v2)["dedup"] == {"key": "user.id", "time_window": "2h"}
    v1 = changed(example("v1"), "source.topics[0].deduplication.enabled", False)
    assert "dedup" not in convert_glassflow(v1)


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
            "arithmetic, literals, field paths, in lists, ??, map['key'], {'key': value} maps, "
            "contains/startsWith/endsWith, toFloat(), toInt(), upper(), lower(), trim(), "
            "hasPrefix(), hasSuffix(), containsStr()"
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
        # the output replaces the schema field (as GlassFlow's output replaces the record):
        # the mapping's `tags` column now takes an int
        [
            "schema.fields[5].column_type: field 'tags' (int) cannot go into column 'tags' "
            "(Array(String)) (an int field can go into: BFloat16, Bool, DateTime, DateTime64, "
            "Decimal, Decimal128, Decimal256, Decimal32, Decimal64, Enum, Enum16, Enum8, Float32, "
            "Float64, Int128, Int16, Int256, Int32, Int64, Int8, String, UInt128, UInt16, "
            "UInt256, UInt32, UInt64, UInt8)"
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


def test_v2_otlp_source_is_refused() -> None:
    doc = changed(example("v2"), "source.type", "otlp.traces")
    assert problems(doc) == [
        "source.type: OTLP sources are read from v3 documents (version: v3); this one is v2"
    ]


# (format, path, value, the problem reported), each on the version's example.
INVALID = [
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
        "schema.fields[1].column_type: field 'user.id' (string) cannot go into column 'user_id' (Float64) (a string "
        "field can go into: Date, Date32, DateTime, DateTime64, Decimal, Decimal128, Decimal256, Decimal32, "
        "Decimal64, Enum, Enum16, Enum8, FixedString, IPv4, IPv6, JSON, String, UUID)",
    ),
    (
        "v2",
        "source.topics[0].deduplication.key",
        "nope",
        "source.topics[0].deduplication.key: dedup key 'nope' not found in schema_fields for source 'users'",
    ),
]


test_invalid_glassflow_document_names_the_glassflow_field = names_the_field(INVALID)
