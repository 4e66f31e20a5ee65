"""Read a pipeline file (YAML or JSON, ours or GlassFlow's) into a validated `Pipeline`.

Parsing is bounded so that no input crashes a reader (the CLI, or the API, where a crash would
be a 500): a document nests at most MAX_DEPTH levels (a pipeline needs about eight; deeper JSON
would exhaust Python's recursion in the parser or in validation), holds no YAML alias that
refers to itself (a structure without end), and no integer longer than Python converts
(4,300 digits); each is a `ConfigError` naming the problem.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from streamsift.config.errors import ConfigError, format_validation_error
from streamsift.config.models import Pipeline

# A pipeline file is a few KB; even one with thousands of fields stays far below this. The API
# caps request bodies at the same size.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
# How deep a document may nest: mappings and lists inside each other.
MAX_DEPTH = 64
# libyaml's loader when PyYAML was built with it (PyPI wheels are): ~10x faster on big files.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def is_glassflow(doc: dict[str, Any]) -> bool:
    """GlassFlow pipeline JSON has a `pipeline_id` (v2/v3) or a v1 `source.topics` list."""
    if "pipeline_id" in doc or str(doc.get("version", "")).strip() in ("v2", "v3", "2.0.0"):
        return True
    source = doc.get("source")
    return isinstance(source, dict) and "topics" in source


def read_document(path: str | Path) -> dict[str, Any]:
    """Parse a YAML or JSON file into a mapping; ConfigError on unreadable or malformed input."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from exc
    if len(data) > MAX_DOCUMENT_BYTES:
        raise ConfigError(
            f"the file is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB, the limit for "
            "a pipeline document",
            str(path),
        )
    return parse_document(data, "json" if path.suffix.lower() == ".json" else "yaml", str(path))


def parse_document(data: bytes, syntax: str, source: str | None = None) -> dict[str, Any]:
    """Parse a document's bytes as `syntax` ("json" or "yaml") into a mapping; ConfigError,
    naming line and column, on malformed input. Used for files and for API request bodies."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: byte {exc.start} cannot be decoded", source) from exc
    try:
        doc = json.loads(text) if syntax == "json" else yaml.load(text, _YAML_LOADER)
    except RecursionError:
        raise ConfigError(_too_deep(), source) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source
        ) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}{where}", source) from exc
    except ValueError as exc:  # Python's limit on int("<digits>") (JSON and YAML integers)
        if "digits" not in str(exc):
            raise
        raise ConfigError(
            f"a number is too long: integers are limited to {sys.get_int_max_str_digits()} digits",
            source,
        ) from None
    problem = _shape_problem(doc)
    if problem is not None:
        raise ConfigError(problem, source)
    if not isinstance(doc, dict):
        raise ConfigError(
            "a pipeline document must hold a mapping (key: value pairs) at the top", source
        )
    return doc


def _too_deep() -> str:
    return (
        f"the document nests deeper than {MAX_DEPTH} levels (mappings and lists inside each other)"
    )


def _shape_problem(doc: Any) -> str | None:
    """Why `doc` cannot be a document: nested deeper than MAX_DEPTH, or a YAML alias that holds
    itself (None: neither). Iterative, and each shared node (a YAML alias) is measured once."""
    depth: dict[int, int] = {}  # id -> depth below it, measured; -1 while being measured
    stack: list[tuple[Any, int, bool]] = [(doc, 1, False)]
    while stack:
        node, level, done = stack.pop()
        children = _containers(node)
        if done:
            depth[id(node)] = 1 + max((depth[id(c)] for c in children), default=0)
            continue
        if level > MAX_DEPTH:
            return _too_deep()
        seen = depth.get(id(node))
        if seen == -1:
            return "a YAML alias refers to itself (an anchor used inside its own value)"
        if seen is not None:
            if level + seen - 1 > MAX_DEPTH:
                return _too_deep()
            continue
        depth[id(node)] = -1
        stack.append((node, level, True))
        stack.extend((c, level + 1, False) for c in children)
    return None


def _containers(node: Any) -> list[Any]:
    if isinstance(node, dict):
        values: Any = node.values()
    elif isinstance(node, list):
        values = node
    else:
        return []
    return [v for v in values if isinstance(v, (dict, list))]


def parse_pipeline(doc: dict[str, Any], source: str | None = None) -> Pipeline:
    """Validate a mapping as a pipeline, converting GlassFlow's format first when detected."""
    if is_glassflow(doc):
        from streamsift.config.glassflow import convert_glassflow

        try:
            doc = convert_glassflow(doc)
        except ConfigError as exc:
            raise ConfigError(exc.problems, source=source) from None
    try:
        return Pipeline.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc), source=source) from None


def load_pipeline(path: str | Path) -> Pipeline:
    return parse_pipeline(read_document(path), source=str(path))
