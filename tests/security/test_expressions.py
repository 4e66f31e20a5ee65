"""The expression routes against a real `streamsift serve`: no expression text runs as code,
every size or shape of input is a 4xx naming the problem (never a 5xx), and no request can
stall the server (`/healthz` answers while a costly preview runs)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.servers import Serve

FIELDS = [
    {"name": "name", "type": "string"},
    {"name": "n", "type": "int"},
    {"name": "xs", "type": "array"},
    {"name": "m", "type": "map"},
    {"name": "user.id", "type": "int"},
]
KINDS = [None, "int", "string", "bool", "array"]
EVENT = {"name": "Bob", "n": 3, "xs": [1, 2, 3], "m": {"k": "v"}, "user": {"id": 7}}


def _body(route: str, expression: str, kind: str | None = None, event: dict = EVENT) -> dict:
    body: dict = {"expression": expression, "fields": FIELDS}
    if route == "evaluate":
        body["event"] = event
    if kind is not None:
        body["type"] = kind
    return body


def _payloads(target: Path) -> list[str]:
    """Expressions that, through a Python-generating executor, would write `target`."""
    write = f"open('{target}','w').write('1')"
    quoted = write.replace("'", "\\'")
    return [
        f"coalesce(`y={write}` -> 1, 1)",
        f"coalesce(`y={write}` -> 1, 1) = 1",
        f"transform(xs, `y={write}` -> 1)",
        f"filter(xs, `x) or {write} or (x` -> true)",
        f"exists(xs, `{write}` -> true)",
        f"aggregate(xs, 0, (`a={write}`, b) -> 1)",
        f"zip_with(xs, xs, (`p\n{write}\n`, q) -> 1)",
        f"transform(xs, (`__import__('os').system('touch {target}')`) -> 1)",
        f"`__class__` = 1 OR `{write}` IS NULL",
        f"name = '{quoted}'",
        "transform(xs, x -> `x.__class__.__init__`) IS NULL",
        f"m['{quoted}'] IS NULL",
        f"user.`{write}` IS NULL",
    ]


def test_no_expression_text_runs_as_code(client: httpx.Client, tmp_path: Path) -> None:
    target = tmp_path / "written-by-an-expression"
    for expression in _payloads(target):
        for route, kind in [(r, k) for r in ("validate", "evaluate") for k in KINDS]:
            answer = client.post(
                f"/api/v1/expressions/{route}", json=_body(route, expression, kind)
            )
            assert answer.status_code < 500, (expression, answer.text)
            assert not target.exists(), f"{route}: {expression!r} wrote a file"


def test_lambdas_are_evaluated_by_the_preview(client: httpx.Client) -> None:
    body = {
        "expression": "aggregate(transform(xs, `weird name()` -> CAST(`weird name()` AS INT) * 2), 0, "
        "(acc, v) -> acc + v)",
        "type": "int",
        "fields": FIELDS,
        "event": EVENT,
    }
    answer = client.post("/api/v1/expressions/evaluate", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["value"] == 12


def test_dunder_names_are_plain_field_names(client: httpx.Client) -> None:
    fields = [
        *FIELDS,
        {"name": "__class__", "type": "string"},
        {"name": "__import__", "type": "int"},
    ]
    body = {
        "expression": "concat(`__class__`, `__import__` + 1, size(transform(xs, __globals__ -> 1)))",
        "type": "string",
        "fields": fields,
        "event": {**EVENT, "__class__": "c", "__import__": 41},
    }
    answer = client.post("/api/v1/expressions/evaluate", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["value"] == "c423"


def _in_background(client: httpx.Client, body: dict) -> tuple[threading.Thread, list]:
    out: list = []

    def run() -> None:
        start = time.monotonic()
        answer = client.post("/api/v1/expressions/evaluate", json=body)
        out.append((answer, time.monotonic() - start))

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


@pytest.mark.parametrize(
    "expression",
    [
        "name LIKE '" + "%a" * 3000 + "b'",
        "name ILIKE '" + "%_a" * 2000 + "b'",
        "name RLIKE '(a+)+b'",
        "regexp_extract(name, '(a|aa)+$', 1) = ''",
        "size(transform(sequence(1, 10000), x -> transform(sequence(1, 10000), y -> x + y))) > 0",
        "length(repeat(repeat(repeat(name, 10000), 10000), 10000)) > 0",
    ],
)
def test_a_costly_preview_does_not_stall_the_server(open_server: Serve, expression: str) -> None:
    event = {**EVENT, "name": "a" * 60_000}
    body = {"expression": expression, "fields": FIELDS, "event": event}
    with (
        httpx.Client(base_url=open_server.url, timeout=60) as slow,
        httpx.Client(base_url=open_server.url, timeout=5) as quick,
    ):
        thread, out = _in_background(slow, body)
        time.sleep(0.05)
        for _ in range(5):
            start = time.monotonic()
            assert quick.get("/healthz").status_code == 200
            assert time.monotonic() - start < 1.0, "/healthz stalled behind an evaluate"
        thread.join(30)
    ((answer, took),) = out
    assert answer.status_code < 500, answer.text
    assert took < 10, f"the evaluate took {took:.1f}s"


def test_many_costly_previews_at_once_do_not_stall_the_server(open_server: Serve) -> None:
    body = _body(
        "evaluate",
        "size(transform(sequence(1, 10000), x -> transform(sequence(1, 10000), y -> y))) > 0",
    )
    with (
        httpx.Client(base_url=open_server.url, timeout=60) as slow,
        httpx.Client(base_url=open_server.url, timeout=5) as quick,
    ):
        started = [_in_background(slow, body) for _ in range(6)]
        time.sleep(0.05)
        for _ in range(5):
            start = time.monotonic()
            assert quick.get("/healthz").status_code == 200
            assert time.monotonic() - start < 1.0, "/healthz stalled behind evaluates"
        for thread, _ in started:
            thread.join(60)
    for _, out in started:
        ((answer, took),) = out
        assert answer.status_code == 400 and "bounded" in answer.json()["message"]
        assert took < 20


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("upper(" * 200 + "name" + ")" * 200 + " = 'x'", "nested too deeply"),
        (" OR ".join(["n = 1"] * 5000), "too"),
        ("n = 1 OR " * 300 + "n = 2", "nested too deeply"),
        ("NOT " * 3000 + "n = 1", "too"),
        ("name = '" + "x" * 200_000 + "'", "too long"),
        ("- " * 3000 + "n > 1", "too"),
        ("CASE WHEN " * 300 + "true THEN 1" + " END" * 300 + " = 1", "too"),
        ("array(" * 300 + "1" + ")" * 300 + " IS NULL", "nested too deeply"),
    ],
)
def test_oversized_expressions_are_named_4xx(
    client: httpx.Client, expression: str, words: str
) -> None:
    for route in ("validate", "evaluate"):
        answer = client.post(f"/api/v1/expressions/{route}", json=_body(route, expression))
        assert answer.status_code == 422, (route, answer.status_code, answer.text[:300])
        message = answer.json()["message"]
        assert message.startswith("expression"), message
        assert words in message, message


def test_a_number_past_sparks_precision_is_named(client: httpx.Client) -> None:
    for route in ("validate", "evaluate"):
        answer = client.post(f"/api/v1/expressions/{route}", json=_body(route, "n = " + "9" * 5000))
        assert answer.status_code == 400, answer.text[:300]
        assert "5000 digits (Spark's limit is 38)" in answer.json()["message"]


# ----------------------------------------------------------------------------- fuzzing

_FIELD_REFS = st.sampled_from(["name", "n", "xs", "m", "user.id", "`user.id`", "x", "nope"])
_LITERALS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False).map(repr),
    st.text(max_size=8).map(lambda s: "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"),
    st.sampled_from(["NULL", "true", "false", "DATE'2026-01-01'", "INTERVAL 1 DAY", "1e308"]),
)
_FUNCTIONS = st.sampled_from(
    [
        "upper",
        "lower",
        "length",
        "trim",
        "concat",
        "substring",
        "coalesce",
        "nullif",
        "if",
        "abs",
        "round",
        "floor",
        "ceil",
        "size",
        "array_contains",
        "element_at",
        "transform",
        "filter",
        "exists",
        "forall",
        "aggregate",
        "zip_with",
        "year",
        "hour",
        "to_date",
        "date_add",
        "datediff",
        "sequence",
        "array_repeat",
        "repeat",
        "lpad",
        "split",
        "regexp_extract",
        "rlike",
        "cast",
        "greatest",
        "least",
        "array",
        "map",
        "named_struct",
        "md5",
    ]
)
_BINARY = st.sampled_from(
    ["+", "-", "*", "/", "%", "div", "=", "<>", "<", ">=", "<=>", "AND", "OR", "||", "LIKE"]
)


def _compose(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, _BINARY, children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(_FUNCTIONS, st.lists(children, max_size=3)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
        st.tuples(children, st.sampled_from(["INT", "STRING", "DOUBLE", "DATE", "BOOLEAN"])).map(
            lambda t: f"CAST({t[0]} AS {t[1]})"
        ),
        children.map(lambda c: f"transform(xs, `x` -> {c})"),
        children.map(lambda c: f"NOT {c}"),
        st.tuples(children, children, children).map(
            lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"
        ),
        children.map(lambda c: f"{c} IS NULL"),
        st.tuples(children, children).map(lambda t: f"{t[0]} IN ({t[1]}, 1)"),
    )


_EXPRESSIONS = st.one_of(
    st.recursive(st.one_of(_FIELD_REFS, _LITERALS), _compose, max_leaves=12),
    st.text(max_size=60),
    st.text(alphabet="()`'\"-> ,.[]%_\\\n*+=abcxyz_0123456789", max_size=80),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
@given(
    expression=_EXPRESSIONS,
    route=st.sampled_from(["validate", "evaluate"]),
    kind=st.sampled_from([None, "string", "int", "float", "bool"]),
)
def test_fuzzed_expressions_never_answer_5xx(
    client: httpx.Client, tmp_path: Path, expression: str, route: str, kind: str | None
) -> None:
    start = time.monotonic()
    answer = client.post(f"/api/v1/expressions/{route}", json=_body(route, expression, kind))
    assert answer.status_code < 500, (expression, answer.text[:300])
    assert time.monotonic() - start < 5, expression
    assert not list(tmp_path.iterdir())
