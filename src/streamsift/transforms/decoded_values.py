"""Values decoded from Avro or Protobuf, as the pipeline's field types want them.

fastavro hands over Python values with logical types already applied (datetime, date, time,
Decimal, UUID); Protobuf messages are walked field by field. Both end here, where each value
is checked against its field's type like a JSON value is (transforms/parse.py), with the
conversions a binary format needs: Decimal and UUID as exact text, dates and times as ISO
text, bytes as base64, a naive (local-timestamp) datetime taken as UTC.
"""

from __future__ import annotations

import base64
import json
import operator
import uuid
from datetime import date, datetime, time, timezone
from decimal import Decimal
from typing import Any

from streamsift.config.types import FieldType
from streamsift.transforms.parse import ValueTypeError, convert_value, parse_timestamp

UTC = timezone.utc
TIMESTAMP_TYPE = "google.protobuf.Timestamp"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float, Decimal)):
        return "a number"
    if isinstance(value, (str, uuid.UUID)):
        return "a string"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"
    if isinstance(value, datetime):
        return "a timestamp"
    if isinstance(value, (date, time)):
        return "a date or time"
    if isinstance(value, (list, tuple)):
        return "an array"
    return "a record"


def _as_text(value: Any) -> str | None:
    """A single value as text, for string fields and array elements."""
    if isinstance(value, str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return _utc(value).isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    return None


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def json_text(value: Any) -> str:
    return json.dumps(value, default=_json_default, separators=(",", ":"), ensure_ascii=False)


def _json_default(value: Any) -> Any:
    text = _as_text(value)
    if text is None:
        raise TypeError(f"{type(value).__name__} has no JSON form")
    return text


def _element(value: Any) -> str | None:
    if value is None:
        return None
    text = _as_text(value)
    if text is not None:
        return text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json_text(value)


# Python types that are already in a field type's Arrow-ready form (checked with `type(v) is`).
READY: dict[FieldType, type] = {
    FieldType.STRING: str,
    FieldType.FLOAT: float,
    FieldType.BOOL: bool,
    FieldType.JSON: str,
}


def field_value(value: Any, ftype: FieldType) -> Any:
    """A decoded value in the Arrow-ready form of `ftype`; ValueTypeError when it cannot be."""
    if value is None:
        return None
    if ftype in (FieldType.INT, FieldType.BOOL):  # the same rules as for JSON values
        return convert_value(value, ftype)
    if ftype is FieldType.STRING:
        text = _as_text(value)
        if text is not None:
            return text
    elif ftype is FieldType.FLOAT:
        if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
            return float(value)
    elif ftype is FieldType.TIMESTAMP:
        if isinstance(value, datetime):
            return _utc(value)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day, tzinfo=UTC)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return parse_timestamp(value)
    elif ftype is FieldType.ARRAY:
        if isinstance(value, (list, tuple)):
            return [_element(v) for v in value]
    elif ftype is FieldType.MAP:
        if isinstance(value, dict):
            return [(str(k), _element(v)) for k, v in value.items()]
    elif ftype is FieldType.JSON:
        return value if isinstance(value, str) else json_text(value)
    raise ValueTypeError(f"expected {ftype.value}, got {_kind(value)}")


def message_lookup(message: Any, parts: tuple[str, ...]) -> Any:
    """The value at a dot path of a Protobuf message, as plain Python: None where a field
    is unset (one with presence) or not in the writer's schema."""
    value = message
    fd = None
    for depth, part in enumerate(parts):
        if value is None:
            return None
        descriptor = getattr(value, "DESCRIPTOR", None)
        if descriptor is None or fd is not None and _is_special(fd):
            parent = ".".join(parts[:depth])
            raise ValueTypeError(f"'{parent}' is {_kind(value)}, expected a message")
        fd = descriptor.fields_by_name.get(part)
        if fd is None:
            return None
        if fd.has_presence and not value.HasField(part):
            return None
        value = getattr(value, part)
    return proto_value(value, fd) if fd is not None else None


def message_getter(descriptor: Any, parts: tuple[str, ...]) -> Any:
    """A fast reader of one dot path for messages of `descriptor`: plain attribute access
    for a top-level scalar (not an enum, a list or a message), else `message_lookup`."""
    fd = descriptor.fields_by_name.get(parts[0]) if len(parts) == 1 else None
    if fd is None or fd.message_type is not None or fd.enum_type is not None or _repeated(fd):
        return lambda message: message_lookup(message, parts)
    name = parts[0]
    if fd.has_presence:
        return lambda message: getattr(message, name) if message.HasField(name) else None
    return operator.attrgetter(name)


def _is_special(fd: Any) -> bool:
    """A field whose value is not walked into: repeated, a map, a well-known type."""
    sub = fd.message_type
    return _repeated(fd) or (sub is not None and sub.full_name.startswith("google.protobuf."))


def _repeated(fd: Any) -> bool:
    return bool(fd.is_repeated)


def proto_value(value: Any, fd: Any) -> Any:
    """A field's value as plain Python (lists, dicts, datetimes, enum names)."""
    sub = fd.message_type
    if sub is not None and sub.GetOptions().map_entry:
        value_fd = sub.fields_by_name["value"]
        return {k: _single(v, value_fd) for k, v in value.items()}
    if _repeated(fd):
        return [_single(v, fd) for v in value]
    return _single(value, fd)


def _single(value: Any, fd: Any) -> Any:
    sub = fd.message_type
    if sub is None:
        if fd.enum_type is not None:
            known = fd.enum_type.values_by_number.get(value)
            return known.name if known is not None else value
        return value
    name = sub.full_name
    if name == TIMESTAMP_TYPE:
        return value.ToDatetime(tzinfo=UTC)
    if (
        name.startswith("google.protobuf.")
        and name.endswith("Value")
        and "value" in sub.fields_by_name
    ):
        if name in ("google.protobuf.Value", "google.protobuf.ListValue"):
            return _as_json_value(value)
        return value.value
    if name in ("google.protobuf.Struct", "google.protobuf.Any", "google.protobuf.Duration"):
        return _as_json_value(value)
    return {f.name: proto_value(getattr(value, f.name), f) for f in sub.fields if _is_set(value, f)}


def _is_set(message: Any, fd: Any) -> bool:
    return not fd.has_presence or message.HasField(fd.name)


def _as_json_value(message: Any) -> Any:
    from google.protobuf import json_format

    return json_format.MessageToDict(message, preserving_proto_field_name=True)
