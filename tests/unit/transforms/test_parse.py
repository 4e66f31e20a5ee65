"""What each field type accepts, table-driven; the fast (pyarrow) and reference paths agree."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from streamsift.config.types import FieldType
from streamsift.engine.batch_writer import error_class
from streamsift.transforms.parse import FieldSpec, JsonParser, require_present, required_fields

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
    (FieldType.ARRAY, '[1, {"a": 2}, "x"]', ["1", '{"a":2}', "x"], None),
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
        (b"\xff\xfe", "payload is not UTF-8 (byte 0xff at position 0)"),
        (b'{"a": "\xff"}', "payload is not UTF-8 (byte 0xff at position 7)"),
        (b"{\x00\xe9\x00", "payload is not UTF-8"),  # json.loads would guess UTF-16 here
        (None, "empty message"),
        (b"", "empty message"),
        (b"  \n", "empty message"),
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


@pytest.mark.parametrize(
    "payload",
    [
        b'{"a": "\xff"}',  # invalid UTF-8 inside a field that is read
        b'{"a": 1, "other": "\xc3\x28"}',  # ... and inside a field that is ignored
    ],
)
def test_invalid_utf8_is_caught_in_a_clean_batch_too(payload):
    """A batch of objects goes to pyarrow, which does not check UTF-8 by itself."""
    result = JsonParser([FieldSpec("a", "a", FieldType.STRING)]).parse([payload])
    assert result.errors[0] is not None and result.errors[0].startswith("payload is not UTF-8")


USER_FIELDS = [
    FieldSpec("user.id", "user__id", FieldType.STRING),
    FieldSpec("user.name", "user__name", FieldType.STRING),
    FieldSpec("user.email", "user__email", FieldType.STRING),
]


@pytest.mark.parametrize(
    ("user", "kind"),
    [('"just-a-string"', "string"), ("[1, 2]", "array"), ("7", "number"), ("true", "boolean")],
)
def test_a_parent_that_is_not_an_object_is_a_type_mismatch(user, kind):
    parser = JsonParser(USER_FIELDS)
    result = parser.parse([b'{"user": {"id": "u1"}}', f'{{"user": {user}}}'.encode()])
    assert result.errors == [None, f"field 'user.id': 'user' is {kind}, expected an object"]


def test_a_null_parent_reads_its_fields_as_null():
    result = JsonParser(USER_FIELDS).parse([b'{"user": null}', b'{"user": {"id": "u1"}}'])
    assert result.errors == [None, None]
    assert result.table.column("user__id").to_pylist() == [None, "u1"]


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b'{"a": {"b": {"c": 1}}}', None),
        (b'{"a": {"b": "x"}}', "field 'a.b.c': 'a.b' is string, expected an object"),
        (b'{"a": []}', "field 'a.b.c': 'a' is array, expected an object"),
        (b'{"a": {"b": null}}', None),
        (b'{"a": null}', None),
        (b'{"a": {}}', None),
    ],
)
def test_the_parent_rule_holds_at_every_depth(payload, error):
    parser = JsonParser([FieldSpec("a.b.c", "a__b__c", FieldType.INT)])
    for batch in ([payload], [b'{"a": {"b": {"c": 2}}}', payload]):  # alone, and mixed
        result = parser.parse(batch)
        assert result.errors[-1] == error


KEY = FieldSpec("id", "id", FieldType.STRING)
TIME = FieldSpec("ts", "ts", FieldType.INT)
NESTED_KEY = FieldSpec("user.id", "user__id", FieldType.STRING)


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b'{"ts": 1}', "field 'id' is missing (needed as the dedup key)"),
        (b'{"id": null, "ts": 1}', "field 'id' is null (needed as the dedup key)"),
        (b'{"id": "a"}', "field 'ts' is missing (needed as the event time)"),
        (b'{"id": "a", "ts": null}', "field 'ts' is null (needed as the event time)"),
        (b'{"id": "a", "ts": 1}', None),
    ],
)
def test_required_fields_say_null_or_missing_and_why(payload, error):
    required = required_fields([KEY], TIME)
    parser = JsonParser([KEY, TIME])
    for batch in ([payload], [b'{"id": "x", "ts": 0}', payload]):
        result = parser.parse(batch)
        require_present(result, batch, required)
        assert result.errors[-1] == error
        if error:
            assert error_class(error) == "missing_field"


def test_a_required_field_under_a_null_parent_names_it():
    required = required_fields([NESTED_KEY], NESTED_KEY)
    payloads = [b'{"user": null}', b'{"user": {}}', b"{}"]
    result = JsonParser([NESTED_KEY]).parse(payloads)
    require_present(result, payloads, required)
    why = "(needed as the dedup key and the event time)"
    assert result.errors == [
        f"field 'user.id' is null {why}: 'user' is null",
        f"field 'user.id' is missing {why}",
        f"field 'user.id' is missing {why}",
    ]


@pytest.mark.parametrize(
    ("message", "cls"),
    [
        ("empty message", "not_an_object"),
        ("payload is not UTF-8 (byte 0xff at position 0)", "malformed_json"),
        ("malformed JSON: Expecting value at position 0", "malformed_json"),
        ("field 'user.id': 'user' is string, expected an object", "type_mismatch"),
        # a value that happens to read like a reason is still a type mismatch
        ("field 'ts': 'id is missing (needed' is not an ISO-8601 timestamp", "type_mismatch"),
    ],
)
def test_error_classes(message, cls):
    assert error_class(message) == cls


def test_a_literal_dotted_key_is_read_like_a_nested_path() -> None:
    """GlassFlow reads `Events.Name` from `{"Events.Name": ...}` first, else from
    `{"Events": {"Name": ...}}`; so do both parse paths (batch and record by record)."""
    specs = [FieldSpec("Events.Name", "Events__Name", FieldType.ARRAY)]
    values = [b'{"Events.Name": ["a"]}', b'{"Events": {"Name": ["b"]}}', b'{"Events": null}']
    fast = JsonParser(specs).parse(values)
    slow = JsonParser(specs).parse([*values, b"{bad"])
    assert fast.table.column(0).to_pylist() == [["a"], ["b"], None]
    assert slow.table.column(0).to_pylist() == [["a"], ["b"], None, None]
    assert fast.errors == [None] * 3 and slow.errors[:3] == [None] * 3


GOOD = [b'{"id": "a", "ts": 1}', b'  {"id": "b", "ts": 2}', '{"id": "é", "ts": 3}'.encode()]


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (b"{bad", "malformed JSON"),
        (b"null", "payload must be a JSON object, got null"),
        (b"", "empty message"),
        (None, "empty message"),
        (b'{"id": "\xff"}', "payload is not UTF-8"),
        (b'{"id": 5, "ts": 4}', "field 'id': expected string, got number"),
    ],
)
def test_one_bad_record_in_a_batch_fails_only_itself(bad, error):
    """A batch the batch-at-once reader refuses is parsed record by record: the good records
    get the same rows as in a batch of their own, the bad one its reason."""
    parser = JsonParser([KEY, TIME])
    alone = parser.parse(GOOD)
    assert alone.errors == [None] * 3  # leading whitespace and non-ASCII stay on the fast path
    mixed = parser.parse([GOOD[0], bad, *GOOD[1:]])
    assert mixed.errors[0] is None and mixed.errors[2:] == [None, None]
    assert mixed.errors[1] is not None and mixed.errors[1].startswith(error)
    rows = mixed.table.to_pylist()
    assert [rows[0], *rows[2:]] == alone.table.to_pylist()
    assert rows[1] == {"id": None, "ts": None}


@pytest.mark.parametrize(
    "bad_at",
    [[0], [700], [999], [3, 998], list(range(0, 1000, 50))],  # the last: bad all over
)
def test_a_large_batch_with_bad_records_parses_as_record_by_record(bad_at):
    """A refused batch is split: the good parts parse in one go, and the result is the
    record-by-record reference's, row for row and reason for reason."""
    values = [f'{{"id": "k{i}", "ts": {i}}}'.encode() for i in range(1000)]
    for i in bad_at:
        values[i] = [b"{bad", None, b'{"id": 5}', b"[]"][i % 4]
    parser = JsonParser([KEY, TIME])
    got = parser.parse(values)
    reference = parser._parse_slow(values)
    assert got.errors == reference.errors
    assert got.table.to_pylist() == reference.table.to_pylist()
    assert [i for i, e in enumerate(got.errors) if e] == bad_at


def test_payloads_spread_over_lines_still_parse():
    values = [f'{{"id": "k{i}",\n "ts": {i}}}'.encode() for i in range(600)]
    got = JsonParser([KEY, TIME]).parse(values)
    assert got.errors == [None] * 600
    assert got.table.column("ts").to_pylist() == list(range(600))
