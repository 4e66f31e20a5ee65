"""Filter and computed-field expressions: Spark SQL, checked without starting Spark.

`streamsift validate` must be fast, so expressions are parsed with sqlglot (Spark dialect)
and checked here against the fields in scope: the SQL must parse, every column must name a
field, every function must be a Spark built-in, and operand types must fit (no `name > 5`
on a string field, no `AND` on numbers). What cannot be typed statically (an unfamiliar
function's result) is let through as `any`; Spark itself re-checks when the query starts.

Expressions come from documents and from the API, so their size and shape are bounded before
anything recursive sees them: the text's length, the nesting of parentheses, brackets and CASE
(counted on sqlglot's tokens, before its recursive-descent parser runs), runs of prefix
operators, and the parsed tree's node count and depth (the checker below and the preview's
interpreter recurse along the tree). An expression past a bound is an `ExpressionTooLarge`
naming the bound; a parser recursion that slips past the token checks is reported the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from streamsift.config.spark_functions import SPARK_FUNCTIONS
from streamsift.config.types import FieldType

# Kinds of values an expression can produce (FieldType values plus date, null and any).
STRING, INT, FLOAT, BOOL, TIMESTAMP, DATE = "string", "int", "float", "bool", "timestamp", "date"
ARRAY, MAP, NULL, ANY, INTERVAL = "array", "map", "null", "any", "interval"
NUMERIC = {INT, FLOAT}

KIND_OF_FIELD: dict[FieldType, str] = {
    FieldType.STRING: STRING,
    FieldType.INT: INT,
    FieldType.FLOAT: FLOAT,
    FieldType.BOOL: BOOL,
    FieldType.TIMESTAMP: TIMESTAMP,
    FieldType.ARRAY: ARRAY,
    FieldType.MAP: MAP,
    FieldType.JSON: STRING,
}

# Result kind of sqlglot's typed function nodes; absent ones are `any` (arguments still checked).
_RESULT: dict[type, str] = {}
for _names, _kind in (
    (
        "Lower Upper Trim Concat ConcatWs Substring Replace RegexpReplace RegexpExtract Initcap "
        "Pad Left Right Reverse MD5 SHA SHA2 ToBase64 Chr Repeat UnixToStr TimeToStr DPipe Uuid "
        "Hex Unhex Lpad Rpad Translate Format",
        STRING,
    ),
    (
        "Length ArraySize Year Month Day Hour Minute Second DayOfWeek DayOfMonth DayOfYear "
        "WeekOfYear Quarter StrPosition StrToUnix TimeToUnix IntDiv",
        INT,
    ),
    ("Sqrt Ln Log Exp Pow Avg Rand", FLOAT),
    (
        "Like ILike RegexpLike ArrayContains StartsWith EndsWith Contains Is In Between "
        "EQ NEQ GT GTE LT LTE NullSafeEQ NullSafeNEQ And Or Not Xor",
        BOOL,
    ),
    ("CurrentTimestamp StrToTime TimestampTrunc UnixToTime TimeStrToTime", TIMESTAMP),
    ("CurrentDate TsOrDsToDate StrToDate DateTrunc", DATE),
    ("RegexpSplit Split Array", ARRAY),
):
    for _name in _names.split():
        _cls = getattr(exp, _name, None)
        if isinstance(_cls, type):
            _RESULT[_cls] = _kind

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)
_SAME_AS_ARGS = (exp.Abs, exp.Round, exp.Floor, exp.Ceil, exp.Greatest, exp.Least, exp.Coalesce)

_SPARK_TYPE_KIND = {
    "TINYINT": INT,
    "SMALLINT": INT,
    "INT": INT,
    "BIGINT": INT,
    "FLOAT": FLOAT,
    "DOUBLE": FLOAT,
    "DECIMAL": FLOAT,
    "TEXT": STRING,
    "VARCHAR": STRING,
    "CHAR": STRING,
    "BOOLEAN": BOOL,
    "TIMESTAMP": TIMESTAMP,
    "TIMESTAMPLTZ": TIMESTAMP,
    "TIMESTAMPNTZ": TIMESTAMP,
    "DATE": DATE,
    "ARRAY": ARRAY,
    "MAP": MAP,
}


# Bounds on an expression (see the module docstring).
MAX_TEXT = 10_000  # characters
MAX_NESTING = 24  # parentheses, brackets, braces and CASE, counted on tokens
MAX_PREFIX_RUN = 16  # NOT / - / + / ~ in a row
MAX_NODES = 2_000  # nodes of the parsed tree
MAX_DEPTH = 200  # levels of the parsed tree (a chain `a OR b OR ...` is one level per operator)

_OPEN = {TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE, TokenType.CASE}
_CLOSE = {TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE, TokenType.END}
_PREFIX = {TokenType.NOT, TokenType.DASH, TokenType.PLUS, TokenType.TILDE}


class ExpressionError(ValueError):
    """An expression that cannot run: bad SQL, an unknown field or function, a type mismatch."""


class ExpressionTooLarge(ExpressionError):
    """An expression past one of the bounds on its size or shape."""


def _nested_too_deeply() -> ExpressionTooLarge:
    return ExpressionTooLarge(
        f"nested too deeply (at most {MAX_NESTING} levels of parentheses, function calls or "
        f"CASE, {MAX_PREFIX_RUN} prefix operators in a row, and {MAX_DEPTH} operators in a chain)"
    )


def _check_tokens(text: str) -> None:
    if len(text) > MAX_TEXT:
        raise ExpressionTooLarge(f"too long ({len(text)} characters; at most {MAX_TEXT})")
    depth = run = 0
    for token in Spark().tokenize(text):
        kind = token.token_type
        depth += (kind in _OPEN) - (kind in _CLOSE)
        run = run + 1 if kind in _PREFIX else 0
        if depth > MAX_NESTING or run > MAX_PREFIX_RUN:
            raise _nested_too_deeply()


def _check_tree(tree: exp.Expression) -> None:
    count, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise ExpressionTooLarge(f"too large (more than {MAX_NODES} parts)")
        if depth > MAX_DEPTH:
            raise _nested_too_deeply()
        if isinstance(node, exp.Literal) and not node.is_string:
            digits = sum(c.isdigit() for c in node.this.lower().split("e", 1)[0])
            if digits > 38:
                raise ExpressionError(
                    f"the number {node.this[:20]}... has {digits} digits (Spark's limit is 38)"
                )
        stack.extend((child, depth + 1) for child in node.iter_expressions())


def parse_expression(text: str) -> exp.Expression:
    """Parse one Spark SQL row expression; refuse statements, subqueries and aggregates, and
    anything past the bounds on size and nesting."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("an expression is required")
    try:
        _check_tokens(text)
        tree = sqlglot.parse_one(text, read="spark")
    except (ParseError, TokenError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExpressionError(f"not valid Spark SQL: {first[:300]}") from None
    except RecursionError:
        raise _nested_too_deeply() from None
    except ExpressionError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, AttributeError) as exc:
        # sqlglot's builders of some functions fail on odd arguments (`map(1)`) this way
        raise ExpressionError(f"not valid Spark SQL ({type(exc).__name__}: {exc})"[:300]) from None
    _check_tree(tree)
    if isinstance(tree, (exp.Query, exp.Command, exp.DDL, exp.DML, exp.Alias)):
        raise ExpressionError("write one expression (no SELECT, statement or alias)")
    for node in tree.walk():
        if isinstance(node, (exp.Subquery, exp.Query)):
            raise ExpressionError("subqueries are not allowed")
        if isinstance(node, exp.AggFunc):
            raise ExpressionError(
                f"aggregate function {node.sql(dialect='spark')} is not allowed (expressions "
                "work on one record)"
            )
        if isinstance(node, exp.Window):
            raise ExpressionError("window functions are not allowed")
        if isinstance(node, exp.Star):
            raise ExpressionError("'*' is not allowed")
        if isinstance(node, exp.Anonymous) and node.name.lower() not in SPARK_FUNCTIONS:
            raise ExpressionError(f"unknown function {node.name}()")
    return tree


def is_field_path(node: exp.Expression) -> bool:
    """Whether `node` names a field (`a`, `a.b.c`), not a field of some other value
    (`upper(x).f`, or `v.f` of a lambda parameter `v`)."""
    while isinstance(node, exp.Dot):
        node = node.this
    return isinstance(node, exp.Column)


def column_name(node: exp.Column | exp.Dot) -> str:
    """The field path a column reference names: `user.id`, `` `user.id` ``, `a.b.c`."""
    if isinstance(node, exp.Dot):
        return f"{column_name(node.this)}.{node.expression.name}"  # type: ignore[arg-type]
    return ".".join(part.name for part in node.parts)


def resolve(name: str, scope: Mapping[str, FieldType]) -> str:
    """The field a column reference means: exact name, else a unique case-insensitive match."""
    if name in scope:
        return name
    matches = [n for n in scope if n.lower() == name.lower()]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(scope)) or "none"
    raise ExpressionError(f"unknown field {name!r} (fields: {known})")


def bare_boolean(node: exp.Expression) -> str | None:
    """`TRUE` or `FALSE` when a column reference is really a boolean word, else None."""
    if isinstance(node, exp.Column) and not node.table and node.name.upper() in ("TRUE", "FALSE"):
        return node.name.upper()
    return None


def check_expression(text: str, scope: Mapping[str, FieldType]) -> str:
    """Check `text` against the fields in `scope`; return the kind of value it produces."""
    tree = parse_expression(text)
    try:
        return _Checker(scope).kind(tree)
    except RecursionError:  # the bounds on depth keep this from happening; a safety net
        raise _nested_too_deeply() from None


class _Checker:
    def __init__(self, scope: Mapping[str, FieldType]) -> None:
        self.scope = scope

    def kind(self, node: exp.Expression) -> str:  # noqa: C901 - one branch per node type
        if isinstance(node, (exp.Column, exp.Dot)) and is_field_path(node):
            if bare_boolean(node):
                return BOOL
            return KIND_OF_FIELD[self.scope[resolve(column_name(node), self.scope)]]
        if isinstance(node, exp.Dot):  # `upper(x).f`, `v.f`: fields here are not structs
            raise ExpressionError(
                f"{node.sql(dialect='spark')[:80]}: '.' reads a field of the event, not of a "
                "computed value"
            )
        if isinstance(node, exp.Paren):
            return self.kind(node.this)
        if isinstance(node, exp.Literal):
            if node.is_string:
                return STRING
            return FLOAT if any(c in node.this for c in ".eE") else INT
        if isinstance(node, exp.Boolean):
            return BOOL
        if isinstance(node, exp.Null):
            return NULL
        if isinstance(node, exp.Interval):
            return INTERVAL
        if isinstance(node, (exp.And, exp.Or, exp.Xor)):
            for side in (node.this, node.expression):
                self.expect(
                    side, {BOOL}, f"{type(node).__name__.upper()} needs true/false operands"
                )
            return BOOL
        if isinstance(node, exp.Not):
            self.expect(node.this, {BOOL}, "NOT needs a true/false operand")
            return BOOL
        if isinstance(node, exp.Neg):
            self.expect(node.this, NUMERIC, "'-' needs a number")
            return self.kind(node.this)
        if isinstance(node, _COMPARISONS):
            self.comparable(node, node.this, node.expression)
            return BOOL
        if isinstance(node, exp.Between):
            self.comparable(node, node.this, node.args["low"])
            self.comparable(node, node.this, node.args["high"])
            return BOOL
        if isinstance(node, exp.In):
            for item in node.expressions:
                self.comparable(node, node.this, item)
            return BOOL
        if isinstance(node, exp.Is):
            self.kind(node.this)
            return BOOL
        if isinstance(node, (exp.Like, exp.ILike, exp.RegexpLike)):
            for side in (node.this, node.expression):
                self.expect(side, {STRING}, f"{node.key.upper()} needs text")
            return BOOL
        if isinstance(node, exp.DPipe):
            for side in _arguments(node):
                self.kind(side)
            return STRING
        if isinstance(node, _ARITHMETIC):
            return self.arithmetic(node)
        if isinstance(node, (exp.Cast, exp.TryCast)):
            self.kind(node.this)
            return _SPARK_TYPE_KIND.get(node.to.this.name, ANY)
        if isinstance(node, (exp.Case, exp.If)):
            return self.conditional(node)
        if isinstance(node, exp.Nullif):
            self.comparable(node, node.this, node.expression)
            return self.kind(node.this)
        # Functions: check every argument, then the result kind from the table (or any).
        arg_kinds = [self.kind(a) for a in _arguments(node)]
        if isinstance(node, _SAME_AS_ARGS):
            return _unify(node, [k for k in arg_kinds if k not in (NULL, ANY)][:1] or [ANY])
        return _RESULT.get(type(node), ANY)

    def expect(self, node: exp.Expression, kinds: set[str], why: str) -> None:
        got = self.kind(node)
        if got not in kinds | {NULL, ANY}:
            raise ExpressionError(f"{why}: {node.sql(dialect='spark')} is {_a(got)}")

    def comparable(self, parent: exp.Expression, a: exp.Expression, b: exp.Expression) -> None:
        ka, kb = self.kind(a), self.kind(b)
        if _comparable(ka, kb, b) and _comparable(kb, ka, a):
            return
        raise ExpressionError(
            f"type mismatch in {parent.sql(dialect='spark')}: cannot compare "
            f"{a.sql(dialect='spark')} ({ka}) with {b.sql(dialect='spark')} ({kb})"
        )

    def arithmetic(self, node: exp.Expression) -> str:
        ka, kb = self.kind(node.this), self.kind(node.expression)
        op = node.sql(dialect="spark")
        times = {ka, kb} & {TIMESTAMP, DATE}
        if times and (
            INTERVAL in (ka, kb) and isinstance(node, exp.Add) or isinstance(node, exp.Sub)
        ):
            return ka if ka in (TIMESTAMP, DATE) else kb
        for k, side in ((ka, node.this), (kb, node.expression)):
            if k not in NUMERIC | {NULL, ANY}:
                raise ExpressionError(
                    f"type mismatch in {op}: {side.sql(dialect='spark')} is {_a(k)}, not a number"
                )
        if isinstance(node, exp.IntDiv):
            return INT
        if isinstance(node, exp.Div) or FLOAT in (ka, kb):
            return FLOAT
        return INT if ka == kb == INT else ANY

    def conditional(self, node: exp.Expression) -> str:
        if isinstance(node, exp.If):
            self.expect(node.this, {BOOL}, "IF needs a true/false condition")
            results = [node.args.get("true"), node.args.get("false")]
        else:
            results = []
            subject = node.this  # CASE x WHEN 1 THEN ...: each WHEN is compared with x
            for when in node.args.get("ifs") or []:
                if subject is not None:
                    self.comparable(node, subject, when.this)
                else:
                    self.expect(when.this, {BOOL}, "CASE WHEN needs a true/false condition")
                results.append(when.args.get("true"))
            results.append(node.args.get("default"))
        kinds = [self.kind(r) for r in results if r is not None]
        return _unify(node, kinds)


def _arguments(node: exp.Expression) -> list[exp.Expression]:
    out: list[exp.Expression] = []
    for value in node.args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression) and not isinstance(
                item, (exp.DataType, exp.Var, exp.Identifier)
            ):
                out.append(item)
    return out


def _comparable(k: str, other: str, other_node: exp.Expression) -> bool:
    if NULL in (k, other) or ANY in (k, other) or k == other:
        return True
    if k in NUMERIC and other in NUMERIC:
        return True
    # A text literal compared with a time is read as a time by Spark ('2026-01-01').
    return (
        k in (TIMESTAMP, DATE)
        and (
            other in (TIMESTAMP, DATE) or (other == STRING and isinstance(other_node, exp.Literal))
        )
    ) or (k == STRING and other in (TIMESTAMP, DATE))


def _unify(node: exp.Expression, kinds: list[str]) -> str:
    real = [k for k in kinds if k not in (NULL, ANY)]
    if not real:
        return ANY if ANY in kinds else NULL
    if all(k in NUMERIC for k in real):
        return FLOAT if FLOAT in real else INT
    if all(k == real[0] for k in real):
        return real[0]
    raise ExpressionError(
        f"type mismatch in {node.sql(dialect='spark')}: its branches give {', '.join(real)}"
    )


def _a(kind: str) -> str:
    return {
        INT: "a number (int)",
        FLOAT: "a number (float)",
        STRING: "text",
        BOOL: "true/false",
    }.get(kind, f"a {kind}")


def fits(kind: str, declared: FieldType) -> bool:
    """Whether an expression of `kind` may be stored in a computed field of type `declared`."""
    target = KIND_OF_FIELD[declared]
    if kind in (NULL, ANY) or kind == target:
        return True
    return (kind == INT and target == FLOAT) or (kind == DATE and target == TIMESTAMP)
