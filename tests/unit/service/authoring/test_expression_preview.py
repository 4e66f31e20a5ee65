"""Expression checks and previews on a sample event, without Spark."""

from __future__ import annotations

import pytest

from streamsift.config.types import FieldType as F
from streamsift.service.authoring.expression_preview import check, evaluate
from streamsift.service.errors import ExpressionProblem

FIELDS = {"user.id": F.INT, "name": F.STRING, "ts": F.TIMESTAMP, "amount": F.FLOAT}
EVENT = {"user": {"id": 7}, "name": "Bob", "ts": "2026-01-02T03:04:05Z", "amount": 2.5}


@pytest.mark.parametrize(
    ("expression", "result_type", "value"),
    [
        ("user.id > 5", None, True),
        ("name = 'Bob' AND user.id IN (1, 7)", None, True),
        ("ts > '2026-01-03'", None, False),
        ("upper(name)", F.STRING, "BOB"),
        ("amount * 2", F.FLOAT, 5.0),
        ("user.id + 1", F.INT, 8),
        ("CAST(user.id AS STRING)", F.STRING, "7"),
        ("CASE WHEN amount > 1 THEN 'big' ELSE 'small' END", F.STRING, "big"),
        ("concat(name, '!')", F.STRING, "Bob!"),
        ("hour(ts)", F.INT, 3),
    ],
)
def test_values_on_a_sample_event(expression: str, result_type: F | None, value: object) -> None:
    result = evaluate(expression, FIELDS, EVENT, result_type)
    assert result.value == value
    assert result.passes == (value if result_type is None else None)


def test_what_would_be_a_dead_letter_gives_null_with_a_note() -> None:
    result = evaluate("amount / 0", FIELDS, EVENT, F.FLOAT)
    assert result.value is None
    assert "division by zero" in result.note and "DLQ" in result.note


def test_missing_fields_are_null() -> None:
    result = evaluate("user.id > 5", FIELDS, {"name": "x"})
    assert result.value is None and result.passes is None and result.note is None


@pytest.mark.parametrize(
    ("expression", "result_type", "message"),
    [
        ("nope > 1", None, "unknown field 'nope'"),
        ("name", None, "a filter must be true/false, but gives string"),
        ("user.id", F.STRING, "the expression gives int, declared string"),
        ("name >", None, "not valid Spark SQL"),
        ("no_such_fn(name)", F.STRING, "unknown function no_such_fn()"),
    ],
)
def test_problems_name_what_is_wrong(expression: str, result_type: F | None, message: str) -> None:
    with pytest.raises(
        ExpressionProblem, match="^expression: .*" + message.replace("(", r"\(").replace(")", r"\)")
    ):
        check(expression, FIELDS, result_type)


def test_an_event_value_of_the_wrong_type_is_named() -> None:
    with pytest.raises(ExpressionProblem, match=r"event\.user\.id: expected int"):
        evaluate("user.id > 1", FIELDS, {"user": {"id": "seven"}})


def test_functions_the_preview_lacks_are_reported_not_failed() -> None:
    with pytest.raises(
        ExpressionProblem, match=r"cannot be previewed without Spark .*date_format\(\)"
    ):
        evaluate("date_format(ts, 'yyyy')", FIELDS, EVENT, F.STRING)


def test_check_lists_the_fields_read() -> None:
    assert check("user.id > 1 AND name <> ''", FIELDS).fields == ("name", "user.id")
