"""Compiling filter/transform expressions for Spark, the bounds on an expression's size and
shape, and dedup mode `last` on its own."""

from __future__ import annotations

import re

import pytest

from streamsift.config.expressions import ExpressionError, ExpressionTooLarge, check_expression
from streamsift.config.models import FieldRef
from streamsift.config.types import FieldType
from streamsift.transforms.dedup.keys import payload_hash
from streamsift.transforms.dedup.partition import PartitionDedup
from streamsift.transforms.expressions import compile_expression, sql_string

KINDS = {"a": FieldType.INT, "b": FieldType.INT, "code": FieldType.STRING}
SCOPE = {
    "a": FieldRef("a", "a", FieldType.INT),
    "b": FieldRef("b", "b", FieldType.INT),
    "user.name": FieldRef("user.name", "user__name", FieldType.STRING),
    "code": FieldRef("code", "code", FieldType.STRING),
}


def test_operations_that_raise_become_try_forms_with_a_failure_condition() -> None:
    e = compile_expression("a / b > 1", SCOPE)
    assert e.value == "(try_divide((`a`), (`b`))) > 1"
    assert len(e.failures) == 1
    cond, why = e.failures[0]
    assert "IS NULL AND (`a`) IS NOT NULL AND (`b`) IS NOT NULL" in cond
    assert "division by zero" in why
    assert e.fields == (("a", "a"), ("b", "b"))


def test_failures_count_only_in_evaluated_branches() -> None:
    e = compile_expression("b != 0 AND a / b > 1", SCOPE)
    ((cond, _),) = e.failures
    assert cond.startswith("(NOT (((`b`) <> 0) <=> false))")  # right side runs unless left false
    c = compile_expression("CASE WHEN b = 0 THEN 0 ELSE a / b END", SCOPE)
    ((cond, _),) = c.failures
    assert "NOT coalesce(((`b`) = 0), false)" in cond  # only when the ELSE branch is taken


def test_casts_and_dotted_fields() -> None:
    e = compile_expression("CAST(code AS BIGINT) + 1 > 2 OR user.name = 'x'", SCOPE)
    assert "TRY_CAST((`code`) AS BIGINT)" in e.value
    assert "`user__name`" in e.value
    assert any("cannot convert" in why for _, why in e.failures)


def test_try_variants_of_functions() -> None:
    e = compile_expression("to_date(code) IS NOT NULL", SCOPE)
    assert "TRY_TO_DATE" in e.value.upper()
    assert e.failures


def test_sql_string_escapes() -> None:
    assert sql_string("it's \\ fine") == "'it\\'s \\\\ fine'"


def test_mode_last_drops_only_repeats_of_the_latest_version(tmp_path) -> None:
    a, b = payload_hash(b'{"v": 1, "k": "x"}'), payload_hash(b'{"k":"x","v":2}')
    assert payload_hash(b'{"k": "x", "v": 1}') == a  # key order and spaces do not matter
    d = PartitionDedup(tmp_path / "p0", window_us=3_600_000_000, compare_payload=True)
    keys = [b"x"] * 5
    times = [0, 1, 2, 3, 4]
    hashes = [a, a, b, a, a]  # A, A (repeat), B, A (a new version again), A (repeat)
    decision = d.decide(keys, times, [0, 1, 2, 3, 4], 0, hashes)
    assert decision.keep == [True, False, True, True, False]
    # A replay of the same range decides the same; the next range continues from A.
    assert d.decide(keys, times, [0, 1, 2, 3, 4], 0, hashes).keep == decision.keep
    assert d.decide([b"x", b"x"], [5, 6], [5, 6], 5, [a, b]).keep == [False, True]


# ------------------------------------------------------- bounds on an expression's size and shape


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a = '" + "x" * 20_000 + "'", "too long (20006 characters; at most 10000)"),
        ("upper(" * 200 + "code" + ")" * 200 + " = 'x'", "nested too deeply"),
        ("array(" * 30 + "1" + ")" * 30 + " IS NULL", "nested too deeply"),
        ("CASE WHEN " * 30 + "true THEN 1" + " END" * 30 + " = 1", "nested too deeply"),
        ("NOT " * 20 + "a = 1", "nested too deeply"),
        ("a = 1 OR " * 250 + "a = 2", "nested too deeply"),
        ("a IN (" + ", ".join(["1"] * 2500) + ")", "too large (more than 2000 parts)"),
    ],
)
def test_expressions_past_a_bound_are_refused_by_name(text: str, words: str) -> None:
    with pytest.raises(ExpressionTooLarge, match=re.escape(words)):
        check_expression(text, KINDS)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a = " + "9" * 50, "has 50 digits (Spark's limit is 38)"),
        ("map(1) IS NULL", "not valid Spark SQL"),  # sqlglot's builder fails with IndexError
        ("upper(code).f = 'x'", "'.' reads a field of the event"),
        ("(code || nope) = 'x'", "unknown field 'nope'"),
        ("CASE a WHEN 'x' THEN 1 END = 1", "cannot compare"),
    ],
)
def test_odd_expressions_are_named_errors(text: str, words: str) -> None:
    with pytest.raises(ExpressionError, match=re.escape(words)):
        check_expression(text, KINDS)


def test_expressions_at_the_bounds_still_check() -> None:
    assert check_expression(" OR ".join(["a = 1"] * 60), KINDS) == "bool"
    assert check_expression("upper(" * 20 + "code" + ")" * 20 + " = 'X'", KINDS) == "bool"
    assert check_expression("CASE a WHEN 1 THEN 'one' END = 'one'", KINDS) == "bool"
