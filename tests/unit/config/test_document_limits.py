"""Bounds on parsing a pipeline document (config/loader.py): nesting depth, YAML aliases that
hold themselves, integer length; and name patterns that refuse a trailing newline."""

from __future__ import annotations

import json

import pytest
import yaml

from streamsift.config.base import FIELD_PATH, IDENTIFIER, TOPIC_NAME
from streamsift.config.errors import ConfigError
from streamsift.config.loader import MAX_DEPTH, parse_document
from streamsift.config.sink import COLUMN_NAME


def nested(depth: int) -> dict:
    doc: dict = {"leaf": 1}
    for _ in range(depth - 1):
        doc = {"a": doc}
    return doc


@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_depth_up_to_the_limit_parses(syntax: str) -> None:
    doc = nested(MAX_DEPTH)
    text = json.dumps(doc) if syntax == "json" else yaml.safe_dump(doc)
    assert parse_document(text.encode(), syntax) == doc


@pytest.mark.parametrize("syntax", ["json", "yaml"])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000])
def test_deeper_is_a_config_error(syntax: str, depth: int) -> None:
    text = '{"x": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(ConfigError, match="nest"):  # ours, or libyaml's own limit (1000)
        parse_document(text.encode(), syntax)


def test_a_shared_alias_is_measured_once_and_counts_its_depth() -> None:
    # many references to one deep anchor: linear to check; depth counted through the alias
    inner = "{a: " * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1)
    text = f"base: &b {inner}\nrefs: [" + ", ".join(["*b"] * 2_000) + "]\n"
    with pytest.raises(ConfigError, match="nests deeper than"):
        parse_document(text.encode(), "yaml")
    ok = "base: &b {a: {b: 1}}\nrefs: [" + ", ".join(["*b"] * 2_000) + "]\n"
    assert len(parse_document(ok.encode(), "yaml")["refs"]) == 2_000


@pytest.mark.parametrize("text", ["x: &a [*a]", "x: &a {k: *a}", "x: &a [1, {y: [*a]}]"])
def test_an_alias_inside_its_own_value_is_a_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="refers to itself"):
        parse_document(text.encode(), "yaml")


@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_an_integer_past_pythons_limit_is_a_config_error(syntax: str) -> None:
    text = '{"n": ' + "7" * 5_000 + "}"
    with pytest.raises(ConfigError, match="digits"):
        parse_document(text.encode(), syntax)


@pytest.mark.parametrize("pattern", [IDENTIFIER, TOPIC_NAME, FIELD_PATH, COLUMN_NAME])
@pytest.mark.parametrize("tail", ["\n", "\r", "\x00", "\r\n"])
def test_name_patterns_refuse_a_trailing_control_character(pattern, tail: str) -> None:
    assert pattern.match("name")
    assert not pattern.match("name" + tail)
    assert not pattern.search("name" + tail)
