"""Dedup modes, filters, computed fields and joins in the pipeline document: what validates,
and the message (naming the field) for what does not."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.models import DedupMode, JoinType
from support.pipeline_docs import fields, join_doc, join_source, mapping, pipeline_doc

SINGLE: dict[str, Any] = pipeline_doc(
    name="p1",
    bootstrap_servers="k:9092",
    topic="orders",
    fields=fields(
        ("id", "string"),
        ("amount", "float"),
        ("qty", "int"),
        ("name", "string"),
        ("updated", "timestamp"),
    ),
    clickhouse={"path": "/tmp/x"},
    table="t",
    mapping=mapping(("id", "id", "String")),
)


def source(name: str, topic: str, entries: list[tuple[str, str]]) -> dict[str, Any]:
    return join_source(name, topic, fields(*entries), bootstrap_servers="k:9092")


JOINED: dict[str, Any] = join_doc(
    name="j1",
    sources=[
        source("orders", "o", [("order_id", "string"), ("user_id", "string"), ("n", "int")]),
        source("users", "u", [("user.id", "string"), ("user.name", "string"), ("n", "float")]),
    ],
    join={
        "type": "left",
        "left": {"source": "orders", "key": "user_id", "time_window": "1h"},
        "right": {"source": "users", "key": "user.id", "time_window": "30m"},
        "output": [
            {"from": "left", "field": "order_id"},
            {"from": "right", "field": "user.name", "as": "name"},
        ],
    },
    clickhouse={"path": "/tmp/x"},
    table="t",
    mapping=mapping(("order_id", "order_id", "String"), ("name", "name", "Nullable(String)")),
)


def edit(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    for path, value in changes.items():
        node: Any = doc
        parts = path.split("__")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node[part]
        last = parts[-1]
        if value is None:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value
    return doc


def problem(doc: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_pipeline(doc)
    assert len(info.value.problems) == 1, info.value.problems
    return info.value.problems[0]


# ------------------------------------------------------------------ dedup modes


def test_mode_last_needs_the_version_mapped_and_orders_by_key() -> None:
    doc = edit(SINGLE, dedup={"key": "id", "time_window": "1h", "mode": "last"})
    assert "map the version field '_kafka.offset' to a column" in problem(doc)
    doc["sink"]["mapping"].append({"field": "_kafka.offset", "column": "_v", "type": "UInt64"})
    p = parse_pipeline(doc)
    assert p.dedup is not None and p.dedup.mode is DedupMode.LAST
    assert p.replacing_version_column == "_v"
    assert p.table_order_by == ("id",)
    doc["sink"]["order_by"] = ["_v"]
    assert problem(doc).startswith("sink.order_by: with dedup.mode last the table is ordered")


def test_mode_last_version_field_and_column_type() -> None:
    doc = edit(
        SINGLE,
        dedup={"key": "id", "time_window": "1h", "mode": "last", "version_field": "updated"},
    )
    doc["sink"]["mapping"].append(
        {"field": "updated", "column": "updated", "type": "Nullable(DateTime64(3))"}
    )
    assert "must be a non-Nullable UInt*/Int*, Date, DateTime or DateTime64" in problem(doc)
    doc["sink"]["mapping"][-1]["type"] = "DateTime64(3)"
    assert parse_pipeline(doc).replacing_version_column == "updated"
    doc["dedup"]["version_field"] = "name"
    assert problem(doc).startswith("dedup.version_field: 'name' must be an int or timestamp")


@pytest.mark.parametrize(
    ("dedup", "expected"),
    [
        ({"time_window": "1h", "mode": "exact", "key": "id"}, "dedup.key: mode exact compares"),
        ({"time_window": "1h", "mode": "first"}, "dedup.key: required field is missing"),
        ({"time_window": "1h", "version_field": "qty", "key": "id"}, "dedup: version_field: only"),
    ],
)
def test_dedup_mode_errors(dedup: dict, expected: str) -> None:
    assert problem(edit(SINGLE, dedup=dedup)).startswith(expected)


def test_mode_exact_takes_no_key() -> None:
    p = parse_pipeline(edit(SINGLE, dedup={"time_window": "1h", "mode": "exact"}))
    assert p.dedup is not None and p.dedup.key == ()


# ------------------------------------------------------------------ filters, transforms


def test_transforms_are_usable_in_the_mapping() -> None:
    doc = edit(
        SINGLE,
        transform=[
            {"name": "total", "expression": "amount * qty", "type": "float"},
            {"name": "big", "expression": "total > 100", "type": "bool"},
        ],
        filter="big OR name = 'vip'",
    )
    doc["sink"]["mapping"].append({"field": "total", "column": "total", "type": "Float64"})
    doc["sink"]["mapping"].append({"field": "_kafka.offset", "column": "off", "type": "UInt64"})
    p = parse_pipeline(doc)
    assert [t.name for t in p.transform] == ["total", "big"]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"filter": "amout > 1"}, "filter: unknown field 'amout'"),
        ({"filter": "name > 5"}, "filter: type mismatch in name > 5: cannot compare"),
        ({"filter": "amount >"}, "filter: not valid Spark SQL"),
        ({"filter": "amount + 1"}, "filter: must be true/false, but gives float"),
        ({"filter": "lowr(name) = 'a'"}, "filter: unknown function lowr()"),
        ({"filter": "count(id) > 1"}, "filter: aggregate function COUNT(id) is not allowed"),
        (
            {"transform": [{"name": "x", "expression": "upper(name)", "type": "int"}]},
            "transform[0].type: type mismatch: the expression gives string, declared int",
        ),
        (
            {"transform": [{"name": "x", "expression": "nope + 1", "type": "int"}]},
            "transform[0].expression: unknown field 'nope'",
        ),
        (
            {"transform": [{"name": "amount", "expression": "1", "type": "int"}]},
            "transform[0].name: 'amount' is already a field",
        ),
        (
            {"transform": [{"name": "_x", "expression": "1", "type": "int"}]},
            "transform[0].name: '_x' is not a field name",
        ),
    ],
)
def test_expression_errors_name_the_entry(changes: dict, expected: str) -> None:
    assert expected in problem(edit(SINGLE, **changes))


# ------------------------------------------------------------------ join


def test_join_document_validates() -> None:
    p = parse_pipeline(JOINED)
    assert p.join is not None and p.join.type is JoinType.LEFT
    assert p.primary_source.id == "orders"  # the left source stands for the pipeline in summaries
    assert [s.id for s in p.inputs] == ["orders", "users"]
    assert p.join.lateness.total_seconds() == 3600  # the larger window by default


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"join__left__source": "nope"}, "join.left.source: 'nope' is not a source"),
        ({"join__right__key": "user.name2"}, "join.right.key: 'user.name2' is not a field"),
        ({"join__right__key": "n"}, "join.right.key: 'n' is float but the left key 'user_id'"),
        ({"join__left__time_window": "8d"}, "join.left.time_window: 8d exceeds the 7d maximum"),
        ({"join__output__1__as": "order_id"}, "join.output[1].as: the output name 'order_id'"),
        (
            {"join__output__1__field": "zz"},
            "join.output[1].field: 'zz' is not a field of the right",
        ),
        ({"sink__mapping__1__field": "user.name"}, "sink.mapping[1].field: 'user.name' is not"),
        ({"join": None}, "join: two sources need a join"),
        ({"sources__1__topic": "o"}, "sources[1].topic: the two sources must read different"),
        ({"sources__1__name": "orders"}, "sources[1].name: both sources are called 'orders'"),
        (
            {"sources__0__dedup": {"key": "order_id", "time_window": "1h", "mode": "last"}},
            "sources[0].dedup.mode: mode last is not supported on joined sources",
        ),
        ({"sources__1__filter": "user.nam = 'x'"}, "sources[1].filter: unknown field 'user.nam'"),
        ({"dedup": {"key": "x", "time_window": "1h"}}, "dedup: with two sources, dedup goes"),
    ],
)
def test_join_errors_name_the_field(changes: dict, expected: str) -> None:
    assert expected in problem(edit(JOINED, **changes))


def test_join_mode_is_interval_unless_latest_is_asked_for() -> None:
    assert parse_pipeline(JOINED).join.mode.value == "interval"
    assert parse_pipeline(edit(JOINED, join__mode="latest")).join.mode.value == "latest"
    assert "join.mode: Input should be 'interval', 'latest' or 'table'" in problem(
        edit(JOINED, join__mode="newest")
    )


def test_a_latest_join_keeps_its_state_in_rocksdb() -> None:
    doc = edit(JOINED, join__mode="latest", runtime={"state_store": "memory"})
    assert problem(doc).startswith("runtime.state_store: memory cannot hold a join of mode latest")


def test_both_key_types_numeric_join() -> None:
    doc = edit(JOINED, join__left__key="n", join__right__key="n")
    assert parse_pipeline(doc).join is not None


def test_single_and_joined_forms_exclude_each_other() -> None:
    doc = edit(JOINED, source=SINGLE["source"])
    assert problem(doc).startswith("source: give either source")
    assert problem(edit(SINGLE, source=None)) == "source: required field is missing"


# ------------------------------------------------------------------ mode table


def test_a_table_join_has_no_right_window_and_an_optional_ttl() -> None:
    right = {"source": "users", "key": "user.id", "ttl": "1d"}
    join = parse_pipeline(edit(JOINED, join__mode="table", join__right=right)).join
    assert join is not None and join.right.ttl is not None
    assert join.right.ttl.total_seconds() == 86_400 and join.right.time_window is None
    assert join.lateness.total_seconds() == 3600  # the left window
    right = {"source": "users", "key": "user.id"}
    assert (
        parse_pipeline(edit(JOINED, join__mode="table", join__right=right)).join.right.ttl is None
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"join__mode": "table"}, "join.right.time_window: the right side of join.mode table"),
        ({"join__right__ttl": "1h"}, "join.right.ttl: only with join.mode table"),
        ({"join__right__time_window": None}, "join.right.time_window: required field is missing"),
        (
            {
                "join__mode": "table",
                "join__right": {"source": "users", "key": "user.id", "ttl": "0s"},
            },
            "join.right.ttl: must be positive",
        ),
        (
            {
                "join__mode": "table",
                "join__right": {"source": "users", "key": "user.id"},
                "sources__1__filter": "user.name != 'x'",
            },
            "sources[1].filter: the table side of join.mode table takes no",
        ),
        (
            {
                "join__mode": "table",
                "join__right": {"source": "users", "key": "user.id"},
                "runtime": {"state_store": "memory"},
            },
            "runtime.state_store: memory cannot hold a join of mode table",
        ),
    ],
)
def test_table_join_errors_name_the_field(changes: dict, expected: str) -> None:
    assert expected in problem(edit(JOINED, **changes))
