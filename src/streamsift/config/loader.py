"""Read a pipeline file (YAML or JSON, ours or GlassFlow's) into a validated `Pipeline`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from streamsift.config.errors import ConfigError, format_validation_error
from streamsift.config.models import Pipeline

# A pipeline file is a few KB; even one with thousands of fields stays far below this. The API
# caps request bodies at the same size.
MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
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
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source
        ) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}{where}", source) from exc
    if not isinstance(doc, dict):
        raise ConfigError(
            "a pipeline document must hold a mapping (key: value pairs) at the top", source
        )
    return doc


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
