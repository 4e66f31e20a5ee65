"""ClickHouse type names, read as ClickHouse reads them: held against the engine we ship (chdb).

chdb runs in a subprocess: the test session may already hold an embedded ClickHouse
directory open, and chdb allows one per process.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from streamsift.config.chtypes import (
    ALIASES,
    CASE_INSENSITIVE_FAMILIES,
    CASE_SENSITIVE_ALIASES,
    FAMILIES_WITH_ARGS,
    PLAIN_FAMILIES,
    parse_clickhouse_type,
)
from streamsift.config.models import ColumnMapping

ACCEPTED = [
    "DateTime64",
    "DateTime64()",
    "Tuple()",
    "datetime64(3)",
    "DateTime64(3, 'UTC')",
    "DateTime('Europe/Berlin')",
    "Tuple(a String)",
    "Tuple(a String, b Nullable(Int8))",
    "Tuple(String, UInt8)",
    "Nested(a String, b UInt8)",
    "Map(String, Array(Tuple(x Int8)))",
    "LowCardinality(Nullable(String))",
    "Enum8('a' = 1, 'b' = 2)",
    "Enum('a', 'b')",
    "Variant(String, UInt8)",
    "Dynamic",
    "Dynamic(max_types=3)",
    "JSON",
    "Time",
    "Time64(3)",
    "Decimal",
    "Decimal(10)",
    "Decimal(18, 4)",
    "Decimal32(2)",
    "decimal(9, 2)",
    "FixedString(3)",
    "VARCHAR(255)",
    "INT(11)",
    "DOUBLE(10, 2)",
    "BINARY(16)",
    "String(1)",
    "int",
    "INTEGER",
    "BIGINT UNSIGNED",
    "double precision",
    "DOUBLE",
    "Float",
    "boolean",
    "text",
    "timestamp",
    "SimpleAggregateFunction(sum, UInt64)",
    "AggregateFunction(uniq, UInt64)",
    "AggregateFunction(quantiles(0.5, 0.9), Float64)",
    "IPv4",
    "INET6",
    "Point",
    "IntervalDay",
    "Int128",
    "UInt256",
    "BFloat16",
    "Array(Nullable(String))",
    "Tuple(x DOUBLE PRECISION, y BIGINT UNSIGNED)",
    "  String ",
]
REFUSED = [
    "Strin",
    "Foo(1)",
    "Nullable(Array(String))",
    "Tuple(String, a UInt8)",
    "Int32(Int8)",
    "Bool(1)",
    "Float64(1, 2, 3)",
    "Array(String",
    "Array(String, String)",
    "Map(String)",
    "String)",
    "FixedString",
    "Decimal32",
    "Interval",
    "string",
    "uint64",
    "",
]


def _chdb(script: str, payload: object) -> object:
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(payload)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


ACCEPTS_SCRIPT = """
import json, sys, tempfile
from chdb.session import Session
s = Session(tempfile.mkdtemp())
verdicts = {}
for i, t in enumerate(json.loads(sys.argv[1])):
    try:
        s.query(f"CREATE TABLE t{i} (x {t}) ENGINE = Memory")
        rows = s.query(f"SELECT type FROM system.columns WHERE table = 't{i}'", "JSONEachRow")
        first = rows.bytes().decode().splitlines()[0]
        verdicts[t] = " ".join(json.loads(first)["type"].split())
    except Exception as exc:  # chdb raises its own error type for any refusal
        verdicts[t] = None
print(json.dumps(verdicts))
"""


@pytest.fixture(scope="module")
def clickhouse_verdicts() -> dict[str, str | None]:
    return _chdb(ACCEPTS_SCRIPT, ACCEPTED + [t for t in REFUSED if t])  # type: ignore[return-value]


@pytest.mark.parametrize("text", ACCEPTED)
def test_types_clickhouse_accepts_are_accepted(text: str, clickhouse_verdicts: dict) -> None:
    assert clickhouse_verdicts[text] is not None, f"chdb refuses {text!r}: fix the list"
    parsed = parse_clickhouse_type(text)
    # the canonical form is a type ClickHouse reads as the same type
    assert _chdb_type(str(parsed), clickhouse_verdicts) == clickhouse_verdicts[text]


def _chdb_type(text: str, verdicts: dict) -> str | None:
    if text not in verdicts:
        verdicts.update(_chdb(ACCEPTS_SCRIPT, [text]))  # type: ignore[arg-type]
    return verdicts[text]


@pytest.mark.parametrize("text", REFUSED)
def test_types_clickhouse_refuses_are_refused(text: str, clickhouse_verdicts: dict) -> None:
    if text:
        assert clickhouse_verdicts[text] is None, f"chdb accepts {text!r}: fix the list"
    with pytest.raises(ValueError):
        parse_clickhouse_type(text)


def test_family_and_alias_tables_are_clickhouses_own() -> None:
    families = _chdb(
        """
import json, chdb
rows = chdb.query("SELECT name, case_insensitive, alias_to FROM system.data_type_families",
                  "JSONEachRow").bytes().decode().splitlines()
print(json.dumps([json.loads(r) for r in rows]))
""",
        None,
    )
    ours = PLAIN_FAMILIES | FAMILIES_WITH_ARGS
    theirs = {f["name"] for f in families if not f["alias_to"]}  # type: ignore[union-attr]
    assert ours == theirs
    insensitive = {f["name"] for f in families if f["case_insensitive"] and not f["alias_to"]}  # type: ignore[union-attr]
    assert insensitive == CASE_INSENSITIVE_FAMILIES
    aliases = {
        (f["name"].upper() if f["case_insensitive"] else f["name"]): f["alias_to"]  # type: ignore[index]
        for f in families  # type: ignore[union-attr]
        if f["alias_to"]  # type: ignore[index]
    }
    assert aliases == {**ALIASES, **CASE_SENSITIVE_ALIASES}


def test_unknown_type_names_the_word_not_a_tuple_element() -> None:
    with pytest.raises(ValueError, match="unknown ClickHouse type 'Strng'"):
        parse_clickhouse_type("Tuple(a Strng)")


def test_mapping_type_is_written_in_canonical_form() -> None:
    mapping = ColumnMapping(field="id", column="id", type="bigint unsigned")
    assert mapping.type == "UInt64"
    assert ColumnMapping(field="t", column="t", type="DateTime64").ch_type.name == "DateTime64"
