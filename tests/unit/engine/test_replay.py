"""Replay's re-processing of dead letters (no ClickHouse, no Spark): what passes the current
schema, how it is mapped, and which pipelines replay refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.errors import ReplayUnsupported
from streamsift.engine.replay import Replayer
from streamsift.sinks.dlq_queries import DeadLetter
from support.pipeline_docs import fields, join_doc, mapping, pipeline_doc

T = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def doc(**extra: Any) -> dict[str, Any]:
    return pipeline_doc(
        name="orders",
        topic="orders",
        fields=fields(("id", "string"), ("user.id", "string"), ("amount", "float")),
        dedup={"key": "id", "time_window": "1h"},
        clickhouse={"path": "/tmp/replay-unit-unused"},
        mapping=mapping(
            ("id", "id", "String"),
            ("user.id", "user_id", "String"),
            ("amount", "amount", "Float64"),
            ("_kafka.offset", "src_offset", "Int64"),
        ),
        **extra,
    )


def letter(offset: int, payload: bytes, origin: str = "parse") -> DeadLetter:
    return DeadLetter(
        topic="orders",
        partition=offset % 2,
        offset=offset,
        failed_at_ms=T,
        kafka_timestamp_ms=T,
        key=None,
        payload=payload,
        origin=origin,
        origin_error_class="type_mismatch",
        origin_error="field 'amount': expected int, got number",
        stage=origin,
        error_class="type_mismatch",
        error="...",
        state="",
        seq=0,
        chunk="",
        attempts=0,
    )


def test_process_parses_maps_and_keeps_chunk_order():
    replayer = Replayer(parse_pipeline(doc()))
    letters = [
        letter(10, b'{"id": "a", "user": {"id": "u1"}, "amount": 1.5}'),
        letter(11, b'{"id": "b", "amount": "cheap"}'),  # still the wrong type
        # refused by ClickHouse: the DLQ row holds the original message like any other
        letter(12, json.dumps({"id": "c", "user": {"id": "u3"}, "amount": -2.0}).encode(), "sink"),
        letter(13, b'{"user": {"id": "u4"}, "amount": 4}'),  # no dedup key
        letter(14, b"not json"),
        letter(15, b'{"id": "e", "user": "just-a-string"}'),  # same parent rule as the source
        letter(16, b'{"id": null}'),
    ]
    outcome = replayer.process(letters)
    assert outcome.rows.column_names == ["id", "user_id", "amount", "src_offset"]
    assert outcome.rows.to_pylist() == [
        {"id": "a", "user_id": "u1", "amount": 1.5, "src_offset": 10},
        {"id": "c", "user_id": "u3", "amount": -2.0, "src_offset": 12},
    ]
    assert outcome.row_index == [0, 2]
    assert {i: (s, c) for i, (s, c, _) in outcome.failures.items()} == {
        1: ("parse", "type_mismatch"),
        3: ("parse", "missing_field"),
        4: ("parse", "malformed_json"),
        5: ("parse", "type_mismatch"),
        6: ("parse", "missing_field"),
    }
    assert "'amount'" in outcome.failures[1][2]
    assert outcome.failures[3][2] == "field 'id' is missing (needed as the dedup key)"
    assert outcome.failures[5][2] == "field 'user.id': 'user' is string, expected an object"
    assert outcome.failures[6][2] == "field 'id' is null (needed as the dedup key)"


def test_process_with_nothing_passing_gives_no_rows():
    outcome = Replayer(parse_pipeline(doc())).process([letter(1, b"[1, 2]")])
    assert outcome.rows.num_rows == 0 and outcome.row_index == []
    assert outcome.failures[0][:2] == ("parse", "not_an_object")


@pytest.mark.parametrize(
    "extra, reason",
    [
        ({"filter": "amount > 0"}, "computed fields or a filter"),
        (
            {"transform": [{"name": "cents", "expression": "amount * 100", "type": "float"}]},
            "computed fields or a filter",
        ),
    ],
)
def test_pipelines_with_spark_expressions_are_refused(extra, reason):
    with pytest.raises(ReplayUnsupported) as refused:
        Replayer(parse_pipeline(doc(**extra)))
    assert reason in str(refused.value) and refused.value.hint


def test_joined_pipelines_are_refused():
    left = doc()["source"]
    right = dict(left, topic="users", name="users")
    pipeline = parse_pipeline(
        join_doc(
            name="joined",
            sources=[dict(left, name="orders"), right],
            join={
                "left": {"source": "orders", "key": "user.id", "time_window": "1h"},
                "right": {"source": "users", "key": "user.id", "time_window": "1h"},
                "output": [{"from": "left", "field": "id"}, {"from": "right", "field": "amount"}],
            },
            clickhouse={"path": "/tmp/replay-unit-unused"},
            table="joined",
            mapping=mapping(("id", "id", "String"), ("amount", "amount", "Float64")),
        )
    )
    with pytest.raises(ReplayUnsupported, match="joins two sources"):
        Replayer(pipeline)
