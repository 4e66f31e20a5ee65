"""GlassFlow value spellings: Go durations, field type names, ClickHouse column types."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streamsift.config.glassflow import convert_glassflow, import_glassflow, parse_go_duration

from .documents import changed, example


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
