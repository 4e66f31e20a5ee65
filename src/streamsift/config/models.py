"""The pipeline document: frozen pydantic models, validated once when a file is loaded.

A pipeline reads one Kafka topic (`source`) or two joined ones (`sources` + `join`),
optionally removes duplicates (`dedup`), computes fields (`transform`), keeps records that
pass a `filter`, and writes the result into one ClickHouse table (`sink`). Bad records go to
a dead-letter table (`dlq`). See docs/configuration.md for every field and its default.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from streamsift.config.durations import format_duration, parse_duration
from streamsift.config.expressions import ExpressionError, check_expression, fits
from streamsift.config.rows import KAFKA_FIELDS, RESERVED_COLUMNS
from streamsift.config.types import (
    INTEGER_COLUMNS,
    SCALAR_TYPES,
    CHType,
    FieldType,
    check_compatible,
    parse_clickhouse_type,
    parse_field_type,
)

MAX_DEDUP_WINDOW = timedelta(days=7)

Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
]


def _check_window(v: timedelta) -> timedelta:
    if v <= timedelta(0):
        raise ValueError("must be greater than zero")
    if v > MAX_DEDUP_WINDOW:
        raise ValueError(f"{format_duration(v)} exceeds the 7d maximum")
    return v


# A dedup or join window: a positive duration of at most 7 days (GlassFlow's limit).
Window = Annotated[Duration, AfterValidator(_check_window)]
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Kafka's own rule for topic names (kafka.common.internals.Topic).
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
MAX_TOPIC_LENGTH = 249
_FIELD_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_\-]*)*$")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


# ---------------------------------------------------------------------------- source


class SecurityProtocol(str, Enum):
    PLAINTEXT = "PLAINTEXT"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"
    SSL = "SSL"


class SaslMechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"


class KafkaSecurity(_Model):
    """How to authenticate to Kafka; passed through to librdkafka. Secrets are never logged."""

    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    mechanism: SaslMechanism | None = None
    username: str | None = None
    password: SecretStr | None = None
    ca_file: Path | None = None
    skip_tls_verification: bool = False

    @model_validator(mode="after")
    def _check(self) -> KafkaSecurity:
        sasl = self.protocol in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)
        if sasl:
            if self.mechanism is None:
                raise ValueError(f"mechanism is required with protocol {self.protocol.value}")
            if not self.username:
                raise ValueError(f"username is required with protocol {self.protocol.value}")
            if self.password is None or not self.password.get_secret_value():
                raise ValueError(f"password is required with protocol {self.protocol.value}")
        elif self.mechanism is not None:
            raise ValueError(
                f"mechanism {self.mechanism.value} needs protocol SASL_PLAINTEXT or SASL_SSL"
            )
        return self

    def librdkafka(self) -> dict[str, str]:
        """The librdkafka properties for this security setting (holds the secret: never log it)."""
        props = {"security.protocol": self.protocol.value}
        if self.mechanism is not None:
            props["sasl.mechanism"] = self.mechanism.value
            props["sasl.username"] = self.username or ""
            props["sasl.password"] = self.password.get_secret_value() if self.password else ""
        if self.ca_file is not None:
            props["ssl.ca.location"] = str(self.ca_file)
        if self.skip_tls_verification:
            props["enable.ssl.certificate.verification"] = "false"
        return props


def shorten(text: str, limit: int = 60) -> str:
    """`text` for an error message: a long value is cut, with its length said."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def check_topic_name(name: str) -> str:
    """Kafka's topic-name rules, so a bad name fails at validate, not at the broker."""
    if len(name) > MAX_TOPIC_LENGTH:
        raise ValueError(
            f"topic name {shorten(name)} is longer than Kafka's {MAX_TOPIC_LENGTH} characters"
        )
    if name in (".", ".."):
        raise ValueError(f"{name!r} is not a valid Kafka topic name")
    if not _TOPIC_NAME.match(name):
        bad = sorted({c for c in name if not _TOPIC_NAME.match(c)})
        raise ValueError(
            f"topic name {shorten(name)} has characters Kafka does not allow "
            f"({''.join(bad)!r}): use letters, digits, '.', '_' and '-'"
        )
    return name


class SchemaField(_Model):
    """One payload field: a dot path into the JSON (`user.id`) and its type."""

    name: str
    type: Annotated[FieldType, BeforeValidator(parse_field_type)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _FIELD_PATH.match(v):
            raise ValueError(
                f"{shorten(v)} is not a field path: use names of letters, digits and _ joined by dots, e.g. user.id"
            )
        return v

    @property
    def column(self) -> str:
        """The column name used inside the pipeline (dots are not allowed in Spark names)."""
        return self.name.replace(".", "__").replace("-", "_")


def _parse_future_skew(v: object) -> timedelta | None:
    """`max_future_skew`: a duration of at most 7 days, or null to turn the check off."""
    if v is None:
        return None
    skew = parse_duration(v)
    if skew > MAX_DEDUP_WINDOW:
        raise ValueError(
            f"{format_duration(skew)} exceeds the 7d maximum (no dedup or join window is longer);"
            " write null to turn the check off"
        )
    return skew


# How far event time may run ahead of the Kafka timestamp (docs/semantics.md); None: no limit.
FutureSkew = Annotated[
    timedelta | None,
    BeforeValidator(_parse_future_skew),
    PlainSerializer(lambda v: None if v is None else format_duration(v)),
]
DEFAULT_MAX_FUTURE_SKEW = timedelta(minutes=5)


class Schema(_Model):
    fields: tuple[SchemaField, ...] = Field(min_length=1)
    event_time: str | None = None
    max_future_skew: FutureSkew = DEFAULT_MAX_FUTURE_SKEW

    @model_validator(mode="after")
    def _check(self) -> Schema:
        # linear in the number of fields: documents with thousands of fields are real
        names = Counter(f.name for f in self.fields)
        dupes = sorted(n for n, count in names.items() if count > 1)
        if dupes:
            raise ValueError(f"field names must be unique; repeated: {', '.join(dupes)}")
        columns = Counter(f.column for f in self.fields)
        clash = sorted(c for c, count in columns.items() if count > 1)
        if clash:
            raise ValueError(f"fields collide once dots become '__': {', '.join(clash)}")
        for f in self.fields:
            if f.name.split(".")[0] == "_kafka" or f.column in RESERVED_COLUMNS:
                *others, last = KAFKA_FIELDS
                raise ValueError(
                    f"field name {f.name!r} is reserved for the pipeline's own columns; "
                    f"the Kafka metadata is available as {', '.join(others)} and {last}"
                )
        for other in names:
            parts = other.split(".")
            for depth in range(1, len(parts)):
                path = ".".join(parts[:depth])
                if path in names:
                    raise ValueError(
                        f"field {path!r} is an object holding field {other!r}; declare only one"
                    )
        if self.event_time is not None:
            field = self.field(self.event_time)
            if field is None:
                raise ValueError(
                    f"event_time names {self.event_time!r}, which is not a schema field"
                )
            if field.type not in (FieldType.TIMESTAMP, FieldType.INT, FieldType.FLOAT):
                raise ValueError(
                    f"event_time field {self.event_time!r} must be of type timestamp "
                    f"(or int/float unix seconds), not {field.type.value}"
                )
        return self

    def field(self, name: str) -> SchemaField | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, SchemaField]:
        return {f.name: f for f in self.fields}


class StartFrom(str, Enum):
    EARLIEST = "earliest"
    LATEST = "latest"


class KafkaSource(_Model):
    """One Kafka topic and the shape of its JSON messages."""

    name: str | None = None
    bootstrap_servers: str
    topic: str = Field(min_length=1)
    consumer_group: str | None = None
    start_from: StartFrom = StartFrom.EARLIEST
    security: KafkaSecurity = KafkaSecurity()
    properties: dict[str, str] = Field(default_factory=dict)
    connect_timeout: Duration = timedelta(seconds=30)
    schema_: Schema = Field(alias="schema")

    @field_validator("bootstrap_servers", mode="before")
    @classmethod
    def _servers(cls, v: object) -> object:
        if isinstance(v, (list, tuple)):
            v = ",".join(str(s).strip() for s in v)
        if isinstance(v, str):
            hosts = [h.strip() for h in v.split(",") if h.strip()]
            if not hosts:
                raise ValueError("at least one broker address host:port is required")
            for h in hosts:
                host, _, port = h.rpartition(":")
                if not host or not port.isdigit():
                    raise ValueError(f"{h!r} is not host:port")
            return ",".join(hosts)
        return v

    @field_validator("topic")
    @classmethod
    def _topic(cls, v: str) -> str:
        return check_topic_name(v)

    @field_validator("properties")
    @classmethod
    def _props(cls, v: dict[str, str]) -> dict[str, str]:
        reserved = {"bootstrap.servers", "group.id", "enable.auto.commit", "security.protocol"}
        bad = sorted(k for k in v if k in reserved or k.startswith("sasl."))
        if bad:
            raise ValueError(
                f"set {', '.join(bad)} through the source's own fields, not properties"
            )
        return {k: str(x) for k, x in v.items()}

    @property
    def id(self) -> str:
        return self.name or self.topic


# ---------------------------------------------------------------------------- dedup


class DedupMode(str, Enum):
    """Which records a dedup keeps: see docs/semantics.md."""

    FIRST = "first"  # the first arrival of a key within the window
    LAST = "last"  # every new version of a key; the table keeps the latest (ReplacingMergeTree)
    EXACT = "exact"  # everything but repeats of an identical payload within the window


VERSION_TYPES = frozenset(INTEGER_COLUMNS | {"Date", "Date32", "DateTime", "DateTime64"})


class Dedup(_Model):
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


class Transform(_Model):
    """A computed field: `name` holds the value of the Spark SQL `expression`, as `type`."""

    name: str
    expression: str = Field(min_length=1)
    type: Annotated[FieldType, BeforeValidator(parse_field_type)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z][A-Za-z0-9_]*$", v):
            raise ValueError(
                f"{shorten(v)} is not a field name: start with a letter; letters, digits and _"
            )
        return v

    @field_validator("type")
    @classmethod
    def _type(cls, v: FieldType) -> FieldType:
        if v not in SCALAR_TYPES:
            raise ValueError(
                f"computed fields are string, int, float, bool or timestamp, not {v.value}"
            )
        return v


@dataclass(frozen=True)
class FieldRef:
    """A field in scope somewhere in the pipeline: its name, pipeline column and type."""

    name: str
    column: str
    type: FieldType


def _check_stage(
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
            kind = check_expression(t.expression, _types(scope))
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
            kind = check_expression(filter_, _types(scope))
        except ExpressionError as exc:
            raise ValueError(f"{where}filter: {exc}") from None
        if kind not in ("bool", "null", "any"):
            raise ValueError(f"{where}filter: must be true/false, but gives {kind}")
    return scope


def _types(scope: dict[str, FieldRef]) -> dict[str, FieldType]:
    return {name: ref.type for name, ref in scope.items()}


# ---------------------------------------------------------------------------- sink


class ColumnMapping(_Model):
    """Write payload field `field` into ClickHouse column `column` of type `type`."""

    field: str
    column: str
    type: str

    @field_validator("column")
    @classmethod
    def _column(cls, v: str) -> str:
        if not _IDENTIFIER.match(v):
            raise ValueError(f"{shorten(v)} is not a plain column name (letters, digits, _)")
        return v

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        return str(parse_clickhouse_type(v))

    @property
    def ch_type(self) -> CHType:
        return parse_clickhouse_type(self.type)


class ClickHouseConnection(_Model):
    """Embedded (`path`, chdb) or a server (`host`, `port`, ...). Exactly one of the two."""

    path: Path | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    username: str = "default"
    password: SecretStr = SecretStr("")
    database: str = "default"
    secure: bool = False
    skip_certificate_verification: bool = False

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, v: object) -> object:
        return int(v) if isinstance(v, str) and v.strip().isdigit() else v

    @model_validator(mode="after")
    def _one_mode(self) -> ClickHouseConnection:
        if (self.path is None) == (self.host is None):
            raise ValueError("give either path (embedded ClickHouse) or host (a ClickHouse server)")
        if not _IDENTIFIER.match(self.database):
            raise ValueError(f"database {self.database!r} is not a plain name")
        return self

    @property
    def embedded(self) -> bool:
        return self.path is not None


class MissingDedupWindow(str, Enum):
    """What to do with an existing table whose insert deduplication is off."""

    SET = "set"
    REFUSE = "refuse"


class ClickHouseSink(_Model):
    clickhouse: ClickHouseConnection
    table: str
    mapping: tuple[ColumnMapping, ...] = Field(min_length=1)
    create_table: bool = False
    order_by: tuple[str, ...] | None = None
    max_batch_size: int = Field(default=100_000, gt=0)
    max_delay_time: Duration = timedelta(seconds=1)
    on_missing_dedup_window: MissingDedupWindow = MissingDedupWindow.SET
    # how long start-up waits for a ClickHouse server to answer before the run ends
    connect_timeout: Duration = timedelta(seconds=30)

    @field_validator("table")
    @classmethod
    def _table(cls, v: str) -> str:
        if not _IDENTIFIER.match(v):
            raise ValueError(f"{shorten(v)} is not a plain table name (letters, digits, _)")
        return v

    @field_validator("order_by", mode="before")
    @classmethod
    def _order_by(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> ClickHouseSink:
        columns = Counter(m.column for m in self.mapping)
        dupes = sorted(c for c, count in columns.items() if count > 1)
        if dupes:
            raise ValueError(f"mapping writes column(s) {', '.join(dupes)} more than once")
        for col in self.order_by or ():
            if col not in columns:
                raise ValueError(f"order_by names {col!r}, which is not a mapped column")
        return self


class Dlq(_Model):
    """Where bad records go: a ClickHouse table beside the sink's (default `<table>_dlq`)."""

    table: str | None = None

    @field_validator("table")
    @classmethod
    def _table(cls, v: str | None) -> str | None:
        if v is not None and not _IDENTIFIER.match(v):
            raise ValueError(f"{shorten(v)} is not a plain table name")
        return v


class StateStore(str, Enum):
    """Where Spark keeps a join's state (dedup keeps its own, in RocksDB, either way)."""

    ROCKSDB = "rocksdb"  # on local disk: any window, any rate
    MEMORY = "memory"  # on the JVM heap: faster, for short join windows


class Runtime(_Model):
    """Where the pipeline keeps its checkpoint, how big its micro-batches may get, and where
    the join's state lives (fixed when the checkpoint is created)."""

    checkpoint_dir: Path | None = None
    max_rows_per_batch: int | None = Field(default=None, gt=0)
    state_store: StateStore = StateStore.ROCKSDB


# ---------------------------------------------------------------------------- join


class JoinSource(KafkaSource):
    """One of the two joined topics, with its own dedup, computed fields and filter."""

    dedup: Dedup | None = None
    transform: tuple[Transform, ...] = ()
    filter: str | None = None


class JoinType(str, Enum):
    INNER = "inner"
    LEFT = "left"


class JoinSide(_Model):
    """A side of the join: which source, its key field(s), and its time window.

    `time_window` is how long this side's events wait for a match from the other side: a right
    event at tr matches a left event at tl when tl - right.time_window <= tr <= tl + left.time_window.
    """

    source: str
    key: tuple[str, ...] = Field(min_length=1)
    time_window: Window

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v


class JoinOutput(_Model):
    """A field of the joined record: `field` of the `from` side, named `as` (default `field`)."""

    from_: Literal["left", "right"] = Field(alias="from")
    field: str
    as_: str | None = Field(default=None, alias="as")

    @field_validator("as_")
    @classmethod
    def _as(cls, v: str | None) -> str | None:
        if v is not None and not _FIELD_PATH.match(v):
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


class Join(_Model):
    """A temporal join of the two `sources` on key equality within time windows."""

    type: JoinType = JoinType.INNER
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

    @property
    def lateness(self) -> timedelta:
        """The watermark delay: by default the larger of the two windows."""
        if self.allowed_lateness is not None:
            return self.allowed_lateness
        return max(self.left.time_window, self.right.time_window)


def source_scope(source: KafkaSource) -> dict[str, FieldRef]:
    """The fields a source offers: its schema fields and the Kafka metadata fields."""
    scope = {f.name: FieldRef(f.name, f.column, f.type) for f in source.schema_.fields}
    for name, (column, ftype) in KAFKA_FIELDS.items():
        scope[name] = FieldRef(name, column, ftype)
    return scope


# ---------------------------------------------------------------------------- pipeline


class Pipeline(_Model):
    """A whole pipeline document (format version 1): one `source`, or two `sources` + `join`."""

    version: Literal[1] = 1
    name: str
    source_: KafkaSource | None = Field(default=None, alias="source")
    sources: tuple[JoinSource, ...] | None = None
    dedup: Dedup | None = None
    join: Join | None = None
    transform: tuple[Transform, ...] = ()
    filter: str | None = None
    sink: ClickHouseSink
    dlq: Dlq = Dlq()
    runtime: Runtime = Runtime()

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,99}$", v):
            raise ValueError(
                f"{shorten(v)} is not a pipeline name: letters, digits, _ and -, at most 100"
            )
        return v

    @model_validator(mode="after")
    def _cross_check(self) -> Pipeline:
        if self.source_ is not None and self.sources is not None:
            raise ValueError(
                "source: give either source (one topic) or sources (two joined topics), not both"
            )
        if self.source_ is None and self.sources is None:
            raise ValueError("source: required field is missing")
        if self.sources is not None:
            scope = self._check_join()
        else:
            if self.join is not None:
                raise ValueError("join: a join needs two sources: write them under sources")
            scope = self._check_single_source()
        scope = _check_stage(scope, self.transform, self.filter, "")
        self._check_mapping(scope)
        if self.dlq_table == self.sink.table:
            raise ValueError("dlq.table: must differ from sink.table")
        return self

    def _check_single_source(self) -> dict[str, FieldRef]:
        schema = self.primary_source.schema_
        if self.dedup is not None:
            for key in self.dedup.key:
                if schema.field(key) is None:
                    raise ValueError(f"dedup.key: {key!r} is not a field of source.schema")
            if self.dedup.mode is DedupMode.LAST:
                version = self.dedup.version
                field = schema.field(version)
                vtype = field.type if field else KAFKA_FIELDS.get(version, ("", None))[1]
                if vtype not in (FieldType.INT, FieldType.TIMESTAMP):
                    raise ValueError(
                        f"dedup.version_field: {version!r} must be an int or timestamp field of "
                        "source.schema (or _kafka.offset / _kafka.timestamp)"
                    )
        return source_scope(self.primary_source)

    def _check_join(self) -> dict[str, FieldRef]:
        sources = self.sources or ()
        if len(sources) != 2:
            raise ValueError(
                f"sources: a join reads exactly two sources, got {len(sources)}; "
                "a single topic goes under source"
            )
        if self.join is None:
            raise ValueError("join: two sources need a join (type, left, right, output)")
        if self.dedup is not None:
            raise ValueError(
                "dedup: with two sources, dedup goes inside each source (sources[i].dedup)"
            )
        ids = [s.id for s in sources]
        if ids[0] == ids[1]:
            raise ValueError(f"sources[1].name: both sources are called {ids[0]!r}; name them")
        if sources[0].topic == sources[1].topic:
            raise ValueError("sources[1].topic: the two sources must read different topics")
        scopes: dict[str, dict[str, FieldRef]] = {}
        for i, src in enumerate(sources):
            where = f"sources[{i}]."
            if src.dedup is not None:
                for key in src.dedup.key:
                    if src.schema_.field(key) is None:
                        raise ValueError(
                            f"{where}dedup.key: {key!r} is not a field of sources[{i}].schema"
                        )
                if src.dedup.mode is DedupMode.LAST:
                    raise ValueError(
                        f"{where}dedup.mode: mode last is not supported on joined sources "
                        "(a joined row has no single version); use first or exact"
                    )
            scopes[src.id] = _check_stage(source_scope(src), src.transform, src.filter, where)
        join = self.join
        sides: dict[str, dict[str, FieldRef]] = {}
        for side_name, side in (("left", join.left), ("right", join.right)):
            if side.source not in scopes:
                raise ValueError(
                    f"join.{side_name}.source: {side.source!r} is not a source "
                    f"(sources: {', '.join(ids)})"
                )
            sides[side_name] = scopes[side.source]
        if join.left.source == join.right.source:
            raise ValueError("join.right.source: must differ from join.left.source")
        if len(join.left.key) != len(join.right.key):
            raise ValueError(
                f"join.right.key: the left key has {len(join.left.key)} field(s), "
                f"the right key {len(join.right.key)}"
            )
        for i, (lk, rk) in enumerate(zip(join.left.key, join.right.key, strict=True)):
            for side_name, key in (("left", lk), ("right", rk)):
                if key not in sides[side_name]:
                    raise ValueError(
                        f"join.{side_name}.key: {key!r} is not a field of source "
                        f"{getattr(join, side_name).source!r}"
                    )
            lt, rt = sides["left"][lk].type, sides["right"][rk].type
            if lt not in SCALAR_TYPES or rt not in SCALAR_TYPES:
                bad = lk if lt not in SCALAR_TYPES else rk
                raise ValueError(
                    f"join.left.key: {bad!r} is of type "
                    f"{(lt if lt not in SCALAR_TYPES else rt).value}; join keys are string, int, "
                    "float, bool or timestamp fields"
                )
            numeric = {FieldType.INT, FieldType.FLOAT}
            if lt != rt and not (lt in numeric and rt in numeric):
                raise ValueError(
                    f"join.right.key: {rk!r} is {rt.value} but the left key {lk!r} is {lt.value}; "
                    "join keys must have compatible types"
                    + (f" (key {i + 1})" if len(join.left.key) > 1 else "")
                )
        scope: dict[str, FieldRef] = {}
        for i, out in enumerate(join.output):
            side_scope = sides[out.from_]
            if out.field not in side_scope:
                raise ValueError(
                    f"join.output[{i}].field: {out.field!r} is not a field of the {out.from_} "
                    f"source {getattr(join, out.from_).source!r}"
                )
            if out.name in scope:
                raise ValueError(
                    f"join.output[{i}].as: the output name {out.name!r} is used twice; "
                    "rename one with as"
                )
            if out.column in {f.column for f in scope.values()}:
                raise ValueError(
                    f"join.output[{i}].as: {out.name!r} collides with another output name "
                    "once dots become '__'"
                )
            scope[out.name] = FieldRef(out.name, out.column, side_scope[out.field].type)
        return scope

    def _check_mapping(self, scope: dict[str, FieldRef]) -> None:
        where = "source.schema" if self.sources is None else "the join output"
        for i, m in enumerate(self.sink.mapping):
            ref = scope.get(m.field)
            if ref is None:
                raise ValueError(
                    f"sink.mapping[{i}].field: {m.field!r} is not a field of {where}"
                    + (" or a computed field" if self.transform else "")
                )
            problem = check_compatible(ref.type, m.ch_type)
            if problem:
                raise ValueError(f"sink.mapping[{i}].type: {problem}")
        if self.dedup is not None and self.dedup.mode is DedupMode.LAST:
            self._check_versioned_table()

    def _check_versioned_table(self) -> None:
        """Mode last writes into ReplacingMergeTree(version) ORDER BY the key's columns."""
        dedup = self.dedup
        assert dedup is not None
        by_field = {m.field: m for m in self.sink.mapping}
        version = by_field.get(dedup.version)
        if version is None:
            raise ValueError(
                f"sink.mapping: dedup.mode last keeps every version in the table; map the "
                f"version field {dedup.version!r} to a column, e.g. "
                f"{{field: {dedup.version}, column: _version, type: UInt64}}"
            )
        ch = version.ch_type
        if ch.name in ("Nullable", "LowCardinality") or ch.inner.name not in VERSION_TYPES:
            raise ValueError(
                f"sink.mapping[{self.sink.mapping.index(version)}].type: the version column of "
                "a ReplacingMergeTree must be a non-Nullable UInt*/Int*, Date, DateTime or "
                f"DateTime64, not {ch}"
            )
        key_columns = []
        for key in dedup.key:
            if key not in by_field:
                raise ValueError(
                    f"sink.mapping: dedup.mode last needs the key field {key!r} mapped to a "
                    "column (the table keeps one row per key)"
                )
            key_columns.append(by_field[key].column)
        if self.sink.order_by is not None and set(self.sink.order_by) != set(key_columns):
            raise ValueError(
                f"sink.order_by: with dedup.mode last the table is ordered by the key's "
                f"columns ({', '.join(key_columns)}), so ReplacingMergeTree keeps one row per key"
            )

    @property
    def primary_source(self) -> KafkaSource:
        """The single source, or the join's left source: what summaries, names and the
        consumer group refer to. Code that means every source iterates `inputs`."""
        if self.source_ is not None:
            return self.source_
        sources = self.sources or ()
        if self.join is not None:
            for s in sources:
                if s.id == self.join.left.source:
                    return s
        return sources[0]

    @property
    def inputs(self) -> tuple[KafkaSource, ...]:
        """Every source the pipeline reads."""
        return (self.source_,) if self.source_ is not None else tuple(self.sources or ())

    @property
    def replacing_version_column(self) -> str | None:
        """The version column of a ReplacingMergeTree table (dedup mode last), else None."""
        if self.dedup is None or self.dedup.mode is not DedupMode.LAST:
            return None
        return next(m.column for m in self.sink.mapping if m.field == self.dedup.version)

    @property
    def table_order_by(self) -> tuple[str, ...]:
        """ORDER BY of a table the sink creates."""
        if self.sink.order_by:
            return self.sink.order_by
        if self.replacing_version_column is not None and self.dedup is not None:
            by_field = {m.field: m.column for m in self.sink.mapping}
            return tuple(by_field[k] for k in self.dedup.key)
        return (self.sink.mapping[0].column,)

    @property
    def consumer_group(self) -> str:
        return self.primary_source.consumer_group or f"streamsift-{self.name}"

    @property
    def dlq_table(self) -> str:
        return self.dlq.table or f"{self.sink.table}_dlq"

    def checkpoint_dir(self, base: Path) -> Path:
        return self.runtime.checkpoint_dir or base / "checkpoints" / self.name
