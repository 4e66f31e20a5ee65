"""Registry schemas as streamsift sees them: Avro and Protobuf schemas parsed, and the
pipeline fields they give (nested records as dot paths).

The same rules serve both sides: runtime derives a source's fields from a subject's schema
(`schema.from_registry`, engine/registry_fields.py), and the executors decode each message
with its writer's schema (transforms/registry_decode.py) into values of those field types. A
type that has no field type of its own (a record inside an array, a union of several types)
becomes a `json` field holding the value as JSON text.

Pure: schemas come in already fetched (`SchemaBundle`: a schema and the schemas it
references), by the registry client in sources/schema_registry.py.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from streamsift.config.errors import RegistryError
from streamsift.config.types import FieldType

FieldList = list[tuple[str, FieldType]]


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it: its text, type and references."""

    schema_id: int
    schema: str
    schema_type: str  # AVRO, PROTOBUF or JSON
    references: tuple[tuple[str, str, int], ...] = ()  # (name, subject, version)
    subject: str | None = None
    version: int | None = None


@dataclass(frozen=True)
class SchemaBundle:
    """A schema and every schema it references (directly or not), dependencies first, each
    with the name it is imported by; hashable, so decoders can be cached by it."""

    schema: RegisteredSchema
    references: tuple[tuple[str, RegisteredSchema], ...] = ()


# ------------------------------------------------------------------------------ Avro

AVRO_PRIMITIVES: dict[str, FieldType | None] = {
    "string": FieldType.STRING,
    "bytes": FieldType.STRING,  # base64 text
    "int": FieldType.INT,
    "long": FieldType.INT,
    "float": FieldType.FLOAT,
    "double": FieldType.FLOAT,
    "boolean": FieldType.BOOL,
    "null": None,
}
AVRO_LOGICAL: dict[str, FieldType] = {
    "timestamp-millis": FieldType.TIMESTAMP,
    "timestamp-micros": FieldType.TIMESTAMP,
    "local-timestamp-millis": FieldType.TIMESTAMP,
    "local-timestamp-micros": FieldType.TIMESTAMP,
    "date": FieldType.STRING,  # 2024-05-01: ClickHouse reads it into Date/Date32
    "time-millis": FieldType.STRING,  # 12:30:00.250
    "time-micros": FieldType.STRING,
    "decimal": FieldType.STRING,  # exact digits: ClickHouse reads them into Decimal(P,S)
    "uuid": FieldType.STRING,
}
_SCALAR_KINDS = {FieldType.STRING, FieldType.INT, FieldType.FLOAT, FieldType.BOOL}


def avro_schema_json(registered: RegisteredSchema) -> Any:
    """The schema's JSON, or RegistryError when the text is not JSON."""
    try:
        return json.loads(registered.schema)
    except json.JSONDecodeError as exc:
        raise RegistryError(f"schema id {registered.schema_id} is not Avro JSON: {exc}") from None


def avro_named_types(bundle: SchemaBundle) -> list[Any]:
    """The schemas of a schema's references (named types it uses), dependencies first."""
    return [avro_schema_json(ref) for _name, ref in bundle.references]


def avro_fields(schema: Any, named: list[Any] | None = None) -> FieldList:
    """The fields of a record schema: (dot path, field type) in declaration order."""
    types: dict[str, Any] = {}
    for ref in named or []:
        _register_named(ref, types, None)
    _register_named(schema, types, None)
    root = _resolve(schema, types)
    if not isinstance(root, dict) or root.get("type") != "record":
        raise RegistryError("the schema's top level must be an Avro record")
    out: FieldList = []
    _walk_record(root, "", types, (), out)
    return out


def _register_named(schema: Any, types: dict[str, Any], namespace: str | None) -> None:
    if isinstance(schema, list):
        for branch in schema:
            _register_named(branch, types, namespace)
        return
    if not isinstance(schema, dict):
        return
    kind = schema.get("type")
    if kind in ("record", "error", "enum", "fixed") and "name" in schema:
        name = str(schema["name"])
        space = schema.get("namespace", namespace)
        full = name if "." in name or not space else f"{space}.{name}"
        types[full] = schema
        types.setdefault(name.rsplit(".", 1)[-1], schema)
        namespace = full.rsplit(".", 1)[0] if "." in full else space
    for f in schema.get("fields", []) if kind in ("record", "error") else []:
        _register_named(f.get("type"), types, namespace)
    if kind == "array":
        _register_named(schema.get("items"), types, namespace)
    if kind == "map":
        _register_named(schema.get("values"), types, namespace)
    if isinstance(kind, (dict, list)):
        _register_named(kind, types, namespace)


def _resolve(schema: Any, types: dict[str, Any]) -> Any:
    """A named type's definition; `{"type": "string"}` as "string"."""
    if isinstance(schema, str):
        return types.get(schema, types.get(schema.rsplit(".", 1)[-1], schema))
    if isinstance(schema, dict) and "logicalType" not in schema:
        inner = schema.get("type")
        if isinstance(inner, (str, list)) and inner not in (
            "record",
            "error",
            "enum",
            "fixed",
            "array",
            "map",
        ):
            return _resolve(inner, types)
    return schema


def _non_null(schema: Any, types: dict[str, Any]) -> list[Any]:
    branches = schema if isinstance(schema, list) else [schema]
    return [b for b in (_resolve(b, types) for b in branches) if b != "null"]


def _walk_record(
    record: dict[str, Any],
    prefix: str,
    types: dict[str, Any],
    stack: tuple[str, ...],
    out: FieldList,
) -> None:
    name = str(record.get("name", ""))
    for f in record.get("fields", []):
        path = f"{prefix}{f['name']}"
        branches = _non_null(f.get("type"), types)
        if len(branches) != 1:
            out.append((path, FieldType.JSON if branches else FieldType.STRING))
            continue
        kind = branches[0]
        if isinstance(kind, dict) and kind.get("type") in ("record", "error"):
            if kind.get("name") in stack + (name,):
                out.append((path, FieldType.JSON))  # a recursive record: no fixed depth
            else:
                _walk_record(kind, f"{path}.", types, stack + (name,), out)
            continue
        out.append((path, avro_field_type(kind, types)))


def avro_field_type(kind: Any, types: dict[str, Any]) -> FieldType:
    """The field type of one non-record, non-union Avro type."""
    kind = _resolve(kind, types)
    if isinstance(kind, str):
        return AVRO_PRIMITIVES.get(kind) or FieldType.STRING
    if isinstance(kind, list):
        branches = _non_null(kind, types)
        return avro_field_type(branches[0], types) if len(branches) == 1 else FieldType.JSON
    logical = kind.get("logicalType")
    if logical in AVRO_LOGICAL:
        return AVRO_LOGICAL[logical]
    base = kind.get("type")
    if base in ("enum", "fixed"):
        return FieldType.STRING
    if base == "array":
        item = _non_null(kind.get("items"), types)
        scalar = len(item) == 1 and _is_scalar(item[0], types)
        return FieldType.ARRAY if scalar else FieldType.JSON
    if base == "map":
        return FieldType.MAP
    if base in ("record", "error"):
        return FieldType.JSON
    return avro_field_type(base, types)


def _is_scalar(kind: Any, types: dict[str, Any]) -> bool:
    if isinstance(kind, dict) and kind.get("type") in ("record", "error", "array", "map"):
        return False
    return avro_field_type(kind, types) in _SCALAR_KINDS


# -------------------------------------------------------------------------- Protobuf

# Files every pool gets: the well-known types a schema may import without a reference.
_WELL_KNOWN_MODULES = (  # dependencies first: a pool loads a file after its imports
    "any_pb2",
    "descriptor_pb2",
    "duration_pb2",
    "empty_pb2",
    "field_mask_pb2",
    "source_context_pb2",
    "struct_pb2",
    "timestamp_pb2",
    "type_pb2",
    "api_pb2",
    "wrappers_pb2",
)
WRAPPER_TYPES: dict[str, FieldType] = {
    "google.protobuf.DoubleValue": FieldType.FLOAT,
    "google.protobuf.FloatValue": FieldType.FLOAT,
    "google.protobuf.Int64Value": FieldType.INT,
    "google.protobuf.UInt64Value": FieldType.INT,
    "google.protobuf.Int32Value": FieldType.INT,
    "google.protobuf.UInt32Value": FieldType.INT,
    "google.protobuf.BoolValue": FieldType.BOOL,
    "google.protobuf.StringValue": FieldType.STRING,
    "google.protobuf.BytesValue": FieldType.STRING,
}
TIMESTAMP_TYPE = "google.protobuf.Timestamp"


def file_descriptor_proto(registered: RegisteredSchema) -> Any:
    """The schema's FileDescriptorProto (the registry's `?format=serialized` answer)."""
    from google.protobuf import descriptor_pb2
    from google.protobuf.message import DecodeError

    try:
        raw = base64.b64decode(registered.schema, validate=True)
        return descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        raise RegistryError(
            f"schema id {registered.schema_id} did not come as a serialized FileDescriptorProto "
            "(streamsift asks for ?format=serialized, which Confluent's registry answers)"
        ) from None


def protobuf_pool(bundle: SchemaBundle) -> tuple[Any, Any]:
    """A descriptor pool holding the schema, its references and the well-known types; and
    the schema's FileDescriptor."""
    import importlib

    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    for module in _WELL_KNOWN_MODULES:
        mod = importlib.import_module(f"google.protobuf.{module}")
        pool.AddSerializedFile(mod.DESCRIPTOR.serialized_pb)
    main = bundle.schema
    for name, schema in (*bundle.references, ("", main)):
        if name.startswith("google/protobuf/"):
            continue  # already in the pool
        proto = file_descriptor_proto(schema)
        try:
            pool.Add(proto)
        except (TypeError, KeyError, ValueError) as exc:
            raise RegistryError(
                f"schema id {main.schema_id} ({proto.name}) does not load: {exc}"
            ) from None
    return pool, pool.FindFileByName(file_descriptor_proto(main).name)


def message_by_indexes(file: Any, indexes: list[int]) -> Any:
    """The message descriptor that Confluent's message indexes point at ([0]: the first)."""
    candidates = list(file.message_types_by_name.values())
    desc = None
    for depth, index in enumerate(indexes or [0]):
        if not 0 <= index < len(candidates):
            raise RegistryError(
                f"message index {index} at depth {depth} is out of range "
                f"({len(candidates)} message types there)"
            )
        desc = candidates[index]
        candidates = list(desc.nested_types)
    return desc


def message_by_name(file: Any, name: str | None) -> Any:
    """A message of the file by its (full or simple) name; the first one when None."""
    if name is None:
        return message_by_indexes(file, [0])
    for desc in _all_messages(file.message_types_by_name.values()):
        if name in (desc.full_name, desc.name):
            return desc
    known = ", ".join(d.full_name for d in _all_messages(file.message_types_by_name.values()))
    raise RegistryError(f"message {name!r} is not in the schema (it has: {known})")


def _all_messages(descs: Any) -> Iterator[Any]:
    for d in descs:
        yield d
        yield from _all_messages(d.nested_types)


def protobuf_fields(message: Any) -> FieldList:
    """The fields of a message descriptor: (dot path, field type), nested messages flattened."""
    out: FieldList = []
    _walk_message(message, "", (), out)
    return out


def _walk_message(message: Any, prefix: str, stack: tuple[str, ...], out: FieldList) -> None:
    for fd in message.fields:
        path = f"{prefix}{fd.name}"
        sub = fd.message_type
        nested = (
            sub is not None
            and not _is_repeated(fd)
            and sub.full_name not in WRAPPER_TYPES
            and sub.full_name != TIMESTAMP_TYPE
            and not sub.full_name.startswith("google.protobuf.")
        )
        if nested and sub.full_name not in stack + (message.full_name,):
            _walk_message(sub, f"{path}.", stack + (message.full_name,), out)
        else:
            out.append((path, protobuf_field_type(fd)))


def _is_repeated(fd: Any) -> bool:
    return bool(fd.is_repeated)


def protobuf_field_type(fd: Any) -> FieldType:
    """The field type of one Protobuf field (a nested message not flattened: json)."""
    sub = fd.message_type
    if sub is not None and sub.GetOptions().map_entry:
        return FieldType.MAP
    if _is_repeated(fd):
        scalar = sub is None or sub.full_name in WRAPPER_TYPES
        return FieldType.ARRAY if scalar else FieldType.JSON
    if sub is not None:
        if sub.full_name == TIMESTAMP_TYPE:
            return FieldType.TIMESTAMP
        return WRAPPER_TYPES.get(sub.full_name, FieldType.JSON)
    return _proto_scalars().get(fd.type, FieldType.STRING)


@functools.cache  # protobuf loads only where a Protobuf schema is used
def _proto_scalars() -> dict[int, FieldType]:
    from google.protobuf.descriptor import FieldDescriptor as F

    ints = (
        F.TYPE_INT32, F.TYPE_INT64, F.TYPE_UINT32, F.TYPE_UINT64, F.TYPE_SINT32,
        F.TYPE_SINT64, F.TYPE_FIXED32, F.TYPE_FIXED64, F.TYPE_SFIXED32, F.TYPE_SFIXED64,
    )  # fmt: skip
    out = dict.fromkeys(ints, FieldType.INT)
    out.update({F.TYPE_DOUBLE: FieldType.FLOAT, F.TYPE_FLOAT: FieldType.FLOAT})
    out.update({F.TYPE_BOOL: FieldType.BOOL, F.TYPE_STRING: FieldType.STRING})
    out.update({F.TYPE_BYTES: FieldType.STRING, F.TYPE_ENUM: FieldType.STRING})
    return out


# ------------------------------------------------------------------ from the registry


def schema_fields(
    bundle: SchemaBundle, fmt: str, subject: str, message: str | None = None
) -> FieldList:
    """The fields a subject's schema gives, for `schema.from_registry` (`message`: which
    Protobuf message, the first by default)."""
    registered = bundle.schema
    expected = "PROTOBUF" if fmt == "protobuf" else "AVRO"
    if registered.schema_type != expected:
        raise RegistryError(
            f"subject {subject!r} holds a {registered.schema_type} schema, "
            f"but source.format is {fmt}"
        )
    if fmt == "protobuf":
        _pool, file = protobuf_pool(bundle)
        return protobuf_fields(message_by_name(file, message))
    return avro_fields(avro_schema_json(registered), avro_named_types(bundle))
