"""Every ClickHouse column type a mapping can name, end to end on the real broker, Spark and
chdb: JSON values -> pipeline -> ClickHouse column -> read back equal (in ClickHouse's own
text form, `toString`), in one pipeline run; values a column cannot take go to the DLQ with
a reason naming the column, and every message is counted."""

from __future__ import annotations

import json

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from streamsift.sinks.dlq_queries import DlqQueries
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration

# (field, field type, column, column type, JSON value, read back as toString(column))
TYPES: list[tuple[str, str, str, str, object, str]] = [
    ("id", "string", "id", "String", "row-1", "row-1"),
    ("dt64", "string", "dt64", "DateTime64", "2024-01-02T03:04:05.123Z", "2024-01-02 03:04:05.123"),
    (
        "dt64tz",
        "string",
        "dt64tz",
        "DateTime64(6, 'Asia/Tokyo')",
        "2024-01-02T03:04:05.123456+02:00",
        "2024-01-02 10:04:05.123456",
    ),
    (
        "dt_ns",
        "string",
        "dt_ns",
        "DateTime64(9)",
        "2024-01-02 03:04:05.5",
        "2024-01-02 03:04:05.500000000",
    ),
    ("dt_unix", "int", "dt_unix", "DateTime64(3, 'UTC')", 1_704_164_645, "2024-01-02 03:04:05.000"),
    (
        "dt_tz",
        "timestamp",
        "dt_tz",
        "DateTime('Europe/Berlin')",
        "2024-01-02T03:04:05Z",
        "2024-01-02 04:04:05",
    ),
    ("d32", "string", "d32", "Date32", "1950-03-04", "1950-03-04"),
    ("dec", "string", "dec", "Decimal(10, 3)", "12345.678", "12345.678"),
    ("dec_num", "float", "dec_num", "Decimal32(2)", 1.5, "1.5"),
    (
        "dec256",
        "string",
        "dec256",
        "Decimal256(20)",
        "12345678901234567890.12345678901234567890",
        "12345678901234567890.1234567890123456789",
    ),
    ("enum_name", "string", "enum_name", "Enum8('a' = 1, 'b' = 2)", "b", "b"),
    ("enum_num", "int", "enum_num", "Enum16('x' = -5, 'y' = 300)", 300, "y"),
    ("enum_text_num", "string", "enum_text_num", "Enum8('a' = 1, 'b' = 2)", "1", "a"),
    ("ip4", "string", "ip4", "IPv4", "10.1.2.3", "10.1.2.3"),
    ("ip6", "string", "ip6", "IPv6", "2001:db8::1", "2001:db8::1"),
    (
        "uuid",
        "string",
        "uuid",
        "UUID",
        "6f1c1e6e-8a4b-4c5e-9f1c-1e6e8a4b4c5e",
        "6f1c1e6e-8a4b-4c5e-9f1c-1e6e8a4b4c5e",
    ),
    ("fixed", "string", "fixed", "FixedString(3)", "abc", "abc"),
    ("tup", "json", "tup", "Tuple(a Int32, b String)", {"a": 1, "b": "x"}, "(1,'x')"),
    ("tup_pos", "json", "tup_pos", "Tuple(Int32, Nullable(String))", [7, None], "(7,NULL)"),
    ("tup_obj", "map", "tup_obj", "Tuple(k String, n UInt16)", {"k": "v", "n": 9}, "('v',9)"),
    ("jnew", "json", "jnew", "JSON", {"a": 1, "b": {"c": "x"}}, '{"a":1,"b":{"c":"x"}}'),
    ("jstr", "json", "jstr", "String", {"a": [1, 2]}, '{"a":[1,2]}'),
    ("obj_str", "map", "obj_str", "String", {"k": "v"}, '{"k":"v"}'),
    ("lc_null", "string", "lc_null", "LowCardinality(Nullable(String))", None, "\\N"),
    ("lc", "string", "lc", "LowCardinality(String)", "low", "low"),
    ("n_int", "int", "n_int", "Nullable(Int32)", None, "\\N"),
    ("u64", "int", "u64", "UInt64", 2**63 - 1, str(2**63 - 1)),
    ("flag", "bool", "flag", "Bool", True, "true"),
    ("arr", "array", "arr", "Array(Nullable(Int64))", [1, 2, None], "[1,2,NULL]"),
    (
        "arr_dt",
        "array",
        "arr_dt",
        "Array(DateTime64)",
        ["2024-01-02T03:04:05.250Z"],
        "['2024-01-02 03:04:05.250']",
    ),
    (
        "arr_map",
        "array",
        "arr_map",
        "Array(Map(LowCardinality(String), String))",
        [{"a": "b"}],
        "[{'a':'b'}]",
    ),
    ("arr_arr", "array", "arr_arr", "Array(Array(String))", [["a", "b"], []], "[['a','b'],[]]"),
    ("map_arr", "map", "map_arr", "Map(String, Array(UInt32))", {"a": [1, 2]}, "{'a':[1,2]}"),
    ("map_int", "map", "map_int", "Map(LowCardinality(String), Int64)", {"a": 5}, "{'a':5}"),
    (
        "deep",
        "json",
        "deep",
        "Map(String, Array(Tuple(t DateTime64(3), v Float64)))",
        {"k": [{"t": "2024-01-02T03:04:05Z", "v": 1.5}]},
        "{'k':[('2024-01-02 03:04:05.000',1.5)]}",
    ),
    (
        "events.name",
        "array",
        "Events.Name",
        "Array(LowCardinality(String))",
        ["start", "stop"],
        "['start','stop']",
    ),
]


def message(**change: object) -> bytes:
    doc: dict[str, object] = {}
    for field, *_, value, _ in TYPES:
        head, _, rest = field.partition(".")
        if rest:
            doc.setdefault(head, {})[rest] = value  # type: ignore[index]
        else:
            doc[field] = value
    doc.update(change)
    return json.dumps(doc).encode()


def test_every_column_type_round_trips_and_misfits_go_to_the_dlq(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    doc = pipeline_doc(
        topic=unique_name,
        fields=fields(*((f, t) for f, t, *_ in TYPES)),
        mapping=mapping(*((f, c, ct) for f, _, c, ct, *_ in TYPES)),
        bootstrap_servers=broker.bootstrap_servers,
        clickhouse={"path": str(chdb_path)},
        sink={"create_table": True, "order_by": ["id"]},
        checkpoint_dir=tmp_path / "checkpoint",
    )
    pipeline = parse_pipeline(doc)
    broker.create_topic(unique_name, 1)
    bad = {
        b"bad-tuple": message(id="row-2", tup={"a": 1, "zz": 2}),
        b"bad-time": message(id="row-3", arr_dt=["not a time"]),
        b"bad-enum": message(id="row-4", enum_name="c"),
    }
    produce_messages(unique_name, [(b"good", message()), *bad.items()])

    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    runner.run(until_caught_up=True)
    writer = runner.writer
    columns = ", ".join(f"toString(`{c}`)" for _, _, c, *_ in TYPES)
    rows = writer.query_rows(f"SELECT {columns} FROM {unique_name}")
    store = DlqQueries(writer, pipeline.dlq_table)
    store.open()
    letters = {x.key: x for x in store.pending(100)}

    # counted: one row, three dead letters, nothing lost
    assert len(rows) + len(letters) == 1 + len(bad)
    expected = {c: shown for _, _, c, _, _, shown in TYPES}
    got = dict(zip((c for _, _, c, *_ in TYPES), rows[0], strict=True))
    assert {c: (v if v is not None else "\\N") for c, v in got.items()} == expected
    # the table has the declared types, in ClickHouse's canonical spelling
    declared = dict(
        writer.query_rows(f"SELECT name, type FROM system.columns WHERE table = '{unique_name}'")
    )
    assert declared["dt64"] == "DateTime64(3)"
    assert declared["Events.Name"] == "Array(LowCardinality(String))"

    assert set(letters) == set(bad)
    tuple_letter = letters[b"bad-tuple"]
    assert (tuple_letter.stage, tuple_letter.error_class) == ("sink", "type_mismatch")
    assert (
        tuple_letter.error
        == "column 'tup' (Tuple(a Int32, b String)): Tuple(a Int32, b String) has no element 'zz'"
    )
    assert tuple_letter.payload == bad[b"bad-tuple"]
    time_letter = letters[b"bad-time"]
    assert time_letter.error == (
        "column 'arr_dt' (Array(DateTime64)): 'not a time' is not an ISO-8601 timestamp"
    )
    enum_letter = letters[b"bad-enum"]
    assert enum_letter.error_class == "clickhouse_691"
    assert "Unknown element 'c' for enum" in enum_letter.error
