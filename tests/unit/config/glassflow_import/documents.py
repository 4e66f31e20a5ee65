"""GlassFlow documents for the tests: the example files, and ways to change them."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from streamsift.config import ConfigError
from streamsift.config.glassflow import convert_glassflow
from support.paths import EXAMPLES

VERSIONS = ("v1", "v2", "v3")

MAPPING = [
    {"field": "event_id", "column": "event_id", "type": "UUID"},
    {"field": "user.id", "column": "user_id", "type": "UUID"},
    {"field": "user.name", "column": "name", "type": "String"},
    {"field": "user.email", "column": "email", "type": "String"},
    {"field": "created_at", "column": "created_at", "type": "DateTime"},
    {"field": "tags", "column": "tags", "type": "Array(String)"},
]

PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2FmZQ==\n-----END CERTIFICATE-----\n"

DELETE = object()


def example(version: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"glassflow-dedup-{version}.json").read_text(encoding="utf-8"))


def changed(doc: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """A deep copy of `doc` with the value at a dotted path replaced (or appended to a list)."""
    doc = copy.deepcopy(doc)
    parts: list[str | int] = [
        int(p) if p.isdigit() else p for p in path.replace("]", "").replace("[", ".").split(".")
    ]
    node: Any = doc
    for part in parts[:-1]:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    last = parts[-1]
    if value is DELETE:
        del node[last]
    elif isinstance(last, int) and last == len(node):
        node.append(value)
    else:
        node[last] = value
    return doc


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        convert_glassflow(doc)
    return info.value.problems


def kafka_source(source_id: str, topic: str, fields: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "type": "kafka",
        "source_id": source_id,
        "connection_params": {"brokers": ["127.0.0.1:9092"], "protocol": "PLAINTEXT"},
        "topic": topic,
        "schema_fields": fields,
    }


def join_example(version: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / f"glassflow-join-{version}.json").read_text(encoding="utf-8"))


def names_the_field(cases: list[tuple[str, str, object, str]]) -> Any:
    """A test: each (version, path, value, expected) case changes one field of that version's
    example and expects exactly that one problem, naming the GlassFlow field."""

    @pytest.mark.parametrize(
        ("version", "path", "value", "expected"),
        cases,
        ids=[f"{c[0]}:{c[1]}={c[2]!r}"[:80] for c in cases],
    )
    def test(version: str, path: str, value: object, expected: str) -> None:
        assert problems(changed(example(version), path, value)) == [expected]

    return test
