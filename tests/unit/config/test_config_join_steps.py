"""`join` as a list of steps (three or more sources): what validates, the message (naming the
field) for what does not, and the single mapping meaning what it did."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.glassflow.export import export_v3
from streamsift.config.models import JoinMode, JoinType
from streamsift.config.summary import summary
from streamsift.service.edits import state_changes
from support.join_events import CHAIN, SOURCES, STEP_PRODUCTS, STEP_USERS
from support.pipeline_docs import mapping


def changed(path: str, value: Any, base: dict[str, Any] = CHAIN) -> dict[str, Any]:
    """`base` with the value at `path` (`join.1.left.key`; None: removed) replaced."""
    doc = copy.deepcopy(base)
    node: Any = doc
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last: Any = int(parts[-1]) if parts[-1].isdigit() else parts[-1]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return doc


def problem(doc: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_pipeline(doc)
    assert len(info.value.problems) == 1, info.value.problems
    return info.value.problems[0]


def test_a_chain_of_two_steps_validates():
    p = parse_pipeline(CHAIN)
    assert [s.mode for s in p.joins] == [JoinMode.LATEST, JoinMode.TABLE]
    assert [s.type for s in p.joins] == [JoinType.INNER, JoinType.LEFT]
    assert p.joins[1].left.source is None and p.primary_source.id == "orders"
    assert summary(p) == ("o inner join u on user_id = user.id left join p on product_id = id -> t")


def test_the_single_mapping_is_a_one_step_chain_and_reads_as_before():
    two = changed("sources", SOURCES[:2], changed("join", STEP_USERS))
    two = changed("sink.mapping", mapping(("order_id", "order_id", "String")), two)
    single, listed = parse_pipeline(two), parse_pipeline(changed("join", [STEP_USERS], two))
    assert single.joins == listed.joins == (single.join,)
    assert (
        single.model_dump(by_alias=True)["join"]
        == parse_pipeline(two).model_dump(by_alias=True)["join"]
    )
    assert isinstance(single.model_dump(by_alias=True)["join"], dict)  # not turned into a list


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            "join.1.right.source",
            "product",
            "join[1].right.source: 'product' is not a source (sources: orders, users, products)",
        ),
        (
            "join.1.right.source",
            "users",
            "join[1].right.source: 'users' is already joined by join[0]; each source is joined "
            "once",
        ),
        ("join.1.left.source", "orders", "join[1].left.source: a later step's left side is"),
        ("join.0.left.source", None, "join[0].left.source: required field is missing"),
        ("join.1.right.source", None, "join[1].right.source: required field is missing"),
        (
            "join.1.left.key",
            "user_id",
            "join[1].left.key: 'user_id' is not a field of join[0]'s output; add it to "
            "join[0].output",
        ),
        (
            "join.1.output.2.field",
            "price",
            "join[1].output[2].field: 'price' is not a field of the right source 'products'",
        ),
        (
            "join.1.output.1.field",
            "user_id",
            "join[1].output[1].field: 'user_id' is not a field of the left side (join[0]'s output)",
        ),
        (
            "join.1",
            {
                **STEP_PRODUCTS,
                "mode": "interval",
                "right": {**STEP_PRODUCTS["right"], "time_window": "1h"},
            },
            "join[1].mode: a later step of a chain is latest or table",
        ),
        ("join.1.left.time_window", None, "join[1].left.time_window: required field is missing"),
        ("join.1.right.time_window", "1h", "join[1].right.time_window: the right side of"),
        (
            "join.1.right.key",
            "title",
            "join[1].right.key: 'title' is string but the left key 'product_id' is int",
        ),
        ("sources.2.topic", "u", "sources[2].topic: 'u' is read by another source"),
        ("sources.2.name", "users", "sources[2].name: two sources are called 'users'"),
        ("join", [STEP_USERS], "sources[2]: 'products' is not used by any join step"),
        ("join", STEP_USERS, "sources[2]: 'products' is not used by any join step"),
        (
            "sink.mapping.2.field",
            "title",
            "sink.mapping[2].field: 'title' is not a field of the join output",
        ),
    ],
)
def test_a_bad_chain_is_refused_naming_the_field(path, value, message):
    assert problem(changed(path, value)).startswith(message)


def test_a_source_no_step_joins_is_named():
    doc = changed("sources", [*SOURCES, {**SOURCES[2], "name": "x", "topic": "x"}])
    assert problem(doc).startswith("sources[3]: 'x' is not used by any join step; add a step")
    extra = {**STEP_PRODUCTS, "right": {"source": "products", "key": "id"}}
    doc = changed("join", [STEP_USERS, STEP_PRODUCTS, extra], doc)
    assert problem(doc).startswith("join[2].right.source: 'products' is already joined by join[1]")
    doc = changed("join.2.right.source", "users", doc)
    assert problem(doc).startswith("join[2].right.source: 'users' is already joined by join[0]")
    doc = changed("join.2.right.source", "x", doc)
    assert problem(doc).startswith("join[2].left.key: 'product_id' is not a field of join[1]'s")


def test_memory_state_store_is_refused_for_any_stateful_step():
    doc = changed("runtime", {"state_store": "memory"})
    assert problem(doc).startswith("runtime.state_store: memory cannot hold a join of mode latest")


def test_glassflow_export_refuses_three_sources():
    with pytest.raises(ConfigError) as info:
        export_v3(parse_pipeline(CHAIN))
    assert "GlassFlow's pipelines join two sources" in str(info.value)


def test_changing_a_step_needs_a_state_reset():
    old = parse_pipeline(CHAIN)
    assert state_changes(old, parse_pipeline(CHAIN)) == []
    for path, value in (("join.1.left.time_window", "20m"), ("join.1.mode", "latest")):
        doc = changed(path, value)
        if value == "latest":
            doc = changed("join.1.right.time_window", "30m", doc)
        (change,) = state_changes(old, parse_pipeline(doc))
        assert change.startswith("join keys or windows latest: user_id within 1h = user.id")
