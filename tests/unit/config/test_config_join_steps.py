"""`join` as a list of steps (three or more sources): what validates, the message (naming the
field) for what does not, and the single mapping meaning what it did."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.glassflow.export import export_v3
from streamsift.config.models import Join, JoinMode, JoinType
from streamsift.config.summary import summary
from streamsift.service.edits import state_changes
from support.join_events import CHAIN, products_step

STEPS = CHAIN["join"]


def changed(path: str, value: Any, base: dict[str, Any] = CHAIN) -> dict[str, Any]:
    """`base` with the value at `path` (`join.1.left.key`; None: removed) replaced."""
    doc = copy.deepcopy(base)
    node: Any = doc
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    for part in parents:
        node = node[part]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return doc


def refused(doc: dict[str, Any]) -> str:
    """The one problem `doc` is refused for."""
    try:
        parse_pipeline(doc)
    except ConfigError as exc:
        (only,) = exc.problems
        return only
    raise AssertionError("the document validated")


def test_a_chain_of_two_steps_validates():
    p = parse_pipeline(CHAIN)
    assert [s.mode for s in p.joins] == [JoinMode.LATEST, JoinMode.TABLE]
    assert [s.type for s in p.joins] == [JoinType.INNER, JoinType.LEFT]
    assert p.joins[1].left.source is None and p.primary_source.id == "orders"
    assert summary(p) == (
        "chain_orders inner join chain_users on user_id = user.id "
        "left join chain_products on product_id = id -> chain"
    )


@pytest.mark.parametrize("first", ["interval", "latest", "table"])
@pytest.mark.parametrize("how", ["inner", "left"])
def test_an_interval_later_step_validates_after_any_first_step(first, how):
    """Issue 29 item 3: each step interval or latest (or table), inner or left."""
    doc = changed("join.1", products_step("interval", how, time_window="40m"))
    doc = changed("join.0.mode", first, doc)
    if first == "table":  # a table side has no window
        doc = changed("join.0.right.time_window", None, doc)
    p = parse_pipeline(doc)
    assert [s.mode for s in p.joins] == [JoinMode(first), JoinMode.INTERVAL]
    assert p.joins[1].type is JoinType(how)


def test_the_single_mapping_is_a_one_step_chain_and_reads_as_before():
    two = changed("sources", CHAIN["sources"][:2], changed("join", STEPS[0]))
    two["sink"]["mapping"] = two["sink"]["mapping"][:2]
    single, listed = parse_pipeline(two), parse_pipeline(changed("join", [STEPS[0]], two))
    assert single.joins == listed.joins == (single.join,)
    assert isinstance(single.join, Join) and isinstance(listed.join, tuple)
    dumped = single.model_dump(by_alias=True, exclude_defaults=True)["join"]
    assert dumped["left"] == {"source": "orders", "key": ("user_id",), "time_window": "1h"}


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
        ("join.0.right.source", "orders", "join[0].right.source: must differ from join[0].left"),
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
            products_step("interval", "left"),
            "join[1].right.time_window: required field is missing",
        ),
        ("join.1.left.time_window", None, "join[1].left.time_window: required field is missing"),
        ("join.1.right.time_window", "1h", "join[1].right.time_window: the right side of"),
        (
            "join.1.right.key",
            "ts",
            "join[1].right.key: 'ts' is timestamp but the left key 'product_id' is string",
        ),
        ("sources.2.topic", "chain_users", "sources[2].topic: 'chain_users' is read by another"),
        ("sources.2.name", "users", "sources[2].name: two sources are called 'users'"),
        ("join", [STEPS[0]], "sources[2]: 'products' is not used by any join step"),
        ("join", STEPS[0], "sources[2]: 'products' is not used by any join step"),
        (
            "sink.mapping.3.field",
            "price",
            "sink.mapping[3].field: 'price' is not a field of the join output",
        ),
    ],
)
def test_a_bad_chain_is_refused_naming_the_field(path, value, message):
    assert refused(changed(path, value)).startswith(message)


def test_a_source_no_step_joins_is_named():
    sources = CHAIN["sources"]
    doc = changed("sources", [*sources, {**sources[2], "name": "x", "topic": "x"}])
    assert refused(doc).startswith("sources[3]: 'x' is not used by any join step; add a step")
    doc = changed("join", [*STEPS, products_step("table")], doc)
    assert refused(doc).startswith("join[2].right.source: 'products' is already joined by join[1]")
    doc = changed("join.2.right.source", "users", doc)
    assert refused(doc).startswith("join[2].right.source: 'users' is already joined by join[0]")
    doc = changed("join.2.right.source", "x", doc)
    assert refused(doc).startswith("join[2].left.key: 'product_id' is not a field of join[1]'s")


def test_memory_state_store_is_refused_for_any_stateful_step():
    doc = changed("runtime", {"state_store": "memory"})
    assert refused(doc).startswith("runtime.state_store: memory cannot hold a join of mode latest")


def test_glassflow_export_refuses_three_sources():
    with pytest.raises(ConfigError) as info:
        export_v3(parse_pipeline(CHAIN))
    assert "GlassFlow's pipelines join two sources" in str(info.value)


def test_changing_a_step_needs_a_state_reset():
    old = parse_pipeline(CHAIN)
    assert state_changes(old, parse_pipeline(CHAIN)) == []
    for path, value in (
        ("join.1.left.time_window", "5m"),
        ("join.1", products_step("latest", "left", time_window="30m")),
    ):
        (change,) = state_changes(old, parse_pipeline(changed(path, value)))
        assert change.startswith("join keys or windows latest: user_id within 1h = user.id")
