"""Filters and computed fields on a mixed stream, against a pure-Python reference.

Rows whose computed field fails (division by zero, a text that is not a number) or whose
filter is NULL go to the DLQ with stage and reason; rows whose filter is false are dropped;
the rest are written with their computed fields. The reference evaluates the same rules in
plain Python from the produced messages.
"""

from __future__ import annotations

import json
import random

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration

TRANSFORMS = [
    {"name": "total", "expression": "amount * qty", "type": "float"},
    {"name": "unit", "expression": "amount / qty", "type": "float"},
    {"name": "label", "expression": "upper(name) || '-' || id", "type": "string"},
    {"name": "code_num", "expression": "CAST(code AS BIGINT) + 1", "type": "int"},
]
FILTER = "total > 10 AND name != 'skip' AND code_num IS NOT NULL"  # IS: Spark's own grammar


def make_messages(n: int = 1_200, seed: int = 5) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        doc: dict = {"id": f"e{i}", "amount": round(rng.uniform(0, 20), 2), "qty": rng.randrange(4)}
        doc["name"] = rng.choice(["ada", "bob", "skip", None])
        doc["code"] = rng.choice(["12", "7", "x1", None])
        if rng.random() < 0.05:
            doc["amount"] = None
        if rng.random() < 0.02:
            doc["amount"] = "12"  # wrong type: a parse error
        out.append((doc["id"].encode(), json.dumps(doc).encode()))
    return out


def reference(messages: list[tuple[bytes, bytes]]):
    """(rows to write, dead letters as (id, stage)) by the documented rules."""
    rows, dead = [], []
    for _, value in messages:
        doc = json.loads(value)
        if doc["amount"] is not None and not isinstance(doc["amount"], float | int):
            dead.append((doc["id"], "parse"))
            continue
        amount, qty, name, code = doc["amount"], doc["qty"], doc["name"], doc["code"]
        amount = float(amount) if amount is not None else None
        total = amount * qty if amount is not None else None
        if amount is not None and qty == 0:
            dead.append((doc["id"], "transform"))  # amount / qty: division by zero
            continue
        unit = amount / qty if amount is not None else None
        label = f"{name.upper()}-{doc['id']}" if name is not None else None
        if code is not None and not code.isdigit():
            dead.append((doc["id"], "transform"))  # CAST('x1' AS BIGINT) fails
            continue
        code_num = int(code) + 1 if code is not None else None
        left = None if total is None else total > 10
        right = None if name is None else name != "skip"
        known = code_num is not None  # IS NOT NULL is never NULL itself
        parts = (left, right, known)
        verdict = False if False in parts else None if None in parts else True
        if verdict is None:
            dead.append((doc["id"], "filter"))
        elif verdict:
            rows.append((doc["id"], total, unit, label, code_num))
    return rows, dead


def test_filters_and_computed_fields_equal_the_reference(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    broker.create_topic(unique_name, 3)
    messages = make_messages()
    produce_messages(unique_name, messages)
    pipeline = parse_pipeline(
        pipeline_doc(
            topic=unique_name,
            fields=fields(
                ("id", "string"),
                ("amount", "float"),
                ("qty", "int"),
                ("name", "string"),
                ("code", "string"),
            ),
            transform=TRANSFORMS,
            filter=FILTER,
            bootstrap_servers=broker.bootstrap_servers,
            clickhouse={"path": str(chdb_path)},
            sink={"create_table": True},
            mapping=mapping(
                ("id", "id", "String"),
                ("total", "total", "Nullable(Float64)"),
                ("unit", "unit", "Nullable(Float64)"),
                ("label", "label", "Nullable(String)"),
                ("code_num", "code_num", "Nullable(Int64)"),
            ),
            checkpoint_dir=tmp_path / "ck",
        )
    )
    runner = PipelineRunner(pipeline)
    result = runner.run(until_caught_up=True)
    want_rows, want_dead = reference(messages)
    assert {s for _, s in want_dead} == {"parse", "transform", "filter"}

    got = runner.writer.query_rows(f"SELECT id, total, unit, label, code_num FROM {unique_name}")
    assert sorted(got, key=lambda r: r[0]) == sorted(want_rows, key=lambda r: r[0])
    dlq = runner.writer.query_rows(
        f"SELECT payload, stage, error_class, error FROM {pipeline.dlq_table}"
    )
    got_dead = sorted((json.loads(p)["id"], stage) for p, stage, _, _ in dlq)
    assert got_dead == sorted(want_dead)
    by_stage = {stage: (cls, err) for _, stage, cls, err in dlq}
    assert by_stage["filter"][0] == "filter_failed"
    assert "is NULL" in by_stage["filter"][1] and "name is null" in by_stage["filter"][1]
    assert by_stage["transform"][0] == "transform_failed"
    assert result.stats["written"] == len(want_rows)
    assert result.stats["dlq"] == len(want_dead)
    # every message is accounted for: written, dead letter or dropped by the filter
    filtered = len(messages) - len(want_rows) - len(want_dead)
    assert filtered > 0
    assert result.stats["filtered"] == filtered
    assert result.stats["read"] == result.stats["written"] + result.stats["dlq"] + filtered
    reasons = {err for _, stage, _, err in dlq if stage == "transform"}
    assert any("division by zero" in r for r in reasons)
    assert any("cannot convert 'x1'" in r or "cannot convert x1" in r for r in reasons)
