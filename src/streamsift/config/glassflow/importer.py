"""The import itself: which GlassFlow version a document is, its conversion, and YAML output."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import yaml

from streamsift.config.errors import ConfigError
from streamsift.config.glassflow.document import pipeline_name
from streamsift.config.glassflow.joins import join_enabled
from streamsift.config.glassflow.legacy import convert_legacy
from streamsift.config.glassflow.legacy_common import refuse_legacy
from streamsift.config.glassflow.legacy_join import legacy_join
from streamsift.config.glassflow.otlp import with_v3_sources
from streamsift.config.glassflow.reader import Reader
from streamsift.config.glassflow.v3 import convert_v3, refuse_v3, v3_join


@dataclass(frozen=True)
class GlassFlowImport:
    """A converted GlassFlow pipeline: our document plus notes on what changed in meaning."""

    version: str
    pipeline_id: str
    document: dict[str, Any]
    notes: tuple[str, ...]


def glassflow_version(doc: dict[str, Any]) -> str:
    """Which GlassFlow format `doc` is in: "v1", "v2" or "v3"; ConfigError for unknown versions."""
    raw = doc.get("version")
    text = "" if raw is None else str(raw).strip().lower()
    if text == "":
        return "v3" if "sources" in doc else "v1"
    if text == "v3":
        return "v3"
    if text in ("v2", "2.0.0"):
        return "v2"
    if text in ("v1", "1.0.0"):
        return "v1"
    raise ConfigError(
        f"version: unsupported GlassFlow pipeline version {raw!r}; "
        'expected "v3", "v2" or "2.0.0" (v1 files have no version)'
    )


def import_glassflow(doc: dict[str, Any], *, create_table: bool = False) -> GlassFlowImport:
    """Convert and validate a GlassFlow pipeline; ConfigError lists every problem found.

    `create_table` defaults to False because GlassFlow expects the table to exist.
    """
    if not isinstance(doc, dict):
        raise ConfigError("a GlassFlow pipeline must be a JSON object")
    version = glassflow_version(doc)
    if version == "v3":
        doc = with_v3_sources(doc)
    reader = Reader(doc, version)
    name = pipeline_name(reader)
    document = _convert(reader, name, create_table)
    reader.validate(document)
    return GlassFlowImport(
        version=version,
        pipeline_id=str(doc.get("pipeline_id", "")).strip(),
        document=document,
        notes=tuple(reader.notes),
    )


def _convert(r: Reader, name: str, create_table: bool) -> dict[str, Any]:
    """Our document: the shapes we cannot run refused first, then a join or one source."""
    if r.version == "v3":
        refuse_v3(r)
        convert = v3_join if join_enabled(r.doc) else convert_v3
    else:
        refuse_legacy(r)
        convert = legacy_join if join_enabled(r.doc) else convert_legacy
    return convert(r, name, create_table)


def convert_glassflow(doc: dict[str, Any], *, create_table: bool = False) -> dict[str, Any]:
    """A GlassFlow pipeline (v1, v2 or v3) as a streamsift pipeline document (a plain dict)."""
    return import_glassflow(doc, create_table=create_table).document


def glassflow_to_yaml(doc: dict[str, Any], *, create_table: bool = False) -> str:
    """A GlassFlow pipeline as streamsift YAML, with the import notes as comments on top.

    Secrets are written as given (v1/v2 passwords base64-decoded): the result is the user's own
    pipeline file, so treat it like the GlassFlow file it came from.
    """
    result = import_glassflow(doc, create_table=create_table)
    header = [
        f"# streamsift pipeline imported from GlassFlow pipeline {result.pipeline_id!r} "
        f"(format {result.version}).",
        "# Field reference: docs/configuration.md. Import notes:",
    ]
    for note in result.notes:
        lines = textwrap.wrap(note, width=94)
        header.append(f"#  - {lines[0]}")
        header.extend(f"#    {line}" for line in lines[1:])
    body = yaml.dump(result.document, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True)
    return "\n".join(header) + "\n" + body


class _YamlDumper(yaml.SafeDumper):
    """Safe YAML, with multi-line strings (PEM certificates) as readable `|` blocks."""


def _str_representer(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_YamlDumper.add_representer(str, _str_representer)
