"""What each field type accepts, table-driven; the fast (pyarrow) and reference paths agree."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streamsift.config.types import FieldType
from streamsift.transforms.parse import FieldSpec, JsonParser

UTC = timezone.utc

CASES = [
    # (type, JSON value, expected value or None, expected error fragment or None)
    (FieldType.STRING, '"abc"', "abc", None),
    (FieldType.STRING, "12", None, "expected string, got number"),
    (FieldType.INT, "12", 12, None),
    (FieldType.INT, "12.5", None, "expected int, got number"),
    (FieldType.INT, '"12"', None, "expected int, got string"),
    (FieldType.INT, "true", None, "expected int, got boolean"),
    (FieldType.INT, "9223372036854775808", None, "does not fit a 64-bit integer"),
    (FieldType.FLOAT, "12", 12.0, None),
    (FieldType.FLOAT, "1.5", 1.5, None),
    (FieldType.FLOAT, '"1.5"', None, "expected float, got string"),
    (FieldType.BOOL, "false", False, None),
    (FieldType.BOOL, "0", None, "expected bool, got number"),
    (
        FieldType.TIMESTAMP,
        '"2024-01-02T03:04:05Z"',
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        None,
    ),
    (FieldType.TIMESTAMP, '"2024-01-02 03:04:05"', datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), None),
    (
        FieldType.TIMESTAMP,
        '"2024-01-02T05:04:05+02:00"',
        datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        None,
    ),
    (FieldType.TIMESTAMP, "1704164645", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), None),
    (FieldType.TIMESTAMP, '"yesterday"', None, "is not an ISO-8601 timestamp"),
    (FieldType.ARRAY, '["a", "b"]', ["a", "b"], None),
    (FieldType.ARRAY, "[1, 2]", None, "expected an array of strings"),
    (FieldType.ARRAY, '"a"', None, "expected array, got string"),
    (FieldType.MAP, '{"a": "x", "b": 2}', [("a", "x"), ("b", "2")], None),
    (FieldType.JSON, '{"a": [1, 2]}', '{"a":[1,2]}', None),
    (FieldType.STRING, "null", None, None),
]


@pytest.mark.parametrize(("ftype", "raw", "value", "error"), CASES)
def test_field_types(ftype, raw, value, error):
    parser = JsonParser([FieldSpec("v", "v", ftype)])
    result = parser.parse([f'{{"v": {raw}}}'.encode()])
    if error:
        assert result.errors[0] is not None and error in result.errors[0]
        assert result.errors[0].startswith("field 'v': ")
    else:
        assert result.errors == [None]
        got = result.table.column("v").to_pylist()[0]
        assert got == value


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"null", "payload must be a JSON object, got null"),  # crashes pyarrow 26 if passed on
        (b"  null", "payload must be a JSON object, got null"),
        (b"[1]", "payload must be a JSON object, got array"),
        (b'"x"', "payload must be a JSON object, got string"),
        (b"{bad", "malformed JSON"),
        (b"\xff\xfe", "malformed JSON"),
        (None, "empty payload"),
        (b"", "malformed JSON"),
        (b'{"a": 1} {"a": 2}', "malformed JSON"),
    ],
)
def test_bad_payloads_are_flagged_not_raised(payload, error):
    parser = JsonParser([FieldSpec("a", "a", FieldType.INT)])
    result = parser.parse([b'{"a": 1}', payload, b'{"a": 3}'])
    assert result.errors[0] is None and result.errors[2] is None
    assert result.errors[1] is not None and error in result.errors[1], result.errors[1]
    assert result.table.column("a").to_pylist() == [1, None, 3]


def test_nested_paths_and_missing_fields():
    parser = JsonParser(
        [
            FieldSpec("user.id", "user__id", FieldType.STRING),
            FieldSpec("user.age", "user__age", FieldType.INT),
        ]
    )
    result = parser.parse(
        [b'{"user": {"id": "u1", "age": 3}}', b'{"user": null}', b"{}", b'{"user": {"id": "u2"}}']
    )
    assert result.errors == [None] * 4
    assert result.table.to_pylist() == [
        {"user__id": "u1", "user__age": 3},
        {"user__id": None, "user__age": None},
        {"user__id": None, "user__age": None},
        {"user__id": "u2", "user__age": None},
    ]


def test_fast_path_is_used_for_clean_batches_and_matches_reference():
    parser = JsonParser(
        [FieldSpec("a", "a", FieldType.INT), FieldSpec("t", "t", FieldType.TIMESTAMP)]
    )
    values = [b'{"a": %d, "t": "2024-01-01T00:00:0%dZ"}' % (i, i) for i in range(5)]
    fast = parser._parse_fast(values)
    assert fast is not None
    assert fast.to_pylist() == parser._parse_slow(values).table.to_pylist()
