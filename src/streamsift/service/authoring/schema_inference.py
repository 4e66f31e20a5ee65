"""Guess a pipeline schema from sample messages: field paths, types, event-time and key candidates.

The UI shows a topic's sample messages and proposes a `schema` for them. Nested objects become
dot paths (`user.id`), the way pipeline documents name fields; an object whose keys are not
field names (`{"a b": 1}`) is kept whole as a `map`. Types follow what the parser accepts
(transforms/parse.py): a field whose every value is an ISO-8601 text is a `timestamp`, ints
and floats mixed are a `float`, anything mixed otherwise is `json`. The guess is a proposal:
the user reviews it before it goes into a document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamsift.config.types import FieldType
from streamsift.transforms.parse import ValueTypeError, parse_timestamp
from streamsift.transforms.schema_drift import kind_of

MAX_EXAMPLES = 3
_SEGMENT = re.compile(r"\A[A-Za-z_][A-Za-z0-9_\-]*\Z")
# Unix times between 2001-09-09 and 2096-10-02, in seconds or in milliseconds.
EPOCH_SECONDS = (1_000_000_000, 4_000_000_000)
EPOCH_MILLIS = (1_000_000_000_000, 4_000_000_000_000)
_TIME_WORDS = ("time", "ts", "date", "at", "created", "updated", "timestamp")


@dataclass(frozen=True)
class InferredField:
    name: str  # dot path
    type: FieldType
    nullable: bool  # missing or null in at least one sample
    examples: tuple[Any, ...]


@dataclass(frozen=True)
class EventTimeCandidate:
    name: str
    kind: str  # "timestamp", "epoch_seconds" or "epoch_millis"
    note: str


@dataclass(frozen=True)
class InferredSchema:
    fields: tuple[InferredField, ...]
    event_time_candidates: tuple[EventTimeCandidate, ...]
    dedup_key_candidates: tuple[str, ...]
    samples: int  # JSON objects looked at
    skipped: int  # samples that were not JSON objects


@dataclass
class _Seen:
    """What the samples hold at one field path."""

    kinds: set[str] = field(default_factory=set)
    values: list[Any] = field(default_factory=list)  # non-null values, in sample order
    present: int = 0  # samples where the path holds a non-null value


def infer_schema(samples: Sequence[Any]) -> InferredSchema:
    """The schema the JSON objects among `samples` suggest (other samples are skipped)."""
    objects = [s for s in samples if isinstance(s, dict)]
    seen: dict[str, _Seen] = {}
    for obj in objects:
        for path, value in _leaves(obj):
            slot = seen.setdefault(path, _Seen())
            if value is None:
                continue
            slot.kinds.add(_kind(value))
            slot.values.append(value)
            slot.present += 1
    _drop_object_prefixes(seen)
    fields = tuple(
        InferredField(
            name=path,
            type=_field_type(slot),
            nullable=slot.present < len(objects),
            examples=_examples(slot.values),
        )
        for path, slot in seen.items()
    )
    return InferredSchema(
        fields=fields,
        event_time_candidates=tuple(_event_time_candidates(fields, seen)),
        dedup_key_candidates=tuple(_key_candidates(fields, seen, len(objects))),
        samples=len(objects),
        skipped=len(samples) - len(objects),
    )


def _leaves(obj: dict[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    """(dot path, value) for every non-object value; objects with odd keys count as values."""
    for key, value in obj.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and all(_SEGMENT.match(str(k)) for k in value):
            yield from _leaves(value, path + ".")
        else:
            yield path, value


def _drop_object_prefixes(seen: dict[str, _Seen]) -> None:
    """A path that is an object in one sample and a value in another is kept as the object's
    fields; the value form is dropped (a schema cannot declare both `a` and `a.b`)."""
    for path in list(seen):
        if any(other.startswith(path + ".") for other in seen):
            del seen[path]


def _kind(value: Any) -> str:
    """A sample value's field type: schema drift's JSON kinds, except that inference guesses
    timestamps from text (drift never does) and reads objects as maps."""
    kind = kind_of(value)
    if kind == "string" and _looks_like_timestamp(value):
        return "timestamp"
    if kind.startswith("array"):
        return "array"
    return "map" if kind == "object" else kind


def _looks_like_timestamp(text: str) -> bool:
    """ISO-8601 with a date part (`2026-01-02...`): plain digits like ids are not times."""
    if len(text) < 10 or text[4:5] != "-":
        return False
    try:
        parse_timestamp(text)
    except ValueTypeError:
        return False
    return True


def _field_type(slot: _Seen) -> FieldType:
    kinds = slot.kinds
    if not kinds:
        return FieldType.STRING  # only nulls seen: text is the safest guess
    if kinds <= {"int"}:
        return FieldType.INT
    if kinds <= {"int", "float"}:
        return FieldType.FLOAT
    if kinds == {"bool"}:
        return FieldType.BOOL
    if kinds == {"timestamp"}:
        return FieldType.TIMESTAMP
    if kinds <= {"string", "timestamp"}:
        return FieldType.STRING
    if kinds == {"array"}:
        return FieldType.ARRAY
    if kinds == {"map"}:
        return FieldType.MAP
    return FieldType.JSON


def _examples(values: list[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
        if len(out) == MAX_EXAMPLES:
            break
    return tuple(out)


def _event_time_candidates(
    fields: Sequence[InferredField], seen: dict[str, _Seen]
) -> list[EventTimeCandidate]:
    """Timestamps, then numbers that read as unix seconds, then milliseconds; within each,
    time-like names (`created_at`, `ts`) lead."""
    found: list[EventTimeCandidate] = []
    for f in fields:
        values = seen[f.name].values
        if f.type is FieldType.TIMESTAMP:
            found.append(EventTimeCandidate(f.name, "timestamp", "ISO-8601 timestamps"))
        elif f.type in (FieldType.INT, FieldType.FLOAT) and values:
            if all(EPOCH_SECONDS[0] <= v < EPOCH_SECONDS[1] for v in values):
                found.append(
                    EventTimeCandidate(f.name, "epoch_seconds", "unix seconds: usable as is")
                )
            elif all(EPOCH_MILLIS[0] <= v < EPOCH_MILLIS[1] for v in values):
                found.append(
                    EventTimeCandidate(
                        f.name,
                        "epoch_millis",
                        "unix milliseconds: event_time reads seconds, so compute "
                        f"`{f.name} / 1000` as a field first",
                    )
                )
    order = ("timestamp", "epoch_seconds", "epoch_millis")  # most usable as is first
    return sorted(found, key=lambda c: (order.index(c.kind), not _time_like(c.name)))


def _time_like(name: str) -> bool:
    words = re.split(r"[._\-]", name.lower())
    return any(w in _TIME_WORDS for w in words)


def _key_candidates(
    fields: Sequence[InferredField], seen: dict[str, _Seen], objects: int
) -> list[str]:
    """Text or int fields present in every sample with a different value in each."""
    if objects < 2:
        return []
    return [
        f.name
        for f in fields
        if f.type in (FieldType.STRING, FieldType.INT)
        and seen[f.name].present == objects
        and len(set(seen[f.name].values)) == objects
    ]
