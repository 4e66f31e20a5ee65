"""Check a filter or computed-field expression and preview its value on one sample event.

Checking is the same as `streamsift validate` does (config/expressions.py). Pipelines evaluate
expressions in Spark; starting a JVM for a preview would take seconds, so the preview runs the
expression with sqlglot's pure-Python executor instead. Its results match Spark's for the
common forms (comparisons, arithmetic, CASE/IF, string functions, CAST); a function the
executor does not have is reported as not previewable (the expression is still valid).
Differences from a running pipeline: there, a division by zero or a failed CAST sends the
record to the DLQ; here it gives null, with a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlglot import exp
from sqlglot.errors import ExecuteError, SqlglotError
from sqlglot.executor import execute

from streamsift.config.expressions import (
    ANY,
    BOOL,
    NULL,
    ExpressionError,
    check_expression,
    column_name,
    fits,
    parse_expression,
    resolve,
)
from streamsift.config.types import FieldType
from streamsift.errors import ConfigurationError
from streamsift.transforms.parse import ValueTypeError, convert_value


class ExpressionProblem(ConfigurationError):
    """The expression (or the sample event given with it) cannot be checked or evaluated."""


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
    except ExpressionError as exc:
        raise ExpressionProblem(f"expression: {exc}") from None
    if result_type is None and kind not in (BOOL, NULL, ANY):
        raise ExpressionProblem(f"expression: a filter must be true/false, but gives {kind}")
    if result_type is not None and not fits(kind, result_type):
        raise ExpressionProblem(
            f"expression: type mismatch: the expression gives {kind}, declared "
            f"{result_type.value} (convert it, e.g. CAST(... AS BIGINT))"
        )
    used = {resolve(name, fields) for name in _names(tree)}
    return ExpressionCheck(kind, tuple(sorted(used)))


def evaluate(
    text: str,
    fields: Mapping[str, FieldType],
    event: Mapping[str, Any],
    result_type: FieldType | None = None,
) -> ExpressionValue:
    """Check `text`, then evaluate it on `event` (a JSON object; dot paths reach into it)."""
    checked = check(text, fields, result_type)
    columns = {name: f"c{i}" for i, name in enumerate(fields)}
    row = {columns[name]: _value_of(event, name, fields[name]) for name in fields}
    tree = parse_expression(text).transform(
        lambda node: (
            _map_entry(node, fields, row, columns) or _column_for_executor(node, fields, columns)
        )
    )
    tree = tree.transform(_spark_for_executor)
    sql = exp.select(tree.as_("v")).from_("t").sql()
    try:
        value = execute(sql, tables={"t": [row]}).rows[0][0]
    except ExecuteError as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, (ArithmeticError, ValueError, TypeError)):
            # What Spark turns into a dead letter: the record would not reach the table.
            note = f"{cause}: in a running pipeline this record goes to the DLQ"
            return ExpressionValue(None, checked.kind, None, note)
        raise ExpressionProblem(
            f"expression: cannot be previewed without Spark ({_executor_reason(exc)}); "
            "it is valid and runs in the pipeline"
        ) from None
    except SqlglotError as exc:
        raise ExpressionProblem(f"expression: evaluation failed: {exc}") from None
    note = None
    if value is None and all(row.get(columns[f]) is not None for f in checked.fields):
        note = (
            "null although every field it reads has a value: in a running pipeline a failed "
            "operation (division by zero, a failed CAST) sends the record to the DLQ"
        )
    passes = None if result_type is not None or value is None else bool(value)
    return ExpressionValue(_json_ready(value), checked.kind, passes, note)


def _names(tree: exp.Expression) -> list[str]:
    names = []
    for node in tree.walk():
        if isinstance(node, (exp.Column, exp.Dot)) and not isinstance(node.parent, exp.Dot):
            name = column_name(node)
            if name.upper() not in ("TRUE", "FALSE"):
                names.append(name)
    return names


def _column_for_executor(
    node: exp.Expression, fields: Mapping[str, FieldType], columns: Mapping[str, str]
) -> exp.Expression:
    """Field references (`user.id`) become the plain columns of the one-row table."""
    if isinstance(node, (exp.Column, exp.Dot)) and not isinstance(node.parent, exp.Dot):
        name = column_name(node)
        if name.upper() in ("TRUE", "FALSE") and isinstance(node, exp.Column):
            return exp.Boolean(this=name.upper() == "TRUE")
        return exp.column(columns[resolve(name, fields)])
    return node


def _map_entry(
    node: exp.Expression,
    fields: Mapping[str, FieldType],
    row: dict[str, Any],
    columns: Mapping[str, str],
) -> exp.Expression | None:
    """`m['k']` / `try_element_at(m, 'k')` on a map field becomes a column of its own holding
    that entry (null when the key is missing, as in Spark): the executor has no maps. None
    for any other node."""
    if not isinstance(node, exp.Bracket) or len(node.expressions) != 1:
        return None
    target, key = node.this, node.expressions[0]
    if not isinstance(target, (exp.Column, exp.Dot)) or not (
        isinstance(key, exp.Literal) and key.is_string
    ):
        return None
    name = resolve(column_name(target), fields)
    if fields[name] is not FieldType.MAP:
        return None
    entry = f"e{len(row)}"
    row[entry] = dict(row[columns[name]] or ()).get(key.this)
    return exp.column(entry)


def _spark_for_executor(node: exp.Expression) -> exp.Expression:
    """Spark's CAST (parsed as TRY_CAST) becomes a CAST, its `/` a plain division (sqlglot
    writes Spark's null-on-zero division with NULLIF, which the executor lacks)."""
    if isinstance(node, exp.TryCast):
        return exp.Cast(this=node.this, to=node.to)
    if isinstance(node, exp.Div) and node.args.get("safe"):
        node.set("safe", False)
    return node


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
    if isinstance(converted, datetime):
        return converted.replace(tzinfo=None)  # the executor compares naive times (UTC)
    return converted


def _executor_reason(exc: ExecuteError) -> str:
    text = str(exc)
    if "is not defined" in text:
        name = text.split("name '", 1)[-1].split("'", 1)[0]
        return f"the preview does not know {name.lower()}()"
    return text.splitlines()[0][:200]


def _json_ready(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return value
