"""The pipeline document: frozen pydantic models, validated once when a file is loaded.

A pipeline reads one Kafka topic (`source`) or joined ones (`sources` + `join`: two topics
and one join, or N topics and a chain of N-1 join steps),
optionally removes duplicates (`dedup`), computes fields (`transform`), keeps records that
pass a `filter`, and writes the result into one ClickHouse table (`sink`). Bad records go to
a dead-letter table (`dlq`). See docs/configuration.md for every field and its default.
"""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from streamsift.config.alerts import Alerts
from streamsift.config.base import MAX_DEDUP_WINDOW, ConfigModel, Duration, shorten
from streamsift.config.join_chain import (
    check_chain_shape,
    check_sources,
    check_steps,
    join_steps,
)
from streamsift.config.otlp import OtlpSource, with_otlp_defaults
from streamsift.config.rows import KAFKA_FIELDS
from streamsift.config.runtime_limits import DEFAULT_STOP_TIMEOUT, Retry
from streamsift.config.sink import (
    ClickHouseConnection,
    ClickHouseSink,
    ColumnMapping,
    Dlq,
    MissingDedupWindow,
    NewFields,
)
from streamsift.config.source import (
    KafkaSecurity,
    KafkaSource,
    Schema,
    SchemaField,
    check_topic_name,
)
from streamsift.config.stages import (
    VERSION_TYPES,
    Dedup,
    DedupMode,
    FieldRef,
    Join,
    JoinMode,
    JoinSource,
    JoinType,
    Transform,
    check_stage,
    source_scope,
)
from streamsift.config.types import FieldType, check_compatible

# The document's entry point: its parts live in base, source, stages and sink.
__all__ = [
    "ClickHouseConnection",
    "ClickHouseSink",
    "ColumnMapping",
    "Dedup",
    "DedupMode",
    "Dlq",
    "FieldRef",
    "Join",
    "JoinSource",
    "JoinType",
    "KafkaSecurity",
    "KafkaSource",
    "MAX_DEDUP_WINDOW",
    "MissingDedupWindow",
    "NewFields",
    "Pipeline",
    "Runtime",
    "Schema",
    "SchemaField",
    "StateStore",
    "Transform",
    "VERSION_TYPES",
    "check_stage",
    "check_topic_name",
    "source_scope",
]


# Spark's master URLs (local, standalone, Kubernetes, YARN); Spark itself checks the rest.
MASTER_URL = re.compile(r"\A(local(\[(\d+|\*)(,\d+)?\])?|spark://\S+|k8s://\S+|yarn)\Z")


class StateStore(str, Enum):
    """Where Spark keeps a join's state (dedup keeps its own, in RocksDB, either way)."""

    ROCKSDB = "rocksdb"  # on local disk: any window, any rate
    MEMORY = "memory"  # on the JVM heap: faster, for short join windows


class Isolation(str, Enum):
    """Where the service runs the pipeline (`streamsift run` always runs it in its own
    process): in the service's pipeline host, one Spark application shared with other
    pipelines as a query of its own, or in a process of its own (heavy or untrusted
    pipelines; also, by itself, a pipeline on a cluster master or with Spark settings that
    only a new application can take)."""

    HOST = "host"
    PROCESS = "process"


class Runtime(ConfigModel):
    """Where the pipeline keeps its checkpoint, how big its micro-batches may get, where the
    join's state lives (fixed when the checkpoint is created), which Spark runs it (`master`,
    e.g. `spark://host:7077`; default `local[2]`), extra `spark.*` settings, and where the
    dedup state is persisted on a cluster (`state_location`, a directory or URL such as
    `s3://bucket/path`; default: beside the checkpoint)."""

    checkpoint_dir: Path | None = None
    max_rows_per_batch: int | None = Field(default=None, gt=0)
    state_store: StateStore = StateStore.ROCKSDB
    master: str | None = None
    spark_conf: dict[str, str] = Field(default_factory=dict)
    state_location: str | None = None
    retry: Retry = Retry()
    # a stop waits this long for the micro-batch in flight, then ends the run without it
    # (the batch is redone from the checkpoint on resume)
    stop_timeout: Duration = DEFAULT_STOP_TIMEOUT
    isolation: Isolation = Isolation.HOST
    # its share of the host's cores against the other pipelines there (a FAIR scheduler pool)
    weight: int = Field(default=1, ge=1, le=1000)

    @field_validator("master")
    @classmethod
    def _master(cls, v: str | None) -> str | None:
        if v is not None and not MASTER_URL.match(v):
            raise ValueError(
                f"{shorten(v)} is not a Spark master: use local[N], local[*], "
                "spark://host:port, k8s://https://host:port or yarn"
            )
        return v

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _spark_conf(cls, v: object) -> object:
        if isinstance(v, dict):
            for key, value in v.items():
                if not isinstance(key, str) or not key.startswith("spark."):
                    raise ValueError(
                        f"{shorten(str(key))} is not a Spark setting: keys start with spark."
                    )
                if isinstance(value, (dict, list)) or value is None:
                    raise ValueError(f"{key}: give a single value (text, number or true/false)")
            return {
                k: str(val).lower() if isinstance(val, bool) else str(val) for k, val in v.items()
            }
        return v

    @field_validator("state_location")
    @classmethod
    def _state_location(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("give a directory or a URL such as s3://bucket/path")
        return v


# ---------------------------------------------------------------------------- pipeline


def _join_kind(value: Any) -> str:
    """`join` is one mapping (two sources) or a list of steps (a chain over N sources)."""
    return "<steps>" if isinstance(value, (list, tuple)) else "<one>"


JoinSpec = Annotated[
    Annotated[Join, Tag("<one>")] | Annotated[tuple[Join, ...], Tag("<steps>")],
    Discriminator(_join_kind),
]


def _source_kind(value: Any) -> str:
    """`source` is an OTLP source when its `type` says otlp.*; else a Kafka topic."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    kind = getattr(kind, "value", kind)
    return (
        "<otlp>" if isinstance(kind, str) and kind.strip().lower().startswith("otlp") else "<kafka>"
    )


# Tags start with "<": error paths leave them out (config/errors.py).
SingleSource = Annotated[
    Annotated[OtlpSource, Tag("<otlp>")] | Annotated[KafkaSource, Tag("<kafka>")],
    Discriminator(_source_kind),
]


class Pipeline(ConfigModel):
    """A whole pipeline document (format version 1): one `source`, or `sources` + `join` (two
    sources and one join, or N sources and a list of N-1 join steps)."""

    version: Literal[1] = 1
    name: str
    source_: SingleSource | None = Field(default=None, alias="source")
    sources: tuple[JoinSource, ...] | None = None
    dedup: Dedup | None = None
    join: JoinSpec | None = None
    transform: tuple[Transform, ...] = ()
    filter: str | None = None
    sink: ClickHouseSink
    dlq: Dlq = Dlq()
    runtime: Runtime = Runtime()
    alerts: Alerts | None = None  # who hears when it fails, lags, ... (config/alerts.py)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,99}", v):
            raise ValueError(
                f"{shorten(v)} is not a pipeline name: letters, digits, _ and -, at most 100"
            )
        return v

    @model_validator(mode="before")
    @classmethod
    def _otlp_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict) and _source_kind(data.get("source")) == "<otlp>":
            return with_otlp_defaults(data)
        return data

    @model_validator(mode="after")
    def _cross_check(self) -> Pipeline:
        if self.source_ is not None and self.sources is not None:
            raise ValueError(
                "source: give either source (one topic) or sources (two joined topics), not both"
            )
        if self.source_ is None and self.sources is None:
            raise ValueError("source: required field is missing")
        if self.sources is None and self.join is not None:
            raise ValueError("join: a join needs two sources: write them under sources")
        if self.sources is not None:
            self._check_join_shape()
        if not self.fields_pending:  # else: once runtime has fetched the registry's fields
            self._check_fields()
        if self.dlq_table == self.sink.table:
            raise ValueError("dlq.table: must differ from sink.table")
        if self.sink.on_new_fields is NewFields.ADD_COLUMNS and (
            self.sources is not None or self.transform or self.filter
        ):
            raise ValueError(
                "sink.on_new_fields: add_columns works on a single source without transform "
                "or filter (new fields would bypass them); use dlq or ignore"
            )
        return self

    def _check_fields(self) -> None:
        """What refers to the sources' fields: dedup, join, transforms, filter, mapping."""
        scope = self._check_join() if self.sources is not None else self._check_single_source()
        scope = check_stage(scope, self.transform, self.filter, "")
        self._check_mapping(scope)

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

    def _check_join_shape(self) -> None:
        """How many sources, and which steps read them (config/join_chain.py)."""
        sources = self.sources or ()
        if len(sources) < 2:
            raise ValueError(
                f"sources: a join reads two or more sources, got {len(sources)}; "
                "a single topic goes under source"
            )
        if self.join is None:
            raise ValueError("join: two sources need a join (type, left, right, output)")
        if self.dedup is not None:
            raise ValueError(
                "dedup: with two sources, dedup goes inside each source (sources[i].dedup)"
            )
        modes = {step.mode for step in self.joins}
        if modes - {JoinMode.INTERVAL} and self.runtime.state_store is StateStore.MEMORY:
            mode = next(m for m in (JoinMode.LATEST, JoinMode.TABLE) if m in modes)
            raise ValueError(
                f"runtime.state_store: memory cannot hold a join of mode {mode.value} "
                "(Spark's transformWithState keeps its state in RocksDB); use rocksdb"
            )
        check_chain_shape(sources, self.join)

    def _check_join(self) -> dict[str, FieldRef]:
        sources = self.sources or ()
        assert self.join is not None  # _check_join_shape
        return check_steps(sources, self.join, check_sources(sources))

    def _check_mapping(self, scope: dict[str, FieldRef]) -> None:
        where = "source.schema" if self.sources is None else "the join output"
        for i, m in enumerate(self.sink.mapping):
            ref = scope.get(m.field)
            if ref is None:
                raise ValueError(
                    f"sink.mapping[{i}].field: {m.field!r} is not a field of {where}"
                    + (" or a computed field" if self.transform else "")
                )
            problem = check_compatible(ref.type, m.ch_type, m.field, m.column)
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
        if self.joins:
            for s in sources:
                if s.id == self.joins[0].left.source:
                    return s
        return sources[0]

    @property
    def joins(self) -> tuple[Join, ...]:
        """The join as a chain of steps: () without a join, one step for the single mapping."""
        return join_steps(self.join)

    @property
    def fields_pending(self) -> bool:
        """A source's fields are still to be fetched from its registry (`schema.from_registry`
        in a document as stored): the pipeline is shown, not run, until runtime has them."""
        return any(src.schema_.fields_pending for src in self.inputs)

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
