"""The pipeline document: frozen pydantic models, validated once when a file is loaded.

A pipeline reads one Kafka topic (a `source`), optionally removes duplicates (`dedup`), and
writes the result into one ClickHouse table (`sink`). Bad records go to a dead-letter table
(`dlq`). See docs/configuration.md for every field and its default.
"""

from __future__ import annotations

import re
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    field_validator,
    model_validator,
)

from streamsift.config.durations import format_duration, parse_duration
from streamsift.config.types import (
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
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
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


class SchemaField(_Model):
    """One payload field: a dot path into the JSON (`user.id`) and its type."""

    name: str
    type: Annotated[FieldType, BeforeValidator(parse_field_type)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _FIELD_PATH.match(v):
            raise ValueError(
                f"{v!r} is not a field path: use names of letters, digits and _ joined by dots, e.g. user.id"
            )
        return v

    @property
    def column(self) -> str:
        """The column name used inside the pipeline (dots are not allowed in Spark names)."""
        return self.name.replace(".", "__").replace("-", "_")


class Schema(_Model):
    fields: tuple[SchemaField, ...] = Field(min_length=1)
    event_time: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Schema:
        names = [f.name for f in self.fields]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"field names must be unique; repeated: {', '.join(dupes)}")
        columns = [f.column for f in self.fields]
        clash = sorted({c for c in columns if columns.count(c) > 1})
        if clash:
            raise ValueError(f"fields collide once dots become '__': {', '.join(clash)}")
        for path in names:
            for other in names:
                if other.startswith(path + "."):
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
        return next((f for f in self.fields if f.name == name), None)


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
    FIRST = "first"


class Dedup(_Model):
    """Drop repeats of a key within a time window; the first arrival wins."""

    key: tuple[str, ...] = Field(min_length=1)
    time_window: Duration
    mode: DedupMode = DedupMode.FIRST

    @field_validator("key", mode="before")
    @classmethod
    def _key(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v

    @field_validator("time_window")
    @classmethod
    def _window(cls, v: timedelta) -> timedelta:
        if v <= timedelta(0):
            raise ValueError("must be greater than zero")
        if v > MAX_DEDUP_WINDOW:
            raise ValueError(f"{format_duration(v)} exceeds the 7d maximum")
        return v


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
            raise ValueError(f"{v!r} is not a plain column name (letters, digits, _)")
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

    @field_validator("table")
    @classmethod
    def _table(cls, v: str) -> str:
        if not _IDENTIFIER.match(v):
            raise ValueError(f"{v!r} is not a plain table name (letters, digits, _)")
        return v

    @field_validator("order_by", mode="before")
    @classmethod
    def _order_by(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> ClickHouseSink:
        columns = [m.column for m in self.mapping]
        dupes = sorted({c for c in columns if columns.count(c) > 1})
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
            raise ValueError(f"{v!r} is not a plain table name")
        return v


class Runtime(_Model):
    """Where the pipeline keeps its checkpoint and how big its micro-batches may get."""

    checkpoint_dir: Path | None = None
    max_rows_per_batch: int | None = Field(default=None, gt=0)


# ---------------------------------------------------------------------------- pipeline


class Pipeline(_Model):
    """A whole pipeline document (format version 1)."""

    version: Literal[1] = 1
    name: str
    source: KafkaSource
    dedup: Dedup | None = None
    sink: ClickHouseSink
    dlq: Dlq = Dlq()
    runtime: Runtime = Runtime()

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,99}$", v):
            raise ValueError(f"{v!r} is not a pipeline name: letters, digits, _ and -, at most 100")
        return v

    @model_validator(mode="after")
    def _cross_check(self) -> Pipeline:
        schema = self.source.schema_
        if self.dedup is not None:
            for key in self.dedup.key:
                if schema.field(key) is None:
                    raise ValueError(f"dedup.key: {key!r} is not a field of source.schema")
        for i, m in enumerate(self.sink.mapping):
            field = schema.field(m.field)
            if field is None:
                raise ValueError(
                    f"sink.mapping[{i}].field: {m.field!r} is not a field of source.schema"
                )
            problem = check_compatible(field.type, m.ch_type)
            if problem:
                raise ValueError(f"sink.mapping[{i}].type: {problem}")
        if self.dlq_table == self.sink.table:
            raise ValueError("dlq.table: must differ from sink.table")
        return self

    @property
    def consumer_group(self) -> str:
        return self.source.consumer_group or f"streamsift-{self.name}"

    @property
    def dlq_table(self) -> str:
        return self.dlq.table or f"{self.sink.table}_dlq"

    def checkpoint_dir(self, base: Path) -> Path:
        return self.runtime.checkpoint_dir or base / "checkpoints" / self.name
