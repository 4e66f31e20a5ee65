"""The metadata columns of a row in flight, declared once.

Besides the payload's fields, every row the pipeline moves carries metadata columns: where
its Kafka message came from, its times, its raw message while it may still become a dead
letter, why it failed, and (after a join) which right record it matched. They are declared
here, once; the Spark schema of the source (engine/processor.py), the output frame and its
sort key (engine/query.py), the join's selects (transforms/join/plan.py) and the names a payload
field may not take (config/models.py) are all derived from `META_COLUMNS`.

Types are Spark SQL type names (plain strings: the config layer imports neither pyspark nor
pyarrow); engine/processor.py maps them to pyspark's type objects.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamsift.config.types import FieldType

# `_rpartition` / `_roffset` of a row that matched no right record: a left-outer row, a dead
# letter, or any row of a single-source pipeline. Never NULL, so rows sort the same way.
NO_RECORD = -1


@dataclass(frozen=True)
class MetaColumn:
    """One metadata column: its name, Spark SQL type, nullability and meaning, and where the
    pipeline sets it."""

    name: str
    sql_type: str  # a Spark SQL type name, e.g. "BIGINT"
    nullable: bool
    meaning: str
    from_source: bool = True  # written by the source processor (the DataSource's schema)
    in_output: bool = True  # carried by the output frame to the sink
    identity: bool = False  # part of a row's identity, in this order: the sink's sort key
    # A joined row's value: that column of its left (`l.`) or right (`r.`) record; None: a
    # joined row has none (NULL)
    joined: str | None = None
    # The read-only field that exposes the column to filters, computed fields and mappings
    kafka_field: tuple[str, FieldType] | None = None


META_COLUMNS: tuple[MetaColumn, ...] = (
    MetaColumn(
        "_topic",
        "STRING",
        nullable=False,
        meaning="the Kafka topic of the row's (left) record",
        identity=True,
        joined="l._topic",
        kafka_field=("_kafka.topic", FieldType.STRING),
    ),
    MetaColumn(
        "_partition",
        "INT",
        nullable=False,
        meaning="the Kafka partition of the row's (left) record",
        identity=True,
        joined="l._partition",
        kafka_field=("_kafka.partition", FieldType.INT),
    ),
    MetaColumn(
        "_offset",
        "BIGINT",
        nullable=False,
        meaning="the Kafka offset of the row's (left) record",
        identity=True,
        joined="l._offset",
        kafka_field=("_kafka.offset", FieldType.INT),
    ),
    MetaColumn(
        "_kafka_ts",
        "TIMESTAMP",
        nullable=True,
        meaning="the Kafka timestamp of the row's (left) record",
        joined="l._kafka_ts",
        kafka_field=("_kafka.timestamp", FieldType.TIMESTAMP),
    ),
    MetaColumn(
        "_event_time",
        "TIMESTAMP",
        nullable=True,
        meaning="the record's event time (its Kafka timestamp without schema.event_time); "
        "NULL on dead letters, so they never move the join's watermark",
        in_output=False,
    ),
    MetaColumn(
        "_late",
        "BOOLEAN",
        nullable=False,
        meaning="the record arrived behind its dedup window (kept, and counted)",
        joined="l._late",
    ),
    MetaColumn(
        "_key",
        "BINARY",
        nullable=True,
        meaning="the Kafka message's key, kept while the row may still become a dead letter",
    ),
    MetaColumn(
        "_raw",
        "BINARY",
        nullable=True,
        meaning="the Kafka message's value, kept while the row may still become a dead letter",
    ),
    MetaColumn(
        "_error",
        "STRING",
        nullable=True,
        meaning="why the row failed; set: the row is a dead letter",
    ),
    MetaColumn(
        "_stage",
        "STRING",
        nullable=True,
        meaning="where a dead letter failed: parse, transform or filter",
        from_source=False,
    ),
    MetaColumn(
        "_source",
        "STRING",
        nullable=False,
        meaning="the id of the source the row came from (the left one for a joined row)",
        from_source=False,
        joined="l._source",
    ),
    MetaColumn(
        "_rpartition",
        "INT",
        nullable=False,
        meaning=f"the Kafka partition of the matched right record ({NO_RECORD}: none)",
        from_source=False,
        identity=True,
        joined="r._partition",
    ),
    MetaColumn(
        "_roffset",
        "BIGINT",
        nullable=False,
        meaning=f"the Kafka offset of the matched right record ({NO_RECORD}: none)",
        from_source=False,
        identity=True,
        joined="r._offset",
    ),
)

# The source processor's metadata columns, after the payload's fields (engine/processor.py).
SOURCE_COLUMNS = tuple(c for c in META_COLUMNS if c.from_source)
# The output frame's metadata columns, after the mapped columns (engine/query.py).
OUTPUT_COLUMNS = tuple(c for c in META_COLUMNS if c.in_output)
# Columns only a join sets: the matched right record's position (NO_RECORD when there is none).
RIGHT_RECORD_COLUMNS = tuple(c for c in META_COLUMNS if (c.joined or "").startswith("r."))
# The order that makes a batch's rows come out the same on every re-run (all non-null).
SORT_KEY = tuple(c.name for c in META_COLUMNS if c.identity)

# Kafka metadata every source offers as read-only fields: name -> (pipeline column, type).
KAFKA_FIELDS: dict[str, tuple[str, FieldType]] = {
    c.kafka_field[0]: (c.name, c.kafka_field[1]) for c in META_COLUMNS if c.kafka_field
}

# Working columns of the join, dropped before the output frame.
JOIN_SPLIT = "_ok"  # the row joins (else it is a dead letter passed around the join)
PRE_ERROR = "_pre_error"  # the row was a dead letter before the stage after the join
MAX_JOIN_KEYS = 16  # join keys whose working-column names are reserved


def join_key_column(i: int) -> str:
    """The working column holding the i-th join key, cast to the type both sides share."""
    return f"_jk{i}"


# Column names the pipeline uses for its own bookkeeping; payload fields may not take them.
# Other names starting with `_` stay free: `_id` is common in JSON (MongoDB, ...).
RESERVED_COLUMNS = frozenset(
    {c.name for c in META_COLUMNS}
    | {JOIN_SPLIT, PRE_ERROR}
    | {join_key_column(i) for i in range(MAX_JOIN_KEYS)}
)
