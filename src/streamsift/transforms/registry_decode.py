"""Avro and Protobuf messages in the Confluent wire format to typed Arrow columns.

A message is a magic byte 0, the writer's schema id (4 bytes, big-endian) and, for
Protobuf, the message indexes (zigzag varints: a count, then one index per nesting level;
a single 0 byte means [0]), then the encoded value. Schemas come from the `SchemaLookup` the
parser is given (runtime wires the registry client of sources/schema_registry.py); a decoder
is built once per writer schema and executor process and kept; every message is decoded with its writer's schema and
its fields are taken by name, so a writer that adds a field (a new schema id) needs no
restart, and a field the writer lacks is null. A message that is not in the wire format,
whose schema id the registry does not know, or whose bytes do not decode becomes a dead
letter with the reason (error classes in `decode_error_class`). A registry that does not
answer fails the batch instead (a transient error: Spark retries, nothing is lost).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from streamsift.config.registry_schemas import (
    RegistryError,
    SchemaBundle,
    avro_named_types,
    avro_schema_json,
    message_by_indexes,
    protobuf_pool,
)
from streamsift.transforms.decoded_values import READY, field_value, message_getter
from streamsift.transforms.parse import (
    ARROW_TYPES,
    FieldSpec,
    JsonParser,
    ParseResult,
    ValueTypeError,
    lookup,
)

# A writer's schema by the id in a message. It raises RegistryError when the registry refuses
# the id for good (the message becomes a dead letter) and a TransientError when the registry
# does not answer (the batch fails and is retried).
SchemaLookup = Callable[[int], SchemaBundle]

MAGIC = 0
HEADER = 5
# Dead-letter reasons start with these; `decode_error_class` names their DLQ error class.
NOT_WIRE_FORMAT = "not in the Confluent wire format"
UNKNOWN_SCHEMA = "unknown schema id"
UNUSABLE_SCHEMA = "unusable schema id"
UNDECODABLE = "does not decode"
_CLASSES = (
    (NOT_WIRE_FORMAT, "not_wire_format"),
    (UNKNOWN_SCHEMA, "unknown_schema_id"),
    (UNUSABLE_SCHEMA, "unusable_schema"),
)


def decode_error_class(message: str) -> str | None:
    """The DLQ error class of a decoding failure, or None for other reasons."""
    for prefix, name in _CLASSES:
        if message.startswith(prefix):
            return name
    if message.startswith(("Avro value", "Protobuf value")) and UNDECODABLE in message:
        return "undecodable"
    return None


class DecodeFailure(Exception):
    """One message cannot be decoded; its text is the dead letter's reason."""


def split_header(raw: bytes | None) -> tuple[int, memoryview]:
    """The schema id and the rest of a wire-format message."""
    if raw is None or len(raw) < HEADER:
        size = 0 if raw is None else len(raw)
        raise DecodeFailure(f"{NOT_WIRE_FORMAT}: {size} bytes, fewer than the 5-byte header")
    if raw[0] != MAGIC:
        raise DecodeFailure(f"{NOT_WIRE_FORMAT}: first byte is 0x{raw[0]:02x}, not the magic 0x00")
    return int.from_bytes(raw[1:5], "big"), memoryview(raw)[HEADER:]


def read_message_indexes(body: memoryview) -> tuple[list[int], memoryview]:
    """Protobuf's message indexes and the bytes after them."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            if pos >= len(body) or shift > 63:
                raise DecodeFailure(f"{NOT_WIRE_FORMAT}: the message indexes are cut short")
            byte = body[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)  # zigzag

    count = varint()
    if count < 0 or count > 100:
        raise DecodeFailure(f"{NOT_WIRE_FORMAT}: {count} message indexes")
    indexes = [varint() for _ in range(count)] if count else [0]
    return indexes, body[pos:]


class _AvroDecoder:
    def __init__(self, bundle: SchemaBundle, schema_id: int) -> None:
        import fastavro

        registered = bundle.schema
        if registered.schema_type != "AVRO":
            raise RegistryError(f"it holds a {registered.schema_type} schema, not Avro")
        named: dict[str, Any] = {}
        for ref in avro_named_types(bundle):
            fastavro.parse_schema(ref, named_schemas=named)
        self.schema = fastavro.parse_schema(avro_schema_json(registered), named_schemas=named)
        self.schema_id = schema_id
        self._read = fastavro.schemaless_reader

    def decode(self, body: memoryview) -> Any:
        stream = io.BytesIO(body)
        try:
            record = self._read(stream, self.schema, None)
        except (ValueError, EOFError, IndexError, KeyError, TypeError, OverflowError) as exc:
            raise DecodeFailure(
                f"Avro value {UNDECODABLE} with schema id {self.schema_id}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        left = len(body) - stream.tell()
        if left:
            raise DecodeFailure(
                f"Avro value {UNDECODABLE} with schema id {self.schema_id}: "
                f"{left} bytes left over after the record"
            )
        return record


class _ProtobufDecoder:
    def __init__(self, bundle: SchemaBundle, schema_id: int) -> None:
        registered = bundle.schema
        if registered.schema_type != "PROTOBUF":
            raise RegistryError(f"it holds a {registered.schema_type} schema, not Protobuf")
        self.schema_id = schema_id
        self.pool, self.file = protobuf_pool(bundle)
        self._classes: dict[tuple[int, ...], Any] = {}

    def decode(self, body: memoryview) -> Any:
        from google.protobuf.message import DecodeError

        indexes, rest = read_message_indexes(body)
        cls = self._classes.get(tuple(indexes))
        if cls is None:
            from google.protobuf import message_factory

            try:
                desc = message_by_indexes(self.file, indexes)
            except RegistryError as exc:
                raise DecodeFailure(
                    f"Protobuf value {UNDECODABLE} with schema id {self.schema_id}: {exc.message}"
                ) from None
            cls = self._classes[tuple(indexes)] = message_factory.GetMessageClass(desc)
        try:
            return cls.FromString(bytes(rest))
        except (DecodeError, RuntimeWarning, ValueError) as exc:
            raise DecodeFailure(
                f"Protobuf value {UNDECODABLE} with schema id {self.schema_id}: {exc}"
            ) from None


# Decoders by (format, schema id, writer schema), kept for the life of the executor process.
_DECODERS: dict[tuple[str, int, SchemaBundle], Any] = {}
_LOCK = threading.Lock()


def _decoder(schemas: SchemaLookup, fmt: str, schema_id: int) -> Any:
    bundle = schemas(schema_id)
    key = (fmt, schema_id, bundle)
    with _LOCK:
        found = _DECODERS.get(key)
    if found is None:
        found = (_AvroDecoder if fmt == "avro" else _ProtobufDecoder)(bundle, schema_id)
        with _LOCK:
            _DECODERS[key] = found
    return found


def clear_decoders() -> None:
    """Forget every decoder this process built (tests)."""
    with _LOCK:
        _DECODERS.clear()


class RegistryParser:
    """Decodes batches of Avro or Protobuf messages into the columns of `fields`."""

    def __init__(self, fields: Sequence[FieldSpec], fmt: str, schemas: SchemaLookup) -> None:
        self.fields = tuple(fields)
        self.fmt = fmt
        self.schemas = schemas
        self.schema = pa.schema([pa.field(f.column, ARROW_TYPES[f.type]) for f in self.fields])
        self._getters: dict[tuple[Any, tuple[str, ...]], Any] = {}  # Protobuf, by class
        self._decoders: dict[int, Any] = {}
        self._paths = [(f, f.parts, READY.get(f.type)) for f in self.fields]

    def parse(self, values: Sequence[bytes | None]) -> ParseResult:
        rows: list[list[Any]] = [[] for _ in self.fields]
        errors: list[str | None] = []
        refused: dict[int, str] = {}  # schema ids the registry refused, in this batch
        for raw in values:
            error = None
            try:
                decoded = self._decode(raw, refused)
                out = [self._value(decoded, f, parts, ready) for f, parts, ready in self._paths]
            except DecodeFailure as exc:
                error, out = str(exc), [None] * len(self.fields)
            errors.append(error)
            for column, value in zip(rows, out, strict=True):
                column.append(value)
        arrays = [
            pa.array(col, ARROW_TYPES[f.type]) for col, f in zip(rows, self.fields, strict=True)
        ]
        return ParseResult(pa.Table.from_arrays(arrays, schema=self.schema), errors)

    def _decode(self, raw: bytes | None, refused: dict[int, str]) -> Any:
        schema_id, body = split_header(raw)
        decoder = self._decoders.get(schema_id)
        if decoder is None:
            if schema_id in refused:
                raise DecodeFailure(refused[schema_id])
            try:
                decoder = self._decoders[schema_id] = _decoder(self.schemas, self.fmt, schema_id)
            except RegistryError as exc:
                prefix = UNKNOWN_SCHEMA if exc.status == 404 else UNUSABLE_SCHEMA
                reason = refused[schema_id] = f"{prefix} {schema_id}: {exc.message}"
                raise DecodeFailure(reason) from None
        return decoder.decode(body)

    def _value(self, decoded: Any, f: FieldSpec, parts: tuple[str, ...], ready: Any) -> Any:
        try:
            if type(decoded) is dict:  # Avro
                value = decoded.get(parts[0]) if len(parts) == 1 else lookup(decoded, parts)
            else:
                getter = self._getters.get((type(decoded), parts))
                if getter is None:
                    getter = message_getter(decoded.DESCRIPTOR, parts)
                    self._getters[(type(decoded), parts)] = getter
                value = getter(decoded)
            if value is None or type(value) is ready:
                return value
            return field_value(value, f.type)
        except ValueTypeError as exc:
            raise DecodeFailure(f"field '{f.path}': {exc}") from None


def make_parser(
    fields: Sequence[FieldSpec],
    fmt: str = "json",
    schemas: SchemaLookup | None = None,
    literal_dots: bool = False,
) -> JsonParser | RegistryParser:
    """The parser for a source's message format (`schemas`: where avro/protobuf messages'
    writer schemas come from; `literal_dots`: JSON maps whose keys hold dots, as OTLP's)."""
    if fmt == "json":
        return JsonParser(fields, literal_dots)
    if schemas is None:
        raise ValueError(f"format {fmt} needs a schema registry")
    return RegistryParser(fields, fmt, schemas)
