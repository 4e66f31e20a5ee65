"""The functions the expression preview's interpreter knows (its allow-list), by Spark name.

sqlglot parses many Spark functions into typed nodes (`upper(x)` is `exp.Upper`) and the rest
into `exp.Anonymous`; `_TYPED` maps each typed node the interpreter knows to its Spark name and
the order of its arguments, so one table by name serves both. A function is either strict
(`STRICT`: null in any argument gives null, the arguments are evaluated first) or gets its
argument trees (`LAZY`: the higher-order functions, which apply their lambda through the
interpreter, with the lambda's parameters bound by name). Any other function is not previewed.
See interpreter.py for the bounds every function keeps (the size checks before a string
or array is made, a step per element walked).
"""

from __future__ import annotations

import calendar
import hashlib
import math
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from typing import Any

from sqlglot import exp
from sqlglot.errors import ErrorLevel

from streamsift.service.authoring.expressions.arrays import ARRAY_LAZY, ARRAY_STRICT, array_of
from streamsift.service.authoring.expressions.casts import cast, compare, text_of, to_time
from streamsift.service.authoring.expressions.values import (
    DeadLetter,
    Evaluator,
    NotPreviewable,
    int64,
    items_size,
    kind_of,
    number,
    text_size,
)

# functions that take nulls among their arguments (the others give null for a null argument)
_NULLS_ALLOWED = {"array", "concat_ws", "array_repeat"}

# regular expression nodes (not previewed), by their Spark name for the message
_REGEX_NODES = {
    exp.RegexpLike: "rlike",
    exp.RegexpILike: "rlike",
    exp.RegexpExtract: "regexp_extract",
}
for _name in ("RegexpExtractAll", "RegexpCount", "RegexpInstr", "RegexpSubstr"):
    _cls = vars(exp).get(_name)  # present in some sqlglot versions
    if isinstance(_cls, type):
        _REGEX_NODES[_cls] = _name.lower().replace("regexp", "regexp_")

# typed node → (Spark name, argument keys in order)
_TYPED: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.Upper: ("upper", ("this",)),
    exp.Lower: ("lower", ("this",)),
    exp.Length: ("length", ("this",)),
    exp.Substring: ("substring", ("this", "start", "length")),
    exp.Concat: ("concat", ("expressions",)),
    exp.ConcatWs: ("concat_ws", ("expressions",)),
    exp.DPipe: ("concat", ("this", "expression")),
    exp.Replace: ("replace", ("this", "expression", "replacement")),
    exp.Initcap: ("initcap", ("this",)),
    exp.Reverse: ("reverse", ("this",)),
    exp.Repeat: ("repeat", ("this", "times")),
    exp.StrPosition: ("locate", ("substr", "this", "position")),
    exp.RegexpSplit: ("split", ("this", "expression", "limit")),
    exp.RegexpReplace: ("regexp_replace", ("this", "expression", "replacement", "position")),
    exp.StartsWith: ("startswith", ("this", "expression")),
    exp.EndsWith: ("endswith", ("this", "expression")),
    exp.Contains: ("contains", ("this", "expression")),
    exp.Left: ("left", ("this", "expression")),
    exp.Right: ("right", ("this", "expression")),
    exp.Greatest: ("greatest", ("this", "expressions")),
    exp.Least: ("least", ("this", "expressions")),
    exp.Abs: ("abs", ("this",)),
    exp.Round: ("round", ("this", "decimals")),
    exp.Floor: ("floor", ("this", "decimals")),
    exp.Ceil: ("ceil", ("this", "decimals")),
    exp.Sqrt: ("sqrt", ("this",)),
    exp.Pow: ("pow", ("this", "expression")),
    exp.Sign: ("sign", ("this",)),
    exp.Exp: ("exp", ("this",)),
    exp.Ln: ("ln", ("this",)),
    exp.Log: ("log", ("this", "expression")),
    exp.Year: ("year", ("this",)),
    exp.Month: ("month", ("this",)),
    exp.Day: ("day", ("this",)),
    exp.DayOfMonth: ("day", ("this",)),
    exp.DayOfWeek: ("dayofweek", ("this",)),
    exp.DayOfYear: ("dayofyear", ("this",)),
    exp.Quarter: ("quarter", ("this",)),
    exp.Hour: ("hour", ("this",)),
    exp.Minute: ("minute", ("this",)),
    exp.Second: ("second", ("this",)),
    exp.TsOrDsToDate: ("to_date", ("this", "format")),
    exp.TsOrDsAdd: ("date_add", ("this", "expression", "unit")),
    exp.DateDiff: ("datediff", ("this", "expression", "unit")),
    exp.AddMonths: ("add_months", ("this", "expression")),
    exp.CurrentDate: ("current_date", ()),
    exp.CurrentTimestamp: ("current_timestamp", ()),
    exp.MapKeys: ("map_keys", ("this",)),
    exp.ArraySize: ("size", ("this",)),
    exp.Array: ("array", ("expressions",)),
    exp.ArrayContains: ("array_contains", ("this", "expression")),
    exp.ArrayToString: ("array_join", ("this", "expression", "null")),
    exp.ArrayDistinct: ("array_distinct", ("this",)),
    exp.ArrayMax: ("array_max", ("this",)),
    exp.ArrayMin: ("array_min", ("this",)),
    exp.ArrayPosition: ("array_position", ("this", "expression")),
    exp.Flatten: ("flatten", ("this",)),
    exp.GenerateSeries: ("sequence", ("start", "end", "step")),
    exp.MD5: ("md5", ("this",)),
    exp.Transform: ("transform", ("this", "expression")),
    exp.ArrayFilter: ("filter", ("this", "expression")),
    exp.Exists: ("exists", ("this", "expression")),
    exp.Reduce: ("aggregate", ("this", "initial", "merge", "finish")),
}


def call(ev: Evaluator, tree: exp.Expression, env: Mapping[str, Any]) -> Any:
    """The value of a function call (or other node) `tree`; NotPreviewable if unknown."""
    name, args = _name_and_args(tree)
    lazy = LAZY.get(name)
    if lazy is not None:
        return lazy(ev, args, env)
    strict = STRICT.get(name)
    if strict is None:
        raise NotPreviewable(f"the preview does not know {name}()")
    values = [ev.value(a, env) for a in args]
    if name not in _NULLS_ALLOWED and any(v is None for v in values):
        return None
    try:
        return strict(*values)
    except TypeError:  # a wrong number of arguments: Spark's analysis would refuse it
        raise NotPreviewable(f"{name}() with {len(values)} arguments of these kinds") from None


def _name_and_args(tree: exp.Expression) -> tuple[str, list[exp.Expression]]:
    if isinstance(tree, exp.Anonymous):
        return tree.name.lower(), list(tree.expressions)
    if isinstance(tree, (exp.Cast, exp.TryCast)):
        return "cast", [tree]
    if isinstance(tree, exp.Trim):
        return "trim", [tree]
    if isinstance(tree, exp.Pad):
        return "pad", [tree]
    if isinstance(tree, exp.Bracket):
        return "element_at", [tree]
    if isinstance(tree, exp.VarMap):
        return "map", [tree.args["keys"], tree.args["values"]]
    entry = _TYPED.get(type(tree))
    if type(tree) in _REGEX_NODES:
        return _REGEX_NODES[type(tree)], []
    if entry is None:  # not in the allow-list: named as Spark writes it, for the message
        written = tree.sql(dialect="spark", unsupported_level=ErrorLevel.IGNORE)
        written = written.split("(", 1)[0].strip()
        name = written.lower() if written.replace("_", "").isalnum() else tree.key
        if name not in STRICT and name not in LAZY:
            return name[:40], []
        # a typed node for a function of the table (`ascii`, `weekofyear`): its arguments in
        # the order sqlglot declares them
        keys = tuple(type(tree).arg_types)
        return name, [a for k in keys for a in _listed(tree.args.get(k))]
    name, keys = entry
    args: list[exp.Expression | None] = []
    for key in keys:
        value = tree.args.get(key)
        if isinstance(value, list):
            args.extend(value)
        elif isinstance(value, exp.Var):  # a unit: DAY, ...
            args.append(exp.Literal.string(value.name))
        elif isinstance(value, exp.Expression):
            args.append(value)
        elif value is not None:  # a flag sqlglot set
            args.append(exp.Literal.string(str(value)))
        else:
            args.append(None)  # an optional argument left out
    while args and args[-1] is None:
        args.pop()
    return name, [exp.Null() if a is None else a for a in args]


def _listed(value: Any) -> list[exp.Expression]:
    items = value if isinstance(value, list) else [value]
    return [v for v in items if isinstance(v, exp.Expression)]


# -------------------------------------------------------------------------- text


def _text(value: Any) -> str:
    return text_of(value)


def _concat(*values: Any) -> Any:
    if values and all(isinstance(v, list) for v in values):
        items_size(sum(len(v) for v in values))
        return [x for v in values for x in v]
    texts = [_text(v) for v in values]
    text_size(sum(len(t) for t in texts))
    return "".join(texts)


def _substring(text: Any, pos: int, length: int = 2**31 - 1) -> Any:
    if isinstance(text, list):
        raise NotPreviewable("substring() of an array")
    text, n = _text(text), len(_text(text))
    start = pos - 1 if pos > 0 else (n + pos if pos < 0 else 0)
    end = start + length
    start = max(start, 0)
    return "" if start >= end else text[start:end]


def _repeat(text: Any, times: int) -> str:
    text = _text(text)
    text_size(len(text) * max(times, 0))
    return text * max(times, 0)


def _pad(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    (tree,) = args
    text, size = ev.value(tree.this, env), ev.value(tree.expression, env)
    fill = ev.value(tree.args.get("fill_pattern"), env) if tree.args.get("fill_pattern") else " "
    if text is None or size is None or fill is None:
        return None
    text, size, fill = _text(text), int(number(size)), _text(fill)
    text_size(size)
    if size <= len(text) or not fill:
        return text[: max(size, 0)]
    padding = (fill * (size // len(fill) + 1))[: size - len(text)]
    return padding + text if tree.args.get("is_left") else text + padding


def _trim(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    (tree,) = args
    text = ev.value(tree.this, env)
    chars = ev.value(tree.args.get("expression"), env) if tree.args.get("expression") else " "
    if text is None or chars is None:
        return None
    text, chars = _text(text), "".join(set(_text(chars)))
    if len(chars) > 256:  # str.strip tests each character against every one of `chars`
        raise NotPreviewable("trim() of more than 256 different characters")
    position = (tree.args.get("position") or "BOTH").upper()
    if position == "LEADING":
        return text.lstrip(chars)
    if position == "TRAILING":
        return text.rstrip(chars)
    return text.strip(chars)


def _initcap(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:].lower() for w in _text(text).split(" "))


def _locate(sub: Any, text: Any, pos: int = 1) -> int:
    if pos < 1:
        return 0
    return _text(text).find(_text(sub), pos - 1) + 1


def _replace(text: Any, search: Any, replacement: Any = "") -> str:
    text, search, replacement = _text(text), _text(search), _text(replacement)
    if not search:
        return text
    text_size(len(text) + text.count(search) * max(len(replacement) - len(search), 0))
    return text.replace(search, replacement)


_REGEX_SYNTAX = set("\\^$.|?*+()[]{}")


def _plain(pattern: str, fn: str) -> str:
    if not pattern or _REGEX_SYNTAX & set(pattern):
        raise NotPreviewable(f"{fn}() with a regular expression (only Spark can run it)")
    return pattern


def _split(text: Any, pattern: str, limit: int = -1) -> list[str]:
    parts = _text(text).split(_plain(pattern, "split"), limit - 1 if limit > 0 else -1)
    items_size(len(parts))
    return parts


def _regexp_replace(text: Any, pattern: str, replacement: str, position: int = 1) -> str:
    if position != 1 or "$" in replacement or "\\" in replacement:
        raise NotPreviewable("regexp_replace() of this form")
    return _replace(text, _plain(pattern, "regexp_replace"), replacement)


def _left(text: Any, n: int) -> str:
    return _text(text)[: max(n, 0)]


def _right(text: Any, n: int) -> str:
    text = _text(text)
    return text[len(text) - n :] if n > 0 else ""


def _concat_ws(sep: Any, *values: Any) -> Any:
    if sep is None:
        return None
    parts: list[str] = []
    for v in values:
        if isinstance(v, list):
            parts.extend(_text(x) for x in v if x is not None)
        elif v is not None:
            parts.append(_text(v))
    text_size(sum(len(p) + len(sep) for p in parts))
    return _text(sep).join(parts)


# ------------------------------------------------------------------------- numbers


def _round(value: Any, scale: int = 0, half_even: bool = False) -> Any:
    value = number(value)
    if isinstance(value, float) and not math.isfinite(value):
        return value
    if isinstance(value, int) and scale >= 0 or scale > 400:
        return value  # nothing to round
    if scale < -400:
        return type(value)(0)
    factor = 10 ** abs(int(scale))
    scaled = value * factor if scale >= 0 else value / factor
    if not math.isfinite(scaled):
        return value  # too large to have digits at that scale
    rounded = (
        round(scaled) if half_even else math.floor(abs(scaled) + 0.5) * (1 if scaled >= 0 else -1)
    )
    result = rounded / factor if scale >= 0 else rounded * factor
    return int64(int(result)) if isinstance(value, int) else float(result)


def _floor_ceil(fn: Callable[[float], int]) -> Callable[..., Any]:
    def run(value: Any, scale: Any = None) -> Any:
        value = number(value)
        if scale is not None:
            raise NotPreviewable("floor()/ceil() with a scale")
        if isinstance(value, float) and not math.isfinite(value):
            raise DeadLetter("cannot convert a non-finite number to an integer")
        return int64(fn(value))

    return run


def _math(fn: Callable[..., float]) -> Callable[..., Any]:
    def run(*values: Any) -> Any:
        try:
            return float(fn(*(float(number(v)) for v in values)))
        except OverflowError:
            return math.inf
        except ValueError:
            return math.nan

    return run


def _pow(base: float, power: float) -> float:
    if base == 0 and power < 0:
        return math.inf  # Java's Math.pow; Python raises
    return math.pow(base, power)


def _log(base: Any, value: Any = None) -> Any:
    if value is None:
        base, value = math.e, base
    base, value = float(number(base)), float(number(value))
    if value <= 0 or base <= 0 or base == 1:
        return None
    return math.log(value) / math.log(base)


def _extreme(pick: int) -> Callable[..., Any]:
    def run(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
        best = None
        for value in (ev.value(a, env) for a in args):
            if value is not None and (best is None or (compare(value, best) or 0) * pick > 0):
                best = value
        return best

    return run


def _array_join(values: Any, sep: str, null: Any = None) -> str:
    items = [_text(v) if v is not None else null for v in array_of(values, "array_join")]
    return _concat_ws(sep, [i for i in items if i is not None])


# --------------------------------------------------------------------------- times


def _date(value: Any) -> date:
    value = to_time(value)
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    raise NotPreviewable(f"a date function on {kind_of(value)}")


def _time(value: Any) -> datetime:
    value = to_time(value)
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    raise NotPreviewable(f"a time function on {kind_of(value)}")


def _to_date(value: Any, fmt: Any = None) -> date:
    if fmt is not None:
        raise NotPreviewable("to_date() with a format")
    try:
        return _date(value)
    except NotPreviewable:
        raise DeadLetter(f"cannot convert {str(value)[:40]!r} to a date") from None


def _date_add(value: Any, days: int, unit: str = "DAY") -> date:
    if not isinstance(unit, str) or unit.upper() != "DAY":
        raise NotPreviewable("date_add() with a unit")
    try:
        return _date(value) + timedelta(days=int(number(days)))
    except OverflowError:
        raise DeadLetter("a date out of range") from None


def _datediff(end: Any, start: Any, unit: Any = None) -> int:
    if unit is not None and str(unit).upper() != "DAY":
        raise NotPreviewable("datediff() with a unit")
    return (_date(end) - _date(start)).days


def _add_months(value: Any, months: int) -> date:
    day = _date(value)
    total = day.year * 12 + day.month - 1 + int(number(months))
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise DeadLetter("a date out of range")
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _cast(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    (tree,) = args
    if tree.args.get("format") is not None or tree.args.get("default") is not None:
        raise NotPreviewable("CAST with a format")
    value = ev.value(tree.this, env)
    to = tree.to
    if to.expressions or to.args.get("nested"):
        raise NotPreviewable(f"CAST to {to.sql(dialect='spark')[:40]}")
    name = to.this.name if hasattr(to.this, "name") else str(to.this)
    return cast(value, name, safe=bool(tree.args.get("safe")))


LAZY: dict[str, Callable[[Evaluator, list[exp.Expression], Mapping[str, Any]], Any]] = {
    **ARRAY_LAZY,
    "cast": _cast,
    "trim": _trim,
    "pad": _pad,
    "greatest": _extreme(1),
    "least": _extreme(-1),
}

STRICT: dict[str, Callable[..., Any]] = {
    **ARRAY_STRICT,
    "upper": lambda s: _text(s).upper(),
    "ucase": lambda s: _text(s).upper(),
    "lower": lambda s: _text(s).lower(),
    "lcase": lambda s: _text(s).lower(),
    "length": lambda s: len(s) if isinstance(s, list) else len(_text(s)),
    "char_length": lambda s: len(_text(s)),
    "character_length": lambda s: len(_text(s)),
    "octet_length": lambda s: len(_text(s).encode()),
    "bit_length": lambda s: 8 * len(_text(s).encode()),
    "substring": _substring,
    "substr": _substring,
    "concat": _concat,
    "concat_ws": _concat_ws,
    "replace": _replace,
    "initcap": _initcap,
    "reverse": lambda s: s[::-1] if isinstance(s, list) else _text(s)[::-1],
    "repeat": _repeat,
    "locate": _locate,
    "instr": lambda s, sub: _locate(sub, s),
    "split": _split,
    "regexp_replace": _regexp_replace,
    "startswith": lambda s, p: _text(s).startswith(_text(p)),
    "endswith": lambda s, p: _text(s).endswith(_text(p)),
    "contains": lambda s, p: _text(s).find(_text(p)) >= 0,
    "left": _left,
    "right": _right,
    "ascii": lambda s: ord(_text(s)[0]) if _text(s) else 0,
    "md5": lambda s: hashlib.md5(_text(s).encode(), usedforsecurity=False).hexdigest(),
    "abs": lambda v: int64(abs(number(v))) if isinstance(v, int) else abs(number(v)),
    "round": _round,
    "bround": lambda v, scale=0: _round(v, scale, half_even=True),
    "floor": _floor_ceil(math.floor),
    "ceil": _floor_ceil(math.ceil),
    "ceiling": _floor_ceil(math.ceil),
    "sqrt": _math(math.sqrt),
    "pow": _math(_pow),
    "power": _math(_pow),
    "exp": _math(math.exp),
    "ln": lambda v: _log(v),
    "log": _log,
    "log10": lambda v: _log(10, v),
    "log2": lambda v: _log(2, v),
    "sign": lambda v: float((number(v) > 0) - (number(v) < 0)),
    "signum": lambda v: float((number(v) > 0) - (number(v) < 0)),
    "pmod": lambda a, b: _pmod(number(a), number(b)),
    "year": lambda v: _date(v).year,
    "month": lambda v: _date(v).month,
    "day": lambda v: _date(v).day,
    "dayofmonth": lambda v: _date(v).day,
    "dayofweek": lambda v: _date(v).isoweekday() % 7 + 1,
    "weekday": lambda v: _date(v).weekday(),
    "dayofyear": lambda v: _date(v).timetuple().tm_yday,
    "quarter": lambda v: (_date(v).month - 1) // 3 + 1,
    "weekofyear": lambda v: _date(v).isocalendar()[1],
    "hour": lambda v: _time(v).hour,
    "minute": lambda v: _time(v).minute,
    "second": lambda v: _time(v).second,
    "to_date": _to_date,
    "date_add": _date_add,
    "date_sub": lambda v, n: _date_add(v, -int(number(n))),
    "datediff": _datediff,
    "add_months": _add_months,
    "current_date": lambda: _now().date(),
    "current_timestamp": _now,
    "now": _now,
    "array_join": _array_join,
}


def _pmod(a: Any, b: Any) -> Any:
    if b == 0:
        raise DeadLetter("division by zero")
    if isinstance(a, float) or isinstance(b, float):
        r = math.fmod(a, b)
        return math.fmod(r + b, b) if r < 0 else r
    r = (abs(a) % abs(b)) * (-1 if a < 0 else 1)
    return (r + b) % b if r < 0 else r
