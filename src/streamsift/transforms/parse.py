"""JSON payloads to typed Arrow columns, per the pipeline's schema.

A batch is first parsed in one go by pyarrow's JSON reader (fast); if that fails anywhere
(a malformed line, a type mismatch, a payload it cannot see as one line), its halves are tried
again and what the reader still refuses is parsed record by record in Python, which is also
the reference for what each type accepts and which error message a bad record gets. Bad
records are flagged, never dropped.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from streamsift.config.types import SCALAR_TYPES, FieldType

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UTC = timezone.utc

ARROW_TYPES: dict[FieldType, pa.DataType] = {
    FieldType.STRING: pa.string(),
    FieldType.INT: pa.int64(),
    FieldType.FLOAT: pa.float64(),
    FieldType.BOOL: pa.bool_(),
    FieldType.TIMESTAMP: pa.timestamp("us", tz="UTC"),
    FieldType.ARRAY: pa.list_(pa.string()),
    FieldType.MAP: pa.map_(pa.string(), pa.string()),
    FieldType.JSON: pa.string(),
}
# Field types the batch-at-once pyarrow path handles; other schemas parse record by record.
_FAST_TYPES = SCALAR_TYPES | {FieldType.ARRAY}
# A refused batch this small is parsed record by record rather than split again.
SPLIT_MIN = 128


class ValueTypeError(ValueError):
    """A JSON value does not match its field's declared type."""


@dataclass(frozen=True)
class FieldSpec:
    """A field to extract: its dot path, its column name and its type."""

    path: str
    column: str
    type: FieldType

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("."))


@dataclass
class ParseResult:
    """Typed columns for every record (nulls where the record is bad) and per-record errors."""

    table: pa.Table
    errors: list[str | None]


def parse_timestamp(value: Any) -> datetime:
    """ISO-8601 (zone optional, UTC assumed), `YYYY-MM-DD HH:MM:SS`, or unix seconds."""
    if isinstance(value, bool):
        raise ValueTypeError("expected a timestamp, got a boolean")
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueTypeError(f"expected a timestamp, got {value}")
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise ValueTypeError(f"timestamp {value} is out of range") from exc
    if not isinstance(value, str):
        raise ValueTypeError(f"expected a timestamp, got {json_kind(value)}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueTypeError(f"{value!r} is not an ISO-8601 timestamp") from exc
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def convert_value(value: Any, ftype: FieldType) -> Any:
    """Check one JSON value against a field type and return it in its Arrow-ready form."""
    if value is None:
        return None
    if ftype is FieldType.STRING:
        if isinstance(value, str):
            return value
    elif ftype is FieldType.INT:
        if isinstance(value, int) and not isinstance(value, bool):
            if INT64_MIN <= value <= INT64_MAX:
                return value
            raise ValueTypeError(f"{value} does not fit a 64-bit integer")
    elif ftype is FieldType.FLOAT:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif ftype is FieldType.BOOL:
        if isinstance(value, bool):
            return value
    elif ftype is FieldType.TIMESTAMP:
        return parse_timestamp(value)
    elif ftype is FieldType.ARRAY:
        if isinstance(value, list):  # elements other than strings travel as JSON text
            return [v if isinstance(v, str) or v is None else _json_text(v) for v in value]
    elif ftype is FieldType.MAP:
        if isinstance(value, dict):
            return [
                (str(k), v if isinstance(v, str) or v is None else _json_text(v))
                for k, v in value.items()
            ]
    elif ftype is FieldType.JSON:
        return value if isinstance(value, str) else _json_text(value)
    raise ValueTypeError(f"expected {ftype.value}, got {json_kind(value)}")


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class JsonParser:
    """Parses batches of JSON payloads into the columns of `fields`.

    `literal_dots`: objects may have keys with dots (OTLP attribute maps): a path step that
    is missing then tries the rest of the path as one key (`attributes.http.method` reads
    key `http.method`). pyarrow's reader cannot, so such batches parse record by record.
    """

    def __init__(self, fields: Sequence[FieldSpec], literal_dots: bool = False) -> None:
        self.fields = tuple(fields)
        self.literal_dots = literal_dots
        self.schema = pa.schema([pa.field(f.column, ARROW_TYPES[f.type]) for f in self.fields])
        self._fast = not literal_dots and all(f.type in _FAST_TYPES for f in self.fields)
        self._nested = _nested_schema(self.fields) if self._fast else None

    def parse(self, values: Sequence[bytes | None]) -> ParseResult:
        if not values:
            return ParseResult(self.schema.empty_table(), [])
        if self._fast:
            table = self._parse_fast(values)
            if table is not None:
                return ParseResult(table, [None] * len(values))
            return self._parse_refused(values)
        return self._parse_slow(values)

    def _parse_refused(self, values: Sequence[bytes | None]) -> ParseResult:
        """A batch the reader refused: its halves are tried again, so that a few bad records
        send only the small parts around them record by record; when both halves are
        refused (bad records all over, or payloads the reader never takes) the batch is
        parsed record by record as a whole."""
        if len(values) <= SPLIT_MIN:
            return self._parse_slow(values)
        mid = len(values) // 2
        halves = (values[:mid], values[mid:])
        tables = [self._parse_fast(h) for h in halves]
        if tables[0] is None and tables[1] is None:
            return self._parse_slow(values)
        parts = [
            ParseResult(t, [None] * len(h)) if t is not None else self._parse_refused(h)
            for t, h in zip(tables, halves, strict=True)
        ]
        return ParseResult(
            pa.concat_tables([p.table for p in parts]), parts[0].errors + parts[1].errors
        )

    def _parse_fast(self, values: Sequence[bytes | None]) -> pa.Table | None:
        # Only objects go to pyarrow: pyarrow 26 crashes (SIGSEGV) on a top-level `null` line.
        if None in values:
            return None
        joined = b"\n".join(values)  # type: ignore[arg-type]
        if not _all_objects(joined, values):  # type: ignore[arg-type]
            return None
        if not joined.isascii():  # ASCII is UTF-8; else check it (no str made for ASCII)
            try:
                joined.decode("utf-8")  # pyarrow passes invalid UTF-8 through unchecked
            except UnicodeDecodeError:
                return None
        try:
            nested = pajson.read_json(
                io.BytesIO(joined),
                read_options=pajson.ReadOptions(use_threads=False, block_size=1 << 26),
                parse_options=pajson.ParseOptions(
                    explicit_schema=self._nested, unexpected_field_behavior="ignore"
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if nested.num_rows != len(values):
            return None  # a payload spanning lines, an empty one, or two on one line
        columns = []
        for f in self.fields:
            col = nested.column(f.parts[0])
            for part in f.parts[1:]:
                col = pc.struct_field(col, part)
            if len(f.parts) > 1:  # a literal dotted key, where present, wins (see `lookup`)
                col = pc.coalesce(nested.column(f.path), col)
            columns.append(col.cast(ARROW_TYPES[f.type]))
        return pa.Table.from_arrays(columns, schema=self.schema)

    def _parse_slow(self, values: Sequence[bytes | None]) -> ParseResult:
        rows: dict[str, list[Any]] = {f.column: [] for f in self.fields}
        errors: list[str | None] = []
        for raw in values:
            record, error = self._parse_one(raw)
            errors.append(error)
            for f in self.fields:
                rows[f.column].append(record.get(f.column) if record else None)
        arrays = [pa.array(rows[f.column], type=ARROW_TYPES[f.type]) for f in self.fields]
        return ParseResult(pa.Table.from_arrays(arrays, schema=self.schema), errors)

    def _parse_one(self, raw: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
        doc, error = decode_object(raw)
        if doc is None:
            return None, error
        out: dict[str, Any] = {}
        for f in self.fields:
            try:
                out[f.column] = convert_value(lookup(doc, f.parts, self.literal_dots), f.type)
            except ValueTypeError as exc:
                return None, f"field '{f.path}': {exc}"
        return out, None


def _all_objects(joined: bytes, values: Sequence[bytes]) -> bool:
    """Whether every payload (joined by newlines in `joined`) starts with `{`, whitespace
    before it allowed: the first bytes are read in one go, the payloads one by one only when
    one of them does not start with `{` right away."""
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    first = np.frombuffer(joined, dtype=np.uint8)[starts[lengths > 0]]
    if (lengths > 0).all() and (first == ord("{")).all():
        return True
    return all(v.lstrip()[:1] == b"{" for v in values)


def decode_object(raw: bytes | None) -> tuple[dict[str, Any] | None, str | None]:
    """A message's value as a JSON object, or None and why it is not one.

    The bytes must be UTF-8 (json.loads would guess UTF-16 or UTF-32 from the first bytes).
    """
    if raw is None or not raw.strip():
        return None, "empty message"  # a null value (tombstone) too: the DLQ stores it as ""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"payload is not UTF-8 (byte 0x{raw[exc.start]:02x} at position {exc.start})"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(doc, dict):
        return None, f"payload must be a JSON object, got {json_kind(doc)}"
    return doc, None


def lookup(doc: dict[str, Any], parts: Sequence[str], literal_dots: bool = False) -> Any:
    """The value at a dot path: None when a step is missing or null; a step that is a
    scalar or an array where an object is needed is a type mismatch, at any depth.
    `literal_dots`: see `JsonParser`."""
    if len(parts) > 1 and (literal := ".".join(parts)) in doc:
        return doc[literal]  # a key with dots in it (`{"user.id": 1}`) wins, as in GlassFlow
    value: Any = doc
    for depth, part in enumerate(parts):
        if value is None:
            return None
        if not isinstance(value, dict):
            parent = ".".join(parts[:depth])
            raise ValueTypeError(f"'{parent}' is {json_kind(value)}, expected an object")
        if literal_dots and part not in value and depth < len(parts) - 1:
            return value.get(".".join(parts[depth:]))
        value = value.get(part)
    return value


def _nested_schema(fields: Sequence[FieldSpec]) -> pa.Schema:
    """Dot paths as nested structs, the shape pyarrow's JSON reader needs."""
    tree: dict[str, Any] = {}
    for f in fields:
        node = tree
        for part in f.parts[:-1]:
            node = node.setdefault(part, {})
        node[f.parts[-1]] = ARROW_TYPES[f.type]

    def build(node: dict[str, Any]) -> list[pa.Field]:
        return [
            pa.field(name, pa.struct(build(child)) if isinstance(child, dict) else child)
            for name, child in node.items()
        ]

    literal = [pa.field(f.path, ARROW_TYPES[f.type]) for f in fields if len(f.parts) > 1]
    return pa.schema(build(tree) + literal)


DEDUP_KEY = "the dedup key"
EVENT_TIME = "the event time"
_REQUIRED_PREFIX = re.compile(r"^field '[^']*' is (missing|null) \(needed as ")


def required_fields(
    dedup_keys: Sequence[FieldSpec], event_time: FieldSpec | None
) -> list[tuple[FieldSpec, str]]:
    """The fields a record cannot do without, each with why (for the DLQ reason)."""
    why: dict[FieldSpec, list[str]] = {f: [DEDUP_KEY] for f in dedup_keys}
    if event_time is not None:
        why.setdefault(event_time, []).append(EVENT_TIME)
    return [(f, " and ".join(reasons)) for f, reasons in why.items()]


def require_present(
    result: ParseResult,
    values: Sequence[bytes | None],
    required: Sequence[tuple[FieldSpec, str]],
) -> None:
    """Flag records where a required field is null or missing, saying which and why."""
    for f, why in required:
        absent = pc.indices_nonzero(result.table.column(f.column).is_null().combine_chunks())
        for i in absent.to_pylist():
            if result.errors[i] is None:
                state, detail = _absence(values[i], f.parts)
                result.errors[i] = f"field '{f.path}' is {state} (needed as {why}){detail}"


def is_required_field_error(message: str) -> bool:
    """Whether a parse error is a required field that is missing or null."""
    return _REQUIRED_PREFIX.match(message) is not None


def _absence(raw: bytes | None, parts: Sequence[str]) -> tuple[str, str]:
    """Whether a field a parsed record lacks is 'missing' or 'null', and which parent is null."""
    doc, _ = decode_object(raw)
    value: Any = doc
    for depth, part in enumerate(parts):
        if not isinstance(value, dict) or part not in value:
            return "missing", ""
        value = value[part]
        if value is None:
            parent = ".".join(parts[: depth + 1])
            return "null", "" if depth == len(parts) - 1 else f": '{parent}' is null"
    return "null", ""
