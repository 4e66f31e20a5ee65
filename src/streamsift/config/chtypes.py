"""ClickHouse column types, read the way ClickHouse reads them.

A type is a family name, case-sensitive or not as ClickHouse registers it, or one of its SQL
aliases (`INT`, `VARCHAR(255)`, `DOUBLE PRECISION`, `BIGINT UNSIGNED`), with arguments:
nested types, literals (`3`, `'UTC'`, `'a' = 1`) and named elements (`Tuple(a String)`). The
family and alias tables below are ClickHouse's own `system.data_type_families`; a unit test
holds them against the engine the project ships (chdb), so they cannot drift unnoticed.
Parsed types print in canonical form (`int` -> `Int32`), which is what the sink writes in DDL.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Families whose name ClickHouse matches case-insensitively; all others are case-sensitive.
CASE_INSENSITIVE_FAMILIES = frozenset(
    {
        "Bool", "Date", "Date32", "DateTime", "DateTime32", "DateTime64", "Decimal", "Decimal32",
        "Decimal64", "Decimal128", "Decimal256", "Enum", "JSON", "Time", "Time64",
    }
)  # fmt: skip
_INTERVALS = frozenset(
    f"Interval{unit}"
    for unit in (
        "Nanosecond", "Microsecond", "Millisecond", "Second", "Minute", "Hour", "Day", "Week",
        "Month", "Quarter", "Year",
    )
)  # fmt: skip
_INTS = frozenset(f"{p}Int{b}" for p in ("", "U") for b in (8, 16, 32, 64, 128, 256))
_GEO = frozenset(
    {
        "Point", "Ring", "LineString", "MultiLineString", "Polygon", "MultiPoint",
        "MultiPolygon", "Geometry",
    }
)  # fmt: skip
# Families that never take arguments.
PLAIN_FAMILIES = (
    _INTS
    | _INTERVALS
    | _GEO
    | {"Float32", "Float64", "BFloat16", "Bool", "String", "UUID", "Date", "Date32", "IPv4"}
    | {"IPv6", "Nothing", "DateTime32", "Time"}
)
# Families with arguments (some optional: DateTime64 alone is DateTime64(3)).
FAMILIES_WITH_ARGS = frozenset(
    {
        "AggregateFunction", "Array", "DateTime", "DateTime64", "Decimal", "Decimal32",
        "Decimal64", "Decimal128", "Decimal256", "Dynamic", "Enum", "Enum8", "Enum16",
        "FixedString", "JSON", "LowCardinality", "Map", "Nested", "Nullable", "QBit",
        "SimpleAggregateFunction", "Time64", "Tuple", "Variant",
    }
)  # fmt: skip
# SQL-compatibility aliases (ClickHouse matches them case-insensitively), in upper case.
ALIASES: dict[str, str] = {
    "BOOL": "Bool", "BOOLEAN": "Bool", "TIMESTAMP": "DateTime", "DEC": "Decimal",
    "FIXED": "Decimal", "NUMERIC": "Decimal", "ENUM": "Enum", "BINARY": "FixedString",
    "FLOAT": "Float32", "REAL": "Float32", "SINGLE": "Float32", "DOUBLE": "Float64",
    "DOUBLE PRECISION": "Float64", "INET4": "IPv4", "INET6": "IPv6",
    "BYTE": "Int8", "INT1": "Int8", "INT1 SIGNED": "Int8", "TINYINT": "Int8",
    "TINYINT SIGNED": "Int8", "SMALLINT": "Int16", "SMALLINT SIGNED": "Int16", "INT": "Int32",
    "INT SIGNED": "Int32", "INTEGER": "Int32", "INTEGER SIGNED": "Int32", "MEDIUMINT": "Int32",
    "MEDIUMINT SIGNED": "Int32", "BIGINT": "Int64", "BIGINT SIGNED": "Int64", "SIGNED": "Int64",
    "INT1 UNSIGNED": "UInt8", "TINYINT UNSIGNED": "UInt8", "SMALLINT UNSIGNED": "UInt16",
    "YEAR": "UInt16", "INT UNSIGNED": "UInt32", "INTEGER UNSIGNED": "UInt32",
    "MEDIUMINT UNSIGNED": "UInt32", "BIGINT UNSIGNED": "UInt64", "BIT": "UInt64",
    "SET": "UInt64", "UNSIGNED": "UInt64",
    **dict.fromkeys(
        (
            "BINARY LARGE OBJECT", "BINARY VARYING", "BLOB", "BYTEA", "CHAR", "CHAR LARGE OBJECT",
            "CHAR VARYING", "CHARACTER", "CHARACTER LARGE OBJECT", "CHARACTER VARYING", "CLOB",
            "LONGBLOB", "LONGTEXT", "MEDIUMBLOB", "MEDIUMTEXT", "NATIONAL CHAR",
            "NATIONAL CHAR VARYING", "NATIONAL CHARACTER", "NATIONAL CHARACTER LARGE OBJECT",
            "NATIONAL CHARACTER VARYING", "NCHAR", "NCHAR LARGE OBJECT", "NCHAR VARYING",
            "NVARCHAR", "TEXT", "TINYBLOB", "TINYTEXT", "VARBINARY", "VARCHAR", "VARCHAR2",
        ),
        "String",
    ),
}  # fmt: skip
# Arguments ClickHouse accepts and ignores, for SQL compatibility (INT(11), VARCHAR(255),
# DOUBLE(10, 2)): how many literals each family may take.
IGNORED_ARGUMENTS = {**dict.fromkeys(_INTS, 1), "Float32": 2, "Float64": 2, "String": 1}
# The one alias ClickHouse matches case-sensitively.
CASE_SENSITIVE_ALIASES = {"GEOMETRY": "Geometry"}
_FAMILY_BY_UPPER = {f.upper(): f for f in CASE_INSENSITIVE_FAMILIES}
_ALL_FAMILIES = PLAIN_FAMILIES | FAMILIES_WITH_ARGS
_LONGEST_ALIAS = max(len(a.split()) for a in ALIASES)
_WRAPPERS = ("Nullable", "LowCardinality")
_AGGREGATES = ("AggregateFunction", "SimpleAggregateFunction")

_TOKEN = re.compile(
    r"\s*(?:(?P<name>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<lit>'(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"|(?P<p>[(),=]))"
)


@dataclass(frozen=True)
class CHType:
    """A parsed ClickHouse type: its canonical family name and its arguments.

    An argument is a nested type, or a literal kept as written (`3`, `'UTC'`, `'a' = 1`).
    `element` is the element name of a named Tuple/Nested/JSON member (`a` in `Tuple(a String)`).
    """

    name: str
    args: tuple[CHType | str, ...] = ()
    element: str | None = None

    def __str__(self) -> str:
        text = f"{self.name}({', '.join(str(a) for a in self.args)})" if self.args else self.name
        return f"{self.element} {text}" if self.element else text

    @property
    def inner(self) -> CHType:
        """The type under Nullable/LowCardinality wrappers."""
        t = self
        while t.name in _WRAPPERS and t.args and isinstance(t.args[0], CHType):
            t = t.args[0]
        return t

    @property
    def nullable(self) -> bool:
        t = self
        while t.name in _WRAPPERS and t.args and isinstance(t.args[0], CHType):
            if t.name == "Nullable":
                return True
            t = t.args[0]
        return False


def family_name(word: str) -> str | None:
    """The canonical family for a (possibly multi-word) name, or None if ClickHouse has none."""
    if word in _ALL_FAMILIES:
        return word
    if word in CASE_SENSITIVE_ALIASES:
        return CASE_SENSITIVE_ALIASES[word]
    upper = " ".join(word.split()).upper()
    return _FAMILY_BY_UPPER.get(upper) or ALIASES.get(upper)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise ValueError(f"cannot read ClickHouse type {text!r} at position {pos}")
            kind = m.lastgroup or "p"
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def peek(self, ahead: int = 0) -> tuple[str, str] | None:
        i = self.i + ahead
        return self.tokens[i][:2] if i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise ValueError(f"unexpected end of ClickHouse type {self.text!r}")
        self.i += 1
        return tok

    def family(self) -> tuple[str, str]:
        """Read a type name, joining the words of multi-word aliases (DOUBLE PRECISION)."""
        kind, first = self.take()
        if kind != "name":
            raise ValueError(f"expected a type name in {self.text!r}, got {first!r}")
        words = [first]
        best = (1, family_name(first))
        while len(words) < _LONGEST_ALIAS and (tok := self.peek(len(words) - 1)) is not None:
            if tok[0] != "name":
                break
            words.append(tok[1])
            found = family_name(" ".join(words))
            if found:
                best = (len(words), found)
        self.i += best[0] - 1
        written = " ".join(words[: best[0]])
        if best[1] is None:
            raise ValueError(f"unknown ClickHouse type {written!r}")
        return written, best[1]

    def parse_type(self) -> CHType:
        written, name = self.family()
        if self.peek() != ("p", "("):
            return CHType(name)
        if name in PLAIN_FAMILIES and name not in IGNORED_ARGUMENTS:
            raise ValueError(f"ClickHouse type {name!r} takes no arguments, got {written}(...)")
        self.take()
        if self.peek() == ("p", ")"):  # DateTime64() is DateTime64, Tuple() the empty tuple
            self.take()
            check_arguments(CHType(name))
            return CHType(name)
        args = self.arguments(name)
        if name in IGNORED_ARGUMENTS:
            if len(args) > IGNORED_ARGUMENTS[name] or not all(isinstance(a, str) for a in args):
                raise ValueError(f"bad arguments for {name}: {written}(...) in {self.text!r}")
            return CHType(name)  # VARCHAR(255) is a String: ClickHouse ignores the length
        return CHType(name, tuple(args))

    def arguments(self, name: str) -> list[CHType | str]:
        args: list[CHType | str] = []
        while True:
            if name in _AGGREGATES and not args:
                args.append(self.function())
            else:
                args.append(self.argument(name))
            sep = self.take()
            if sep == ("p", ")"):
                return args
            if sep != ("p", ","):
                raise ValueError(f"expected ',' or ')' in {name}(...) of {self.text!r}")

    def argument(self, outer: str) -> CHType | str:
        tok = self.peek()
        if tok is None:
            raise ValueError(f"missing ')' after {outer}( in {self.text!r}")
        if tok[0] == "lit":
            literal = self.take()[1]
            if self.peek() == ("p", "="):  # Enum8('a' = 1)
                self.take()
                kind, number = self.take()
                if kind != "lit":
                    raise ValueError(f"expected a number after '=' in {outer}(...)")
                literal = f"{literal} = {number}"
            return literal
        if tok[0] != "name":
            raise ValueError(f"expected a type name or a value in {outer}(...) of {self.text!r}")
        if outer in ("Dynamic", "JSON") and self.peek(1) == ("p", "="):
            key = self.take()[1]  # Dynamic(max_types=8), JSON(max_dynamic_paths=100)
            self.take()
            return f"{key}={self.take()[1]}"
        nxt = self.peek(1)
        named = outer in ("Tuple", "Nested", "JSON") and nxt is not None and nxt[0] == "name"
        # a named element: `a String`, unless the two words are one alias (DOUBLE PRECISION)
        if named and family_name(f"{tok[1]} {nxt[1]}") is None:
            element = self.take()[1]
            return _named(self.parse_type(), element)
        return self.parse_type()

    def function(self) -> str:
        """The function of an aggregate-function type, as written: `sum`, `quantiles(0.5, 0.9)`."""
        first = self.i
        kind, name = self.take()
        if kind != "name":
            raise ValueError(f"expected an aggregate function name in {self.text!r}, got {name!r}")
        if self.peek() == ("p", "("):
            depth = 0
            while True:
                kind, text = self.take()
                if kind == "p" and text in "()":
                    depth += 1 if text == "(" else -1
                if depth == 0:
                    break
        _, last, at = self.tokens[self.i - 1]
        return self.text[self.tokens[first][2] : at + len(last)]


def _named(t: CHType, element: str) -> CHType:
    return CHType(t.name, t.args, element)


def parse_clickhouse_type(text: str) -> CHType:
    """Parse a ClickHouse column type as ClickHouse would; ValueError says what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("a ClickHouse column type is required, e.g. String, UInt64, DateTime64(3)")
    parser = _Parser(text.strip())
    result = parser.parse_type()
    if parser.peek() is not None:
        raise ValueError(f"unexpected text after ClickHouse type in {text!r}")
    check_arguments(result)
    return result


def _counts(t: CHType) -> tuple[int, int]:
    return sum(isinstance(a, CHType) for a in t.args), sum(isinstance(a, str) for a in t.args)


def check_arguments(t: CHType) -> None:
    """The argument rules ClickHouse enforces when it builds a type, with its reasons."""
    types, lits = _counts(t)
    exact = {"Nullable": (1, 0), "LowCardinality": (1, 0), "Array": (1, 0), "Map": (2, 0)}
    if t.name in exact and (types, lits) != exact[t.name]:
        raise ValueError(f"{t.name} takes {exact[t.name][0]} type argument(s): {t}")
    if t.name == "Nullable" and isinstance(t.args[0], CHType):
        arg = t.args[0]
        if arg.name in ("Array", "Map", "Tuple", "Nested", "Nullable", "LowCardinality"):
            raise ValueError(f"{arg} cannot be inside Nullable: write Nullable inside it ({t})")
    if t.name == "FixedString" and (lits != 1 or types):
        raise ValueError(f"FixedString takes a length: FixedString(16), got {t}")
    if t.name == "Decimal" and (lits > 2 or types):
        raise ValueError(f"Decimal takes precision and scale: Decimal(18, 4), got {t}")
    if t.name.startswith("Decimal") and t.name != "Decimal" and (lits != 1 or types):
        raise ValueError(f"{t.name} takes a scale: {t.name}(4), got {t}")
    if (
        t.name == "DateTime64"
        and (lits > 2 or types)
        or t.name == "DateTime"
        and (lits > 1 or types)
    ):
        raise ValueError(f"bad arguments for {t.name}: {t}")
    if t.name in ("Enum", "Enum8", "Enum16") and (types or not lits):
        raise ValueError(f"{t.name} takes its values: {t.name}('a' = 1, 'b' = 2), got {t}")
    if t.name in ("Tuple", "Nested", "Variant") and (lits or not types and t.name != "Tuple"):
        raise ValueError(f"{t.name} takes types: {t.name}(...), got {t}")
    if t.name in ("Tuple", "Nested"):
        named = sum(isinstance(a, CHType) and a.element is not None for a in t.args)
        if t.name == "Nested" and named != types or 0 < named < types:
            raise ValueError(f"name every element of {t.name} or none of them: {t}")
    for arg in t.args:
        if isinstance(arg, CHType):
            check_arguments(arg)
