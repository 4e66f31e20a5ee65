"""Compiling filter/transform expressions for Spark, and dedup mode `last` on its own."""

from __future__ import annotations

from streamsift.config.models import FieldRef
from streamsift.config.types import FieldType
from streamsift.transforms.dedup import PartitionDedup, payload_hash
from streamsift.transforms.expressions import compile_expression, sql_string

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
