"""Check a filter or computed-field expression and preview its value on one sample event.

Checking is the same as `streamsift validate` does (config/expressions.py), with its bounds
on size and nesting. Pipelines evaluate expressions in Spark; starting a JVM for a preview is
too slow, so the preview walks the parsed tree with an interpreter of our own
(expressions/interpreter.py): an allow-list of node types and functions, lambdas applied by binding
their parameters as names, a budget of steps, time and value sizes, and no regular expressions
run on request text. Nothing of the expression is ever compiled or run as Python (an earlier
version used sqlglot's executor, which generates Python source from the SQL: a quoted name
came out as code). Its results match Spark's for the common forms (comparisons, three-valued
logic, arithmetic, CASE/IF/COALESCE, string, date, array and map functions, CAST, lambdas); a
function or form the interpreter does not know is reported as not previewable (the expression
is still valid). Differences from a running pipeline: there, a division by zero or a failed
CAST sends the record to the DLQ; here it gives null, with a note. Decimal literals (`0.1`) are
previewed as doubles, and NaN and infinities are answered as Spark writes them ("NaN",
"Infinity"), since JSON has no such numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

from sqlglot import exp

from streamsift.config.expressions import (
    ANY,
    BOOL,
    NULL,
    ExpressionError,
    ExpressionTooLarge,
    check_expression,
    column_name,
    fits,
    is_field_path,
    parse_expression,
    resolve,
)
from streamsift.config.types import FieldType
from streamsift.service.authoring.expressions.casts import text_of
from streamsift.service.authoring.expressions.interpreter import Interpreter
from streamsift.service.authoring.expressions.values import Budget, DeadLetter, NotPreviewable
from streamsift.service.errors import ExpressionProblem, ExpressionTooBig
from streamsift.transforms.parse import ValueTypeError, convert_value


@dataclass(frozen=True)
class ExpressionCheck:
    kind: str  # the kind of value the expression gives: int, string, bool, ..., any
    fields: tuple[str, ...]  # the fields it reads


@dataclass(frozen=True)
class ExpressionValue:
    value: Any  # JSON-ready: times as ISO-8601 text
    kind: str
    passes: bool | None  # for a filter: whether the event is kept (None: the filter gave null)
    note: str | None = None


def check(
    text: str, fields: Mapping[str, FieldType], result_type: FieldType | None = None
) -> ExpressionCheck:
    """Check `text` against `fields`; with `result_type` it is a computed field of that type,
    without it a filter (must be true/false)."""
    try:
        kind = check_expression(text, fields)
        tree = parse_expression(text)
    except ExpressionTooLarge as exc:
        raise ExpressionTooBig(f"expression: {exc}") from None
    except ExpressionError as exc:
        raise ExpressionProblem(f"expression: {exc}") from None
    if result_type is None and kind not in (BOOL, NULL, ANY):
        raise ExpressionProblem(f"expression: a filter must be true/false, but gives {kind}")
    if result_type is not None and not fits(kind, result_type):
        raise ExpressionProblem(
            f"expression: type mismatch: the expression gives {kind}, declared "
            f"{result_type.value} (convert it, e.g. CAST(... AS BIGINT))"
        )
    try:
        used = {resolve(name, fields) for name in _names(tree)}
    except ExpressionError as exc:
        raise ExpressionProblem(f"expression: {exc}") from None
    return ExpressionCheck(kind, tuple(sorted(used)))


def evaluate(
    text: str,
    fields: Mapping[str, FieldType],
    event: Mapping[str, Any],
    result_type: FieldType | None = None,
) -> ExpressionValue:
    """Check `text`, then evaluate it on `event` (a JSON object; dot paths reach into it)."""
    checked = check(text, fields, result_type)
    row = {name: _value_of(event, name, fields[name]) for name in fields}
    tree = parse_expression(text)
    interpreter = Interpreter(row, lambda name: resolve(name, fields), Budget())
    try:
        value = interpreter.run(tree)
    except DeadLetter as exc:
        # What Spark turns into a dead letter: the record would not reach the table.
        note = f"{exc}: in a running pipeline this record goes to the DLQ"
        return ExpressionValue(None, checked.kind, None, note)
    except NotPreviewable as exc:
        raise ExpressionProblem(
            f"expression: cannot be previewed without Spark ({exc}); "
            "it is valid and runs in the pipeline"
        ) from None
    except ExpressionError as exc:
        raise ExpressionProblem(f"expression: {exc}") from None
    note = None
    if value is None and all(row.get(f) is not None for f in checked.fields):
        note = (
            "null although every field it reads has a value: in a running pipeline a failed "
            "operation (division by zero, a failed CAST) sends the record to the DLQ"
        )
    if result_type is None and value is not None and not isinstance(value, bool):
        raise ExpressionProblem(
            "expression: cannot be previewed without Spark (a filter that gives "
            f"{type(value).__name__}); it is valid and runs in the pipeline"
        )
    passes = None if result_type is not None or value is None else value
    return ExpressionValue(_json_ready(value), checked.kind, passes, note)


def _names(tree: exp.Expression) -> list[str]:
    names = []
    for node in tree.walk():
        if (
            isinstance(node, (exp.Column, exp.Dot))
            and is_field_path(node)
            and not isinstance(node.parent, exp.Dot)
        ):
            name = column_name(node)
            if name.upper() not in ("TRUE", "FALSE"):
                names.append(name)
    return names


def _value_of(event: Mapping[str, Any], path: str, ftype: FieldType) -> Any:
    """The value at `path` in the event, converted the way the pipeline's parser would."""
    value: Any = event
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    try:
        converted = convert_value(value, ftype)
    except ValueTypeError as exc:
        raise ExpressionProblem(f"event.{path}: {exc}") from None
    if ftype is FieldType.MAP and isinstance(converted, list):  # Arrow's (key, value) pairs
        return dict(converted)
    if isinstance(converted, datetime) and converted.tzinfo is not None:
        # the interpreter's times are naive UTC
        return converted.astimezone(timezone.utc).replace(tzinfo=None)
    return converted


def _json_ready(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return text_of(value)  # JSON has no NaN or infinity: Spark's words for them
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    return value
