"""Which field types go into which ClickHouse columns (checked at validate time, naming the
field, the column and both types), and the sink's shaping of values ClickHouse's own cast
would refuse (pure logic; the round trip through chdb is tests/integration/test_clickhouse_types.py)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pyarrow as pa
import pytest

from streamsift.config import parse_pipeline
from streamsift.config.errors import ConfigError
from streamsift.config.types import FieldType, check_compatible, parse_clickhouse_type
from streamsift.transforms.column_values import arrow_type, needs_shaping, shape_columns
from support.pipeline_docs import fields, mapping, pipeline_doc

UTC = timezone.utc


@pytest.mark.parametrize(
    ("field", "column", "ok"),
    [
        (FieldType.ARRAY, "Array(Map(LowCardinality(String), String))", True),
        (FieldType.ARRAY, "Array(Tuple(a Int32, b DateTime64(9)))", True),
        (FieldType.JSON, "Map(String, Array(Nullable(Int32)))", True),
        (FieldType.JSON, "Tuple(Int32, String)", True),
        (FieldType.MAP, "Tuple(a Int32, b String)", True),
        (FieldType.MAP, "Tuple(Int32, String)", False),
        (FieldType.INT, "Enum16('a' = 1)", True),
        (FieldType.FLOAT, "DateTime64(3)", True),
        (FieldType.STRING, "LowCardinality(Nullable(FixedString(2)))", True),
        (FieldType.STRING, "Date32", True),
        (FieldType.INT, "IPv4", False),
        (FieldType.ARRAY, "Array(AggregateFunction(sum, UInt64))", False),
        (FieldType.JSON, "Nested(a Int32)", False),
        (FieldType.STRING, "Array(String)", False),
        (FieldType.BOOL, "Map(String, String)", False),
    ],
)
def test_field_to_nested_column_compatibility(field: FieldType, column: str, ok: bool) -> None:
    assert (check_compatible(field, parse_clickhouse_type(column)) is None) is ok


@pytest.mark.parametrize(
    ("ftype", "ctype", "message"),
    [
        (
            "array",
            "Int32",
            "sink.mapping[1].type: field 'v' (array) cannot go into column 'c' (Int32) "
            "(an array field can go into: Array, String)",
        ),
        (
            "map",
            "Tuple(Int32, String)",
            "sink.mapping[1].type: field 'v' (map) cannot go into column 'c' (Tuple(Int32, String)): "
            "a JSON object fills a named Tuple(a T, b U) only",
        ),
        (
            "json",
            "Array(AggregateFunction(uniq, String))",
            "sink.mapping[1].type: field 'v' (json) cannot go into column 'c' "
            "(Array(AggregateFunction(uniq, String))): AggregateFunction(uniq, String) is not "
            "supported: aggregate states are made by ClickHouse (use a materialized view)",
        ),
        (
            "json",
            "Array(IntervalDay)",
            "sink.mapping[1].type: field 'v' (json) cannot go into column 'c' "
            "(Array(IntervalDay)): IntervalDay is not supported: not writable from JSON; use String",
        ),
    ],
)
def test_a_misfit_is_refused_at_validate_naming_field_column_and_types(
    ftype: str, ctype: str, message: str
) -> None:
    doc = pipeline_doc(
        fields=fields(("id", "string"), ("v", ftype)),
        mapping=mapping(("id", "id", "String"), ("v", "c", ctype)),
    )
    with pytest.raises(ConfigError) as err:
        parse_pipeline(doc)
    assert message in str(err.value)


def test_datetime64_without_precision_is_precision_3() -> None:
    assert arrow_type(parse_clickhouse_type("DateTime64")) == pa.timestamp("ms", tz="UTC")
    assert arrow_type(parse_clickhouse_type("DateTime64(9, 'UTC')")) == pa.timestamp("ns", tz="UTC")
    assert arrow_type(parse_clickhouse_type("Nullable(Date32)")) == pa.date32()


def test_columns_clickhouse_casts_itself_pass_through_untouched() -> None:
    for arrow, ctype in [
        (pa.string(), "UUID"),
        (pa.string(), "Enum8('a' = 1)"),
        (pa.int64(), "DateTime64(3)"),
        (pa.list_(pa.string()), "Array(UInt64)"),
        (pa.map_(pa.string(), pa.string()), "Map(String, Int32)"),
        (pa.timestamp("us", tz="UTC"), "DateTime('UTC')"),
    ]:
        assert not needs_shaping(arrow, parse_clickhouse_type(ctype)), ctype


def test_shaping_converts_values_and_reports_each_misfit_by_row() -> None:
    table = pa.table(
        {
            "t": pa.array(["2024-01-02T03:04:05Z", "nope", None]),
            "d": pa.array(["1950-03-04", "1950-03-04", "2000-01-01"]),
            "m": pa.array(['{"a": [1, 2]}', '{"a": [1]}', '{"a": ["x"]}']),
        }
    )
    shaped = shape_columns(
        table,
        [
            ("t", parse_clickhouse_type("Nullable(DateTime64(3))")),
            ("d", parse_clickhouse_type("Date32")),
            ("m", parse_clickhouse_type("Map(String, Array(UInt8))")),
        ],
    )
    assert shaped.errors == {
        1: "column 't' (Nullable(DateTime64(3))): 'nope' is not an ISO-8601 timestamp",
        2: "column 'm' (Map(String, Array(UInt8))): 'x' is not an integer",
    }
    assert shaped.table.column("t")[0].as_py() == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert shaped.table.column("d").to_pylist()[0] == date(1950, 3, 4)
    assert shaped.table.column("m")[0].as_py() == [("a", [1, 2])]


def test_an_integer_out_of_its_columns_range_is_a_misfit_not_a_wrapped_value() -> None:
    table = pa.table({"n": pa.array([5, -3, None, 2**32]), "s": pa.array([1, 2, 3, 4])})
    shaped = shape_columns(
        table,
        [("n", parse_clickhouse_type("Nullable(UInt32)")), ("s", parse_clickhouse_type("Int8"))],
    )
    assert shaped.errors == {
        1: "column 'n' (Nullable(UInt32)): -3 is out of range for UInt32",
        3: "column 'n' (Nullable(UInt32)): 4294967296 is out of range for UInt32",
    }
    assert shaped.table.column("n").to_pylist() == [5, None, None, None]
    assert shaped.table.column("s") == table.column("s")  # in range: passed through as is
