"""Filters and computed fields on a streaming frame, with failures routed to the DLQ.

Spark runs with ANSI SQL on, where `1/0`, an overflow or `CAST('x' AS INT)` raise and would
stop the whole query. Each expression is therefore rewritten (via sqlglot) into its `try_`
form — `try_divide`, `try_add`, `TRY_CAST`, ... — which gives NULL instead, and next to the
value a condition is built that says whether such an operation failed *in a branch that was
evaluated* (the right side of an `AND` whose left side is false, or an untaken `CASE`
branch, does not count). A record whose expression failed, or whose filter is NULL, goes to
the DLQ with a reason; it is never silently dropped or silently written as NULL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from streamsift.config.expressions import (
    KIND_OF_FIELD,
    bare_boolean,
    check_expression,
    column_name,
    parse_expression,
    resolve,
)
from streamsift.config.models import FieldRef, Transform
from streamsift.config.types import SPARK_SQL_TYPES

_TRY_FUNCTIONS = {
    exp.Add: "try_add",
    exp.Sub: "try_subtract",
    exp.Mul: "try_multiply",
    exp.Div: "try_divide",
    exp.Mod: "try_mod",
}
# Functions that raise under ANSI on bad input, and their NULL-returning twins.
_TRY_VARIANTS = {
    "TO_DATE": "TRY_TO_DATE",
    "TO_TIMESTAMP": "TRY_TO_TIMESTAMP",
    "TO_NUMBER": "TRY_TO_NUMBER",
    "TO_BINARY": "TRY_TO_BINARY",
    "ELEMENT_AT": "TRY_ELEMENT_AT",
    "MAKE_TIMESTAMP": "TRY_MAKE_TIMESTAMP",
    "PARSE_JSON": "TRY_PARSE_JSON",
    "URL_DECODE": "TRY_URL_DECODE",
    "AES_DECRYPT": "TRY_AES_DECRYPT",
}
_LEAVES = (exp.Literal, exp.Boolean, exp.Null, exp.DataType, exp.Var, exp.Identifier, exp.Interval)

Failure = tuple[str, str]  # (Spark SQL condition, Spark SQL string saying why)


@dataclass(frozen=True)
class SparkExpression:
    """An expression compiled for Spark: its value and how to tell that it failed."""

    text: str  # as the user wrote it
    value: str  # Spark SQL; operations that would raise give NULL instead
    failures: tuple[Failure, ...]  # each: (condition, reason)
    fields: tuple[tuple[str, str], ...]  # referenced (field name, column)

    @property
    def failed(self) -> str:
        return " OR ".join(f"({cond})" for cond, _ in self.failures) or "false"

    @property
    def reason(self) -> str:
        """Spark SQL string: the failures that happened, '; '-joined (NULL if none)."""
        if not self.failures:
            return "CAST(NULL AS STRING)"
        parts = ", ".join(f"CASE WHEN {cond} THEN {why} END" for cond, why in self.failures)
        return f"NULLIF(concat_ws('; ', {parts}), '')"

    @property
    def null_fields(self) -> str:
        """Spark SQL string naming the referenced fields that are NULL."""
        if not self.fields:
            return "''"
        parts = ", ".join(
            f"CASE WHEN `{col}` IS NULL THEN {sql_string(name + ' is null')} END"
            for name, col in self.fields
        )
        return f"concat_ws(', ', {parts})"


def sql_string(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def compile_expression(text: str, scope: Mapping[str, FieldRef]) -> SparkExpression:
    """Compile a (validated) expression against the fields in `scope`."""
    tree = parse_expression(text)
    compiler = _Compiler(scope)
    value, failures = compiler.visit(tree)
    return SparkExpression(text, value, tuple(failures), tuple(compiler.fields.items()))


class _Compiler:
    def __init__(self, scope: Mapping[str, FieldRef]) -> None:
        self.scope = scope
        self.fields: dict[str, str] = {}

    def visit(self, node: exp.Expression) -> tuple[str, list[Failure]]:  # noqa: C901
        if isinstance(node, (exp.Column, exp.Dot)):
            if word := bare_boolean(node):
                return word, []
            name = resolve(column_name(node), {k: v.type for k, v in self.scope.items()})
            column = self.scope[name].column
            self.fields.setdefault(name, column)
            return f"`{column}`", []
        if isinstance(node, _LEAVES):
            return node.sql(dialect="spark"), []
        if isinstance(node, exp.Paren):
            inner, failures = self.visit(node.this)
            return f"({inner})", failures
        if isinstance(node, (exp.And, exp.Or)):
            a, fa = self.visit(node.this)
            b, fb = self.visit(node.expression)
            op, short = ("AND", "false") if isinstance(node, exp.And) else ("OR", "true")
            guard = f"NOT (({a}) <=> {short})"
            return f"({a}) {op} ({b})", fa + _guarded(fb, guard)
        if isinstance(node, (exp.Case, exp.If)):
            return self.conditional(node)
        if isinstance(node, exp.Coalesce):
            args = [node.this, *node.expressions]
            parts: list[str] = []
            failures: list[Failure] = []
            for arg in args:
                sql, fs = self.visit(arg)
                guard = " AND ".join(f"({p}) IS NULL" for p in parts) or "true"
                failures += _guarded(fs, guard)
                parts.append(sql)
            return f"coalesce({', '.join(f'({p})' for p in parts)})", failures
        if type(node) in _TRY_FUNCTIONS:
            a, fa = self.visit(node.this)
            b, fb = self.visit(node.expression)
            sql = f"{_TRY_FUNCTIONS[type(node)]}(({a}), ({b}))"
            why = "division by zero" if isinstance(node, (exp.Div, exp.Mod)) else "overflow"
            cond = f"({sql}) IS NULL AND ({a}) IS NOT NULL AND ({b}) IS NOT NULL"
            return sql, fa + fb + [(cond, self.label(node, why))]
        if isinstance(node, exp.IntDiv):
            a, fa = self.visit(node.this)
            b, fb = self.visit(node.expression)
            sql = f"CASE WHEN ({b}) = 0 THEN NULL ELSE ({a}) DIV ({b}) END"
            return sql, fa + fb + [(f"({b}) = 0", self.label(node, "division by zero"))]
        if isinstance(node, (exp.Cast, exp.TryCast)):
            a, fa = self.visit(node.this)
            target = node.to.sql(dialect="spark")
            sql = f"TRY_CAST(({a}) AS {target})"
            why = f"concat('cannot convert ', CAST(({a}) AS STRING), ' to {target}')"
            return sql, fa + [(f"({sql}) IS NULL AND ({a}) IS NOT NULL", why)]
        return self.generic(node)

    def generic(self, node: exp.Expression) -> tuple[str, list[Failure]]:
        """Any other node: compile its children, let sqlglot write the node around them."""
        copy = node.copy()
        children: list[str] = []
        failures: list[Failure] = []

        def placeholder(child: Any) -> Any:
            # Leaves stay as written: Spark's grammar takes `IS NULL`/`IS TRUE`, not `IS (NULL)`
            if not isinstance(child, exp.Expression) or isinstance(child, _LEAVES):
                return child
            sql, fs = self.visit(child)
            failures.extend(fs)
            children.append(sql)
            return exp.column(f"__streamsift_{len(children) - 1}__", quoted=True)

        for key, value in list(copy.args.items()):
            if isinstance(value, list):
                copy.set(key, [placeholder(v) for v in value])
            elif isinstance(value, exp.Expression):
                copy.set(key, placeholder(value))
        sql = copy.sql(dialect="spark")
        for i, child in enumerate(children):
            sql = sql.replace(f"`__streamsift_{i}__`", f"({child})")
        name = sql.split("(", 1)[0].strip().upper()
        if name in _TRY_VARIANTS and children:
            sql = _TRY_VARIANTS[name] + sql[len(name) :]
            args = " AND ".join(f"({c}) IS NOT NULL" for c in children)
            failures.append((f"({sql}) IS NULL AND {args}", self.label(node, "invalid input")))
        return sql, failures

    def conditional(self, node: exp.Expression) -> tuple[str, list[Failure]]:
        """CASE/IF: failures count only in the branch taken (and conditions evaluated)."""
        if isinstance(node, exp.If):
            branches = [(node.this, node.args.get("true"))]
            default = node.args.get("false")
            operand = None
        else:
            branches = [(w.this, w.args.get("true")) for w in node.args.get("ifs") or []]
            default = node.args.get("default")
            operand = node.this
        failures: list[Failure] = []
        op_sql = None
        if operand is not None:
            op_sql, fs = self.visit(operand)
            failures += fs
        not_taken: list[str] = []  # conditions before this branch, none of them true
        parts: list[str] = []
        for cond_node, result_node in branches:
            cond, fc = self.visit(cond_node)
            if op_sql is not None:
                cond = f"({op_sql}) = ({cond})"
            path = " AND ".join(not_taken) or "true"
            failures += _guarded(fc, path)
            result, fr = self.visit(result_node)
            failures += _guarded(fr, f"{path} AND coalesce(({cond}), false)")
            parts.append(f"WHEN ({cond}) THEN ({result})")
            not_taken.append(f"NOT coalesce(({cond}), false)")
        if default is not None:
            result, fd = self.visit(default)
            failures += _guarded(fd, " AND ".join(not_taken) or "true")
            parts.append(f"ELSE ({result})")
        return f"CASE {' '.join(parts)} END", failures

    @staticmethod
    def label(node: exp.Expression, why: str) -> str:
        return sql_string(f"{node.sql(dialect='spark')}: {why}")


def _guarded(failures: list[Failure], guard: str) -> list[Failure]:
    if guard == "true":
        return failures
    return [(f"({guard}) AND ({cond})", why) for cond, why in failures]


# ------------------------------------------------------------------ applying them to frames


@dataclass(frozen=True)
class Stage:
    """Computed fields and a filter applied at one point of the pipeline."""

    transforms: tuple[Transform, ...] = ()
    filter: str | None = None
    where: str = ""  # "" (the pipeline) or e.g. "sources[0]." (for messages)

    @property
    def empty(self) -> bool:
        return not self.transforms and self.filter is None


def apply_stage(frame: Any, stage: Stage, scope: Mapping[str, FieldRef]) -> Any:
    """Add computed fields, evaluate the filter, flag failures as dead letters, drop the rest.

    Rows already carrying an `_error` keep it (the first failure wins); new failures set
    `_error` and `_stage` (`transform` or `filter`). Rows for which the filter is false are
    dropped; rows for which it is NULL or failed become dead letters.
    """
    from pyspark.sql import functions as F

    scope = dict(scope)
    errors: list[tuple[str, Any]] = []
    for i, t in enumerate(stage.transforms):
        compiled = compile_expression(t.expression, scope)
        value = compiled.value
        kind = check_expression(t.expression, {k: v.type for k, v in scope.items()})
        failures = list(compiled.failures)
        target = SPARK_SQL_TYPES[t.type]
        if kind != KIND_OF_FIELD[t.type]:
            cast = f"TRY_CAST(({value}) AS {target})"
            why = f"concat('cannot convert ', CAST(({value}) AS STRING), ' to {t.type.value}')"
            failures.append((f"({cast}) IS NULL AND ({value}) IS NOT NULL", why))
            value = cast
        done = SparkExpression(t.expression, value, tuple(failures), compiled.fields)
        frame = frame.withColumn(t.name, F.expr(f"CAST(({value}) AS {target})"))
        label = f"{stage.where}transform[{i}] {t.name}"
        errors.append(
            (
                "transform",
                F.expr(
                    f"CASE WHEN {done.failed} THEN concat({sql_string(label + ': ')}, "
                    f"{done.reason}) END"
                ),
            )
        )
        scope[t.name] = FieldRef(t.name, t.name, t.type)
    keep = None
    if stage.filter is not None:
        f = compile_expression(stage.filter, scope)
        label = f"{stage.where}filter {stage.filter}"
        errors.append(
            (
                "filter",
                F.expr(
                    f"CASE WHEN {f.failed} THEN concat({sql_string(label + ': ')}, {f.reason}) "
                    f"WHEN ({f.value}) IS NULL THEN concat({sql_string(label + ' is NULL: ')}, "
                    f"coalesce(NULLIF({f.null_fields}, ''), 'the expression gave NULL')) END"
                ),
            )
        )
        keep = F.expr(f"coalesce(({f.value}), true)")
    stage_col = F.when(F.col("_error").isNotNull(), F.col("_stage"))
    error_col = F.col("_error")
    for kind, err in errors:
        stage_col = stage_col.when(err.isNotNull(), F.lit(kind))
        error_col = F.coalesce(error_col, err)
    frame = frame.withColumns({"_stage": stage_col, "_error": error_col})
    if keep is not None:
        frame = frame.filter(F.col("_error").isNotNull() | keep)
    return frame


def drop_raw_of_good_rows(frame: Any) -> Any:
    """Raw payloads and keys are only needed for dead letters."""
    from pyspark.sql import functions as F

    bad = F.col("_error").isNotNull()
    return frame.withColumns(
        {"_raw": F.when(bad, F.col("_raw")), "_key": F.when(bad, F.col("_key"))}
    )
