"""GlassFlow's filter and stateless expressions (expr-lang) translated to Spark SQL.

Only the common forms are translated: comparisons, `&&` / `and`, `||` / `or`, `!` / `not`,
arithmetic (`+ - * / %`), string and number literals, `true`/`false`/`nil`, field paths
(`user.id`), `in` / `not in` lists (`status in ['a', 'b']`), nil coalescing (`a ?? b`, as
COALESCE; it binds tighter than any other binary operator, as in expr-lang), map indexing
with a string key (`resource_attributes['cell.id']`, a missing key gives nil), the
conversions `toFloat(x)` / `toInt(x)` (CASTs: a value that does not convert sends the record
to the DLQ, where expr-lang fails it too), map literals with string keys
(`{'user_email': '[REDACTED]', 'service.name': m['service.name']}` → `map_from_arrays(...)`,
values as strings: our map fields are string to string), the string operators `contains`,
`startsWith`, `endsWith` and GlassFlow's string functions `upper`, `lower`, `trim`,
`hasPrefix`, `hasSuffix`, `containsStr`. Anything else (other function calls, `?:`,
`matches`, pipes, ...) is refused with a message naming the expression, so an import never
silently changes what a filter means.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""\s*(?:
    (?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op>\?\?|==|!=|<=|>=|&&|\|\||[<>!+\-*/%()\[\],{}:])
    )""",
    re.VERBOSE,
)
_COMPARE = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# expr-lang conversions and the Spark type each CASTs to
_CONVERSIONS = {"toFloat": "DOUBLE", "toInt": "BIGINT"}
# GlassFlow's string functions (name -> Spark SQL template of its arguments)
_STRING_FUNCTIONS = {
    "upper": (1, "upper({0})"),
    "lower": (1, "lower({0})"),
    "trim": (1, "trim({0})"),
    "hasPrefix": (2, "startswith({0}, {1})"),
    "hasSuffix": (2, "endswith({0}, {1})"),
    "containsStr": (2, "contains({0}, {1})"),
}
# expr-lang's string operators, as Spark SQL functions
_STRING_OPERATORS = {"contains": "contains", "startsWith": "startswith", "endsWith": "endswith"}
_FORMS = (
    "comparisons, &&, ||, !, arithmetic, literals, field paths, in lists, ??, map['key'], "
    "{'key': value} maps, contains/startsWith/endsWith, toFloat(), toInt(), upper(), lower(), "
    "trim(), hasPrefix(), hasSuffix(), containsStr()"
)


class ExprLangError(ValueError):
    """An expr-lang expression outside the translated forms."""


def translate(text: str) -> str:
    """Spark SQL for a GlassFlow expr-lang expression (ExprLangError if not translatable)."""
    tokens = _tokenize(text)
    parser = _Parser(tokens, text)
    sql = parser.expr_or()
    if parser.pos != len(tokens):
        raise parser.refuse(f"unexpected {tokens[parser.pos][1]!r}")
    return sql


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            rest = text[pos:].strip()
            raise ExprLangError(
                f"cannot translate GlassFlow expression {text!r}: {rest[:20]!r} is not one of "
                f"the forms streamsift translates ({_FORMS})"
            )
        kind = m.lastgroup or "op"
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], text: str) -> None:
        self.tokens, self.text, self.pos = tokens, text, 0

    def refuse(self, why: str) -> ExprLangError:
        return ExprLangError(
            f"cannot translate GlassFlow expression {self.text!r}: {why}; streamsift translates "
            f"{_FORMS}"
        )

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise self.refuse("it ends too early")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def expr_or(self) -> str:
        left = self.expr_and()
        while self.peek() in ("||", "or"):
            self.take()
            left = f"({left} OR {self.expr_and()})"
        return left

    def expr_and(self) -> str:
        left = self.expr_not()
        while self.peek() in ("&&", "and"):
            self.take()
            left = f"({left} AND {self.expr_not()})"
        return left

    def expr_not(self) -> str:
        if self.peek() in ("!", "not"):
            self.take()
            return f"(NOT {self.expr_not()})"
        return self.comparison()

    def comparison(self) -> str:
        left = self.additive()
        op = self.peek()
        if op in _COMPARE:
            self.take()
            return f"({left} {_COMPARE[op]} {self.additive()})"
        if op in _STRING_OPERATORS:
            self.take()
            return f"{_STRING_OPERATORS[op]}({left}, {self.additive()})"
        negate = False
        if op == "not" and self.pos + 1 < len(self.tokens) and self.tokens[self.pos + 1][1] == "in":
            self.take()
            negate, op = True, "in"
        if op == "in":
            self.take()
            if self.take()[1] != "[":
                raise self.refuse("'in' needs a list such as ['a', 'b']")
            items = []
            while self.peek() != "]":
                items.append(self.additive())
                if self.peek() == ",":
                    self.take()
            self.take()
            if not items:
                raise self.refuse("'in' needs a non-empty list")
            return f"({left} {'NOT IN' if negate else 'IN'} ({', '.join(items)}))"
        return left

    def additive(self) -> str:
        left = self.multiplicative()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            left = f"({left} {op} {self.multiplicative()})"
        return left

    def multiplicative(self) -> str:
        left = self.unary()
        while self.peek() in ("*", "/", "%"):
            op = self.take()[1]
            left = f"({left} {op} {self.unary()})"
        return left

    def unary(self) -> str:
        if self.peek() == "-":
            self.take()
            return f"(-{self.unary()})"
        return self.coalesce()

    def coalesce(self) -> str:
        items = [self.postfix()]
        while self.peek() == "??":
            self.take()
            items.append(self.postfix())
        return items[0] if len(items) == 1 else f"COALESCE({', '.join(items)})"

    def postfix(self) -> str:
        value = self.primary()
        while self.peek() == "[":
            self.take()
            kind, key = self.take()
            if kind != "str" or self.take()[1] != "]":
                raise self.refuse("only a string key is translated in [...] (map['key'])")
            value = f"try_element_at({value}, {self._string(key)})"
        return value

    def call(self, name: str) -> str:
        if name not in _CONVERSIONS and name not in _STRING_FUNCTIONS:
            raise self.refuse(f"function calls ({name}(...)) are not translated")
        self.take()
        args = [self.expr_or()]
        while self.peek() == ",":
            self.take()
            args.append(self.expr_or())
        if self.take()[1] != ")":
            raise self.refuse(f"missing ')' after the arguments of {name}()")
        count, template = _STRING_FUNCTIONS.get(
            name, (1, f"CAST({{0}} AS {_CONVERSIONS.get(name)})")
        )
        if len(args) != count:
            raise self.refuse(f"{name}() takes {count} argument{'s' if count > 1 else ''}")
        return template.format(*args)

    def map_literal(self) -> str:
        """`{'k': v, ...}` as `map_from_arrays(array('k', ...), array(CAST(v AS STRING), ...))`
        (our maps are string to string; Spark's `map(k, v, ...)` does not survive the
        expression compiler's sqlglot round trip)."""
        keys, values = [], []
        while self.peek() != "}":
            kind, key = self.take()
            if kind not in ("str", "name") or self.take()[1] != ":":
                raise self.refuse("a map literal's keys are strings: {'key': value}")
            quoted = self._string(key) if kind == "str" else f"'{key}'"
            value = self.expr_or()
            literal = value.startswith("'") and value.endswith("'") and value.count("'") == 2
            keys.append(quoted)
            values.append(value if literal else f"CAST({value} AS STRING)")
            if self.peek() == ",":
                self.take()
            elif self.peek() != "}":
                raise self.refuse("expected ',' or '}' in a map literal")
        self.take()
        if not keys:
            return "CAST(map_from_arrays(array(), array()) AS MAP<STRING, STRING>)"
        return f"map_from_arrays(array({', '.join(keys)}), array({', '.join(values)}))"

    @staticmethod
    def _string(value: str) -> str:
        body = value[1:-1]
        if value[0] == '"':
            body = body.replace('\\"', '"').replace("'", "\\'")
        return f"'{body}'"

    def primary(self) -> str:
        kind, value = self.take()
        if kind == "num":
            return value
        if kind == "str":
            return self._string(value)
        if value == "{":
            return self.map_literal()
        if value == "(":
            inner = self.expr_or()
            if self.take()[1] != ")":
                raise self.refuse("missing ')'")
            return f"({inner})"
        if kind == "name":
            lowered = value.lower()
            if lowered in ("true", "false"):
                return lowered.upper()
            if lowered == "nil":
                return "NULL"
            if lowered in ("and", "or", "not", "in") or value in _STRING_OPERATORS:
                raise self.refuse(f"unexpected {value!r}")
            if self.peek() == "(":
                return self.call(value)
            return f"`{value}`"
        raise self.refuse(f"unexpected {value!r}")
