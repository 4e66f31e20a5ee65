"""The Kafka side of a pipeline: connection and security, the topic, the message schema."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from enum import Enum
from functools import cached_property
from typing import Annotated, ClassVar, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PlainSerializer,
    SecretStr,
    field_validator,
    model_validator,
)

from streamsift.config.base import (
    FIELD_PATH,
    MAX_DEDUP_WINDOW,
    MAX_TOPIC_LENGTH,
    TOPIC_NAME,
    ConfigModel,
    Duration,
    shorten,
)
from streamsift.config.durations import format_duration, parse_duration
from streamsift.config.kafka_security import (
    KafkaSecurity,
)
from streamsift.config.rows import KAFKA_FIELDS, RESERVED_COLUMNS
from streamsift.config.types import (
    FieldType,
    parse_field_type,
)

# ---------------------------------------------------------------------------- source


def check_topic_name(name: str) -> str:
    """Kafka's topic-name rules, so a bad name fails at validate, not at the broker."""
    if len(name) > MAX_TOPIC_LENGTH:
        raise ValueError(
            f"topic name {shorten(name)} is longer than Kafka's {MAX_TOPIC_LENGTH} characters"
        )
    if name in (".", ".."):
        raise ValueError(f"{name!r} is not a valid Kafka topic name")
    if not TOPIC_NAME.match(name):
        bad = sorted({c for c in name if not TOPIC_NAME.match(c)})
        raise ValueError(
            f"topic name {shorten(name)} has characters Kafka does not allow "
            f"({''.join(bad)!r}): use letters, digits, '.', '_' and '-'"
        )
    return name


def check_bootstrap_servers(value: object) -> object:
    """`host:port[,host:port...]` or a list of them, as one comma-separated string."""
    if isinstance(value, (list, tuple)):
        value = ",".join(str(s).strip() for s in value)
    if isinstance(value, str):
        hosts = [h.strip() for h in value.split(",") if h.strip()]
        if not hosts:
            raise ValueError("at least one broker address host:port is required")
        for h in hosts:
            host, _, port = h.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"{h!r} is not host:port")
        return ",".join(hosts)
    return value


class SchemaField(ConfigModel):
    """One payload field: a dot path into the JSON (`user.id`) and its type."""

    name: str
    type: Annotated[FieldType, BeforeValidator(parse_field_type)]

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not FIELD_PATH.match(v):
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


class SourceFormat(str, Enum):
    """How message values are encoded: JSON text, or Avro / Protobuf in the Confluent wire
    format (magic byte, schema id; Protobuf adds message indexes) with a schema registry."""

    JSON = "json"
    AVRO = "avro"
    PROTOBUF = "protobuf"


class SchemaRegistry(ConfigModel):
    """A Confluent-compatible schema registry; `password` is a secret (redacted, sealed)."""

    url: str
    username: str | None = None
    password: SecretStr | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        v = v.strip()
        scheme, _, rest = v.partition("://")
        if scheme.lower() not in ("http", "https") or not rest.split("/")[0]:
            raise ValueError(f"{shorten(v)} is not an http(s) URL, e.g. http://registry:8081")
        if "@" in rest.split("/")[0]:
            raise ValueError("put the credentials in username and password, not in the URL")
        return v.rstrip("/")

    @model_validator(mode="after")
    def _check(self) -> SchemaRegistry:
        if self.password is not None and not self.username:
            raise ValueError("username is required with a password")
        return self


class RegistrySubject(ConfigModel):
    """Where `schema.from_registry` takes the fields from: a subject's schema at a version
    (default: the topic's value subject, `<topic>-value`, latest version); for Protobuf,
    which message of the schema (default the first)."""

    subject: str | None = None
    version: int | Literal["latest"] = "latest"
    message: str | None = None

    @field_validator("version")
    @classmethod
    def _version(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 1:
            raise ValueError("versions count from 1; write latest for the newest")
        return v


class Schema(ConfigModel):
    fields: tuple[SchemaField, ...] = ()
    event_time: str | None = None
    max_future_skew: FutureSkew = DEFAULT_MAX_FUTURE_SKEW
    # True where records hold maps whose keys contain dots (OTLP attributes): a field
    # `attributes.http.method` then reads key `http.method` of map field `attributes`.
    literal_dots: ClassVar[bool] = False
    # Fields taken from the registry's subject; until runtime fetches them (with the
    # password in clear: engine/registry_fields.py) they are pending and not checked
    from_registry: RegistrySubject | None = None

    @field_validator("from_registry", mode="before")
    @classmethod
    def _from_registry(cls, v: object) -> object:
        return {} if v is True else None if v is False else v

    @model_validator(mode="after")
    def _check(self) -> Schema:
        if not self.fields:
            if self.from_registry is not None:
                return self  # pending: the checks below run once runtime has the fields
            raise ValueError(
                "fields: list at least one field, or take them from the registry with from_registry"
            )
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
        for other in names if not self.literal_dots else ():
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

    @property
    def fields_pending(self) -> bool:
        """Fields to be taken from the registry that have not been fetched yet."""
        return self.from_registry is not None and not self.fields

    @cached_property
    def _by_name(self) -> dict[str, SchemaField]:
        return {f.name: f for f in self.fields}


class StartFrom(str, Enum):
    EARLIEST = "earliest"
    LATEST = "latest"


class KafkaSource(ConfigModel):
    """One Kafka topic and the shape of its JSON messages."""

    name: str | None = None
    bootstrap_servers: str
    topic: str = Field(min_length=1)
    consumer_group: str | None = None
    start_from: StartFrom = StartFrom.EARLIEST
    security: KafkaSecurity = KafkaSecurity()
    properties: dict[str, str] = Field(default_factory=dict)
    connect_timeout: Duration = timedelta(seconds=30)
    # how long a read may wait for the broker (the end of a partition, the data of a range it
    # listed) before the source counts as unavailable: a transient fault, retried
    read_timeout: Duration = timedelta(minutes=2)
    format: SourceFormat = SourceFormat.JSON
    schema_registry: SchemaRegistry | None = None
    schema_: Schema = Field(alias="schema")

    @model_validator(mode="after")
    def _check_format(self) -> KafkaSource:
        registry = self.format is not SourceFormat.JSON
        if registry and self.schema_registry is None:
            raise ValueError(
                f"schema_registry: required with format {self.format.value} (messages carry a "
                "schema id; streamsift fetches each schema from the registry)"
            )
        if not registry and self.schema_registry is not None:
            raise ValueError("schema_registry: used only with format avro or protobuf")
        if self.schema_.from_registry is not None and not registry:
            raise ValueError("schema.from_registry: needs format avro or protobuf")
        return self

    @property
    def registry_subject(self) -> str:
        """The subject `schema.from_registry` reads (TopicNameStrategy by default)."""
        sub = self.schema_.from_registry
        return (sub.subject if sub and sub.subject else None) or f"{self.topic}-value"

    @field_validator("bootstrap_servers", mode="before")
    @classmethod
    def _servers(cls, v: object) -> object:
        return check_bootstrap_servers(v)

    @field_validator("topic")
    @classmethod
    def _topic(cls, v: str) -> str:
        return check_topic_name(v)

    @field_validator("properties")
    @classmethod
    def _props(cls, v: dict[str, str]) -> dict[str, str]:
        reserved = {"bootstrap.servers", "group.id", "enable.auto.commit", "security.protocol"}
        bad = sorted(
            k for k in v if k in reserved or k.startswith(("sasl.", "streamsift.", "oauth_cb"))
        )
        if bad:
            raise ValueError(
                f"set {', '.join(bad)} through the source's own fields, not properties"
            )
        return {k: str(x) for k, x in v.items()}

    @property
    def id(self) -> str:
        return self.name or self.topic
