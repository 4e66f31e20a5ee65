"""An interpreter of filter and computed-field expressions over sqlglot's parse tree.

The preview of an expression on a sample event (expression_preview.py) must never run text
from a request as code, so it walks the parsed tree itself: every node type and every
function it knows is an entry of an allow-list (here and in functions.py),
values are plain Python values (None for SQL null), and lambda parameters are names bound in
a dictionary while the interpreter applies the lambda to each element. Nothing is compiled,
imported or looked up by a name taken from the expression. A node or function outside the
allow-list raises `NotPreviewable`: the expression is valid, only Spark can tell its value.

Semantics follow Spark's with ANSI mode (the pipelines' mode) for the common forms: SQL's
three-valued logic (AND/OR evaluate their right side only when the left does not decide),
`/` always fractional, `div` and `%` truncating toward zero, integers checked against 64
bits. What makes Spark fail a record (division by zero, a failed CAST, an overflow, an index
out of range) raises `DeadLetter`: in a running pipeline that record goes to the DLQ.

Bounds, since the tree, the event and every value in it come from a request: the tree is
already bounded by config/expressions.py; here a `Budget` (values.py) counts steps (one per node visited
and per element a function walks) and stops at a step limit or a time limit, and no string
or array the interpreter makes may exceed a size limit (checked before it is made). LIKE runs
without regular expressions (like.py), its work counted against the budget. Regular
expression functions (RLIKE, regexp_extract, ...) are not previewed, except `split` and
`regexp_replace` with a pattern that has no regular expression syntax (a plain text):
Python's `re` is not Java's, and a backtracking match holds the interpreter lock for as long
as it takes, which no time limit could interrupt. Every other operation on a value is linear
in its size. A Python error no handler expected (a form the checker lets through as `any`)
is reported as not previewable, never as a server error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from typing import Any

from sqlglot import exp

from streamsift.config.expressions import bare_boolean, column_name, is_field_path
from streamsift.service.authoring.expressions.casts import compare
from streamsift.service.authoring.expressions.functions import call
from streamsift.service.authoring.expressions.like import LikePatternError, like
from streamsift.service.authoring.expressions.values import (
    INT64,
    Budget,
    DeadLetter,
    NotPreviewable,
    int64,
    kind_of,
    number,
    truth,
)

Handler = Callable[["Interpreter", exp.Expression, Mapping[str, Any]], Any]
NODES: dict[type, Handler] = {}


def node(*classes: type) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for cls in classes:
            NODES[cls] = fn
        return fn

    return register


class Interpreter:
    """Evaluates a checked expression tree over `row` (field name → value)."""

    def __init__(
        self,
        row: Mapping[str, Any],
        resolve: Callable[[str], str],
        budget: Budget | None = None,
    ) -> None:
        self.row = row
        self.resolve = resolve
        self.budget = budget or Budget()

    def run(self, tree: exp.Expression) -> Any:
        try:
            return self.value(tree, {})
        except RecursionError:
            raise NotPreviewable("the expression is nested too deeply to preview") from None
        except (TypeError, ValueError, AttributeError, IndexError, KeyError, OverflowError) as exc:
            # A form no handler expected (the checker lets `any` through): not a server error.
            raise NotPreviewable(
                f"a form the preview does not handle: {type(exc).__name__}"
            ) from None

    def value(self, tree: exp.Expression | None, env: Mapping[str, Any]) -> Any:
        if tree is None:
            return None
        self.budget.spend()
        handler = NODES.get(type(tree))
        result = call(self, tree, env) if handler is None else handler(self, tree, env)
        if tree.args.get("negate") is True:  # `NOT LIKE`, `NOT ILIKE`, ... as one node
            result = truth(result)
            return None if result is None else not result
        return result

    def apply(self, fn: exp.Expression, args: list[Any], env: Mapping[str, Any]) -> Any:
        """Apply a lambda (`x -> ...`, `(x, i) -> ...`) to `args`: its parameters are names
        bound for the body, nothing more."""
        if not isinstance(fn, exp.Lambda):
            raise NotPreviewable("a function argument that is not a lambda")
        params = [p.name for p in fn.expressions]
        if len(params) > len(args):
            raise NotPreviewable(f"a lambda with {len(params)} parameters here")
        bound = dict(env)
        for name, arg in zip(params, args, strict=False):
            bound[name.lower()] = arg
        return self.value(fn.this, bound)


# ----------------------------------------------------------------------- leaves and fields


@node(exp.Column, exp.Dot)
def _field(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    word = bare_boolean(tree)
    if word:
        return word == "TRUE"
    if not is_field_path(tree):  # the checker refuses these (fields are not structs)
        raise NotPreviewable("'.' on a computed value")
    name = column_name(tree)  # type: ignore[arg-type]
    if name.lower() in env and "." not in name:
        return env[name.lower()]
    return ev.row.get(ev.resolve(name))


@node(exp.Identifier)
def _parameter(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    if tree.name.lower() in env:
        return env[tree.name.lower()]
    raise NotPreviewable(f"the name {tree.name[:40]!r} here")


@node(exp.Literal)
def _literal(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    text = tree.this
    if tree.is_string:
        return text
    digits = text.lstrip("+-")
    if digits.isdigit() and len(digits) <= 19 and INT64[0] <= int(text) <= INT64[1]:
        return int(text)
    if len(text) > 400:
        raise NotPreviewable("a number literal this long")
    try:
        return float(text)
    except ValueError:
        raise NotPreviewable(f"the number {text[:40]}") from None


@node(exp.Boolean)
def _boolean(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    return bool(tree.this)


@node(exp.Null)
def _null(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    return None


@node(exp.Paren)
def _paren(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    return ev.value(tree.this, env)


@node(exp.Lambda)
def _lambda(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    raise NotPreviewable("a lambda outside a higher-order function")


# ------------------------------------------------------------------------- logic


def _chain(tree: exp.Expression, cls: type) -> list[exp.Expression]:
    """The operands of `a OR b OR c` (a left-deep chain) in order, without recursion."""
    out: list[exp.Expression] = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if type(item) is cls:
            stack.extend((item.expression, item.this))
        else:
            out.append(item)
    return out


@node(exp.And, exp.Or)
def _and_or(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    decides = isinstance(tree, exp.Or)  # OR is decided by a true, AND by a false
    unknown = False
    for operand in _chain(tree, type(tree)):
        value = truth(ev.value(operand, env))
        if value is decides:
            return decides
        unknown = unknown or value is None
    return None if unknown else not decides


@node(exp.Xor)
def _xor(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    a, b = truth(ev.value(tree.this, env)), truth(ev.value(tree.expression, env))
    return None if a is None or b is None else a != b


@node(exp.Not)
def _not(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    value = truth(ev.value(tree.this, env))
    return None if value is None else not value


@node(exp.Is)
def _is(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    value = ev.value(tree.this, env)
    target = tree.expression
    if isinstance(target, exp.Null):
        return value is None
    if isinstance(target, exp.Boolean):
        return value is bool(target.this)
    raise NotPreviewable("IS with something else than NULL, TRUE or FALSE")


@node(exp.Case)
def _case(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    subject = tree.this
    base = ev.value(subject, env) if subject is not None else None
    for when in tree.args.get("ifs") or []:
        if subject is not None:
            hit = compare(base, ev.value(when.this, env)) == 0
        else:
            hit = truth(ev.value(when.this, env)) is True
        if hit:
            return ev.value(when.args.get("true"), env)
    return ev.value(tree.args.get("default"), env)


@node(exp.If)
def _if(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    branch = "true" if truth(ev.value(tree.this, env)) is True else "false"
    return ev.value(tree.args.get(branch), env)


@node(exp.Coalesce)
def _coalesce(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    for item in [tree.this, *(tree.expressions or [])]:
        value = ev.value(item, env)
        if value is not None:
            return value
    return None


@node(exp.Nullif)
def _nullif(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    a, b = ev.value(tree.this, env), ev.value(tree.expression, env)
    return None if a is not None and b is not None and compare(a, b) == 0 else a


@node(exp.Nvl2)
def _nvl2(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    branch = "true" if ev.value(tree.this, env) is not None else "false"
    return ev.value(tree.args.get(branch), env)


# -------------------------------------------------------------------- comparisons


_ORDER = {
    exp.EQ: lambda c: c == 0,
    exp.NEQ: lambda c: c != 0,
    exp.GT: lambda c: c > 0,
    exp.GTE: lambda c: c >= 0,
    exp.LT: lambda c: c < 0,
    exp.LTE: lambda c: c <= 0,
}


@node(*_ORDER)
def _comparison(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    c = compare(ev.value(tree.this, env), ev.value(tree.expression, env))
    return None if c is None else _ORDER[type(tree)](c)


@node(exp.NullSafeEQ, exp.NullSafeNEQ)
def _null_safe(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    a, b = ev.value(tree.this, env), ev.value(tree.expression, env)
    same = (a is None and b is None) or (a is not None and b is not None and compare(a, b) == 0)
    return same if isinstance(tree, exp.NullSafeEQ) else not same


@node(exp.Between)
def _between(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    value = ev.value(tree.this, env)
    low, high = ev.value(tree.args["low"], env), ev.value(tree.args["high"], env)
    above, below = compare(value, low), compare(value, high)
    results = [None if above is None else above >= 0, None if below is None else below <= 0]
    if False in results:
        return False
    return None if None in results else True


@node(exp.In)
def _in(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    if tree.args.get("query") or tree.args.get("unnest") or tree.args.get("field"):
        raise NotPreviewable("IN with something else than a list")
    value = ev.value(tree.this, env)
    unknown = value is None
    for item in tree.expressions:
        c = compare(value, ev.value(item, env))
        if c == 0:
            return True
        unknown = unknown or c is None
    return None if unknown else False


# ---------------------------------------------------------------------- arithmetic


def _float(fn: Callable[[], float]) -> float:
    try:
        return fn()
    except OverflowError:
        return math.inf


@node(exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.SafeDivide)
def _arithmetic(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    a, b = ev.value(tree.this, env), ev.value(tree.expression, env)
    if a is None or b is None:
        return None
    if isinstance(a, (date, datetime, timedelta)) or isinstance(b, (date, datetime, timedelta)):
        return _time_arithmetic(tree, a, b)
    a, b = number(a), number(b)
    if isinstance(tree, (exp.Div, exp.IntDiv, exp.Mod, exp.SafeDivide)) and b == 0:
        if isinstance(tree, exp.SafeDivide):
            return None
        raise DeadLetter("division by zero")
    if isinstance(tree, (exp.Div, exp.SafeDivide)):
        return _float(lambda: a / b)
    if isinstance(tree, exp.IntDiv):
        if isinstance(a, float) or isinstance(b, float):
            quotient = _float(lambda: a / b)
            if not math.isfinite(quotient):
                raise DeadLetter("integer overflow")
            return int64(math.trunc(quotient))
        return int64(abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1))
    if isinstance(tree, exp.Mod):
        if isinstance(a, float) or isinstance(b, float):
            return math.fmod(a, b)
        return int64((abs(a) % abs(b)) * (-1 if a < 0 else 1))
    ops = {exp.Add: lambda: a + b, exp.Sub: lambda: a - b, exp.Mul: lambda: a * b}
    result = _float(ops[type(tree)])  # type: ignore[arg-type]
    return int64(result) if isinstance(result, int) else result


def _time_arithmetic(tree: exp.Expression, a: Any, b: Any) -> Any:
    try:
        if isinstance(tree, exp.Add) and isinstance(b, timedelta) and isinstance(a, date):
            return a + b
        if isinstance(tree, exp.Add) and isinstance(a, timedelta) and isinstance(b, date):
            return b + a
        if isinstance(tree, exp.Sub) and isinstance(b, timedelta) and isinstance(a, date):
            return a - b
    except OverflowError:
        raise DeadLetter("a time out of range") from None
    raise NotPreviewable(f"{type(tree).__name__.lower()} of {kind_of(a)} and {kind_of(b)}")


@node(exp.Neg)
def _neg(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    value = ev.value(tree.this, env)
    if value is None:
        return None
    if isinstance(value, timedelta):
        return -value
    value = number(value)
    return int64(-value) if isinstance(value, int) else -value


_INTERVAL_UNITS = {
    "WEEK": 7 * 86400,
    "DAY": 86400,
    "HOUR": 3600,
    "MINUTE": 60,
    "SECOND": 1,
}


@node(exp.Interval)
def _interval(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    unit = tree.args.get("unit")
    name = (unit.name if unit is not None else "").upper().rstrip("S")
    if name not in _INTERVAL_UNITS:
        raise NotPreviewable(f"an interval in {name.lower() or 'these units'}")
    amount = ev.value(tree.this, env)
    try:
        count = float(amount) if amount is not None else None
    except ValueError:
        raise NotPreviewable("an interval of this form") from None
    if count is None:
        return None
    try:
        return timedelta(seconds=count * _INTERVAL_UNITS[name])
    except OverflowError:
        raise DeadLetter("an interval out of range") from None


# --------------------------------------------------------------------------- LIKE


@node(exp.Like, exp.ILike)
def _like(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    return _like_with(ev, tree, env, "\\")


@node(exp.Escape)
def _like_escape(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    escape = ev.value(tree.expression, env)
    if not isinstance(tree.this, (exp.Like, exp.ILike)) or not isinstance(escape, str):
        raise NotPreviewable("ESCAPE of this form")
    if len(escape) != 1:
        raise DeadLetter("the LIKE escape must be one character")
    return _like_with(ev, tree.this, env, escape)


def _like_with(ev: Interpreter, tree: exp.Expression, env: Mapping[str, Any], escape: str) -> Any:
    if tree.args.get("escape") is not None:
        raise NotPreviewable("LIKE of this form")
    text, pattern = ev.value(tree.this, env), ev.value(tree.expression, env)
    if text is None or pattern is None:
        return None
    if not isinstance(text, str) or not isinstance(pattern, str):
        raise NotPreviewable("LIKE on something else than text")
    if isinstance(tree, exp.ILike):
        text, pattern = text.lower(), pattern.lower()
    try:
        return like(text, pattern, escape, ev.budget.spend)
    except LikePatternError as exc:
        raise DeadLetter(str(exc)) from None
