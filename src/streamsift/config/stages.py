"""What a pipeline does between source and sink: dedup, computed fields and filters, the join."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Annotated, Literal

from pydantic import (
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from streamsift.config.base import (
    FIELD_PATH,
    ConfigModel,
    Duration,
    Window,
    shorten,
)
from streamsift.config.expressions import ExpressionError, check_expression, fits
from streamsift.config.rows import KAFKA_FIELDS
from streamsift.config.source import KafkaSource
from streamsift.config.types import (
    INTEGER_COLUMNS,
    SCALAR_TYPES,
    FieldType,
    parse_field_type,
)

# ---------------------------------------------------------------------------- dedup


class DedupMode(str, Enum):
    """Which records a dedup keeps: see docs/semantics.md."""

    FIRST = "first"  # the first arrival of a key within the window
    LAST = "last"  # every new version of a key; the table keeps the latest (ReplacingMergeTree)
    EXACT = "exact"  # everything but repeats of an identical payload within the window


VERSION_TYPES = frozenset(INTEGER_COLUMNS | {"Date", "Date32", "DateTime", "DateTime64"})


class Dedup(ConfigModel):
    """Drop repeats within a time window: of a key (`first`, `last`) or of a payload (`exact`)."""

    mode: DedupMode = DedupMode.FIRST
    key: tuple[str, ...] = Field(default=(), validate_default=True)
    time_window: Window
    version_field: str | None = None

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v

    @field_validator("key", mode="after")
    @classmethod
    def _key_for_mode(cls, v: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        mode = info.data.get("mode", DedupMode.FIRST)
        if mode is DedupMode.EXACT and v:
            raise ValueError(
                "mode exact compares whole payloads and takes no key; remove key "
                "(or use mode first to compare by key)"
            )
        if mode is not DedupMode.EXACT and not v:
            raise ValueError("required field is missing")
        return v

    @model_validator(mode="after")
    def _check(self) -> Dedup:
        if self.version_field is not None and self.mode is not DedupMode.LAST:
            raise ValueError("version_field: only used with mode last")
        return self

    @property
    def version(self) -> str:
        """The field whose value orders versions (mode last): a payload field or the offset."""
        return self.version_field or "_kafka.offset"


# ---------------------------------------------------------------------------- transform


class Transform(ConfigModel):
    """A computed field: `name` holds the value of the Spark SQL `expression`, as `type`."""

    name: str
    expression: str = Field(min_length=1)
    type: Annotated[FieldType, BeforeValidator(parse_field_type)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", v):
            raise ValueError(
                f"{shorten(v)} is not a field name: start with a letter; letters, digits and _"
            )
        return v

    @field_validator("type")
    @classmethod
    def _type(cls, v: FieldType) -> FieldType:
        if v not in SCALAR_TYPES and v is not FieldType.MAP:
            raise ValueError(
                f"computed fields are string, int, float, bool, timestamp or map, not {v.value}"
            )
        return v


@dataclass(frozen=True)
class FieldRef:
    """A field in scope somewhere in the pipeline: its name, pipeline column and type."""

    name: str
    column: str
    type: FieldType


def check_stage(
    scope: dict[str, FieldRef],
    transforms: tuple[Transform, ...],
    filter_: str | None,
    where: str,
) -> dict[str, FieldRef]:
    """Check computed fields and a filter against `scope`; return the scope they lead to."""
    scope = dict(scope)
    columns = {f.column for f in scope.values()}
    for i, t in enumerate(transforms):
        path = f"{where}transform[{i}]"
        if t.name in scope or t.name in columns:
            raise ValueError(f"{path}.name: {t.name!r} is already a field; pick another name")
        try:
            kind = check_expression(t.expression, field_types(scope))
        except ExpressionError as exc:
            raise ValueError(f"{path}.expression: {exc}") from None
        if not fits(kind, t.type):
            raise ValueError(
                f"{path}.type: type mismatch: the expression gives {kind}, declared {t.type.value}"
                " (convert it, e.g. CAST(... AS BIGINT))"
            )
        scope[t.name] = FieldRef(t.name, t.name, t.type)
        columns.add(t.name)
    if filter_ is not None:
        try:
            kind = check_expression(filter_, field_types(scope))
        except ExpressionError as exc:
            raise ValueError(f"{where}filter: {exc}") from None
        if kind not in ("bool", "null", "any"):
            raise ValueError(f"{where}filter: must be true/false, but gives {kind}")
    return scope


def field_types(scope: dict[str, FieldRef]) -> dict[str, FieldType]:
    return {name: ref.type for name, ref in scope.items()}


# ---------------------------------------------------------------------------- join


class JoinSource(KafkaSource):
    """One of the two joined topics, with its own dedup, computed fields and filter."""

    dedup: Dedup | None = None
    transform: tuple[Transform, ...] = ()
    filter: str | None = None


class JoinType(str, Enum):
    INNER = "inner"
    LEFT = "left"


class JoinMode(str, Enum):
    """Which right records a left record joins (docs/semantics.md, Temporal join)."""

    INTERVAL = "interval"  # every right record of its key inside the windows (one row per pair)
    LATEST = "latest"  # the right version current at its event time (one row per left record)
    TABLE = "table"  # the right topic is a table: its key's current value (one row per left)


class JoinSide(ConfigModel):
    """A side of the join: which source, its key field(s), and its time window.

    `source` is required, except on the left side of a chain's later steps (`join` as a list):
    there the left side is the previous step's output (checked by the pipeline).

    `time_window` is how long this side's events wait for a match from the other side: a right
    event at tr matches a left event at tl when tl - right.time_window <= tr <= tl + left.time_window.
    The right side of `mode: table` has none (a key's value stays until a tombstone), and may
    have a `ttl` instead: a value is forgotten once the watermark passes its time + ttl.
    """

    source: str | None = None
    key: tuple[str, ...] = Field(min_length=1)
    time_window: Window | None = None
    ttl: Duration | None = None

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, v: timedelta | None) -> timedelta | None:
        if v is not None and v <= timedelta(0):
            raise ValueError("must be positive")
        return v

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v


class JoinOutput(ConfigModel):
    """A field of the joined record: `field` of the `from` side, named `as` (default `field`)."""

    from_: Literal["left", "right"] = Field(alias="from")
    field: str
    as_: str | None = Field(default=None, alias="as")

    @field_validator("as_")
    @classmethod
    def _as(cls, v: str | None) -> str | None:
        if v is not None and not FIELD_PATH.match(v):
            raise ValueError(
                f"{shorten(v)} is not a field name (letters, digits and _, dots for paths)"
            )
        return v

    @property
    def name(self) -> str:
        return self.as_ or self.field

    @property
    def column(self) -> str:
        return self.name.replace(".", "__").replace("-", "_")


class Join(ConfigModel):
    """A temporal join of two sides on key equality within time windows: the two `sources`, or
    one step of a chain (`join` as a list: step k > 0 joins step k-1's output with a source)."""

    type: JoinType = JoinType.INNER
    mode: JoinMode = JoinMode.INTERVAL
    left: JoinSide
    right: JoinSide
    output: tuple[JoinOutput, ...] = Field(min_length=1)
    allowed_lateness: Duration | None = None

    @field_validator("allowed_lateness")
    @classmethod
    def _lateness(cls, v: timedelta | None) -> timedelta | None:
        if v is not None and v < timedelta(0):
            raise ValueError("must not be negative")
        return v

    @model_validator(mode="after")
    def _windows(self) -> Join:
        """Both windows, except the right one of a table (which may have a ttl instead)."""
        table = self.mode is JoinMode.TABLE
        if self.left.time_window is None:
            raise ValueError("join.left.time_window: required field is missing")
        if self.left.ttl is not None:
            raise ValueError("join.left.ttl: only the right side of join.mode table has a ttl")
        if table and self.right.time_window is not None:
            raise ValueError(
                "join.right.time_window: the right side of join.mode table has no window (a "
                "key's value stays until a tombstone); use join.right.ttl to forget old values"
            )
        if not table and self.right.time_window is None:
            raise ValueError("join.right.time_window: required field is missing")
        if not table and self.right.ttl is not None:
            raise ValueError("join.right.ttl: only with join.mode table")
        if table and len(self.right.key) != 1:
            raise ValueError(
                "join.right.key: the table side has one key field (a tombstone's Kafka key "
                "is its value)"
            )
        return self

    @property
    def left_window(self) -> timedelta:
        assert self.left.time_window is not None  # checked above
        return self.left.time_window

    @property
    def right_window(self) -> timedelta:
        """The right window; a table side has none (0)."""
        return self.right.time_window or timedelta(0)

    @property
    def lateness(self) -> timedelta:
        """The watermark delay: by default the larger of the two windows."""
        if self.allowed_lateness is not None:
            return self.allowed_lateness
        return max(self.left_window, self.right_window)


def source_scope(source: KafkaSource) -> dict[str, FieldRef]:
    """The fields a source offers: its schema fields and the Kafka metadata fields."""
    scope = {f.name: FieldRef(f.name, f.column, f.type) for f in source.schema_.fields}
    for name, (column, ftype) in KAFKA_FIELDS.items():
        scope[name] = FieldRef(name, column, ftype)
    return scope
