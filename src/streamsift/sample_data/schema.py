"""The generated streams' fields as pipeline schemas and ClickHouse mappings, and the checksums
that compare a table with a generator's truth.

Standard library only: the bench's quixstreams worker imports this (through
streamsift_bench.common) in its own interpreter, which has neither streamsift's pydantic nor
its confluent-kafka.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

# Every field the generators write that a pipeline reads: its pipeline type, and where it is
# mapped, its ClickHouse column and type.
_FIELDS: dict[str, tuple[str, str, str]] = {
    "event_id": ("string", "event_id", "String"),
    "type": ("string", "type", "LowCardinality(String)"),
    "user.id": ("string", "user_id", "String"),
    "user.name": ("string", "user_name", "String"),
    "user.country": ("string", "country", "LowCardinality(String)"),
    "user.plan": ("string", "plan", "LowCardinality(String)"),
    "session.id": ("string", "session_id", "String"),
    "session.device.os": ("string", "os", "LowCardinality(String)"),
    "tags": ("array", "tags", "Array(String)"),
    "amount": ("float", "amount", "Float64"),
    "attempt": ("int", "attempt", "UInt32"),
    "version": ("int", "version", "UInt32"),
    "created_at": ("timestamp", "created_at", "DateTime64(3, 'UTC')"),
    "updated_at": ("timestamp", "updated_at", "DateTime64(3, 'UTC')"),
    "produced_at_ms": ("int", "produced_at_ms", "Int64"),
    "order_id": ("string", "order_id", "String"),
    "user_id": ("string", "user_id", "String"),
}


def schema_fields(names: Sequence[str]) -> list[dict[str, str]]:
    """The named fields as `source.schema.fields` entries, in this order."""
    return [{"name": name, "type": _FIELDS[name][0]} for name in names]


def sink_mapping(names: Sequence[str]) -> list[dict[str, str]]:
    """The named fields as `sink.mapping` entries (column and ClickHouse type), in this order."""
    return [{"field": name, "column": _FIELDS[name][1], "type": _FIELDS[name][2]} for name in names]


def clickhouse_type(name: str) -> str:
    """The ClickHouse type a field is mapped to."""
    return _FIELDS[name][2]


# The demo generator's events (streamsift.sample_data.generator).
EVENT_COLUMNS = (
    "event_id",
    "type",
    "user.id",
    "user.name",
    "tags",
    "amount",
    "attempt",
    "created_at",
)
EVENT_FIELDS = schema_fields(EVENT_COLUMNS)
EVENT_MAPPING = sink_mapping(EVENT_COLUMNS)

# The load generator's events (streamsift_bench.loadgen): the demo's, with the user's
# country instead of the name, the session, and the time the message was handed to Kafka.
LOAD_COLUMNS = (
    "event_id",
    "type",
    "user.id",
    "user.country",
    "session.id",
    "session.device.os",
    "tags",
    "amount",
    "attempt",
    "created_at",
    "produced_at_ms",
)
LOAD_FIELDS = schema_fields(LOAD_COLUMNS)
LOAD_MAPPING = sink_mapping(LOAD_COLUMNS)

# The load generator's join stream: user profile events (dedup key `event_id`, join key
# `user.id`, event time `updated_at`).
JOIN_FIELDS = schema_fields(
    ("event_id", "user.id", "user.plan", "user.country", "version", "attempt", "updated_at")
)

# The join demo's two streams: orders (left) and user profile events (right).
ORDER_FIELDS = schema_fields(("order_id", "user_id", "amount", "created_at"))
USER_FIELDS = schema_fields(("event_id", "user.id", "user.name", "user.plan", "updated_at"))

# ClickHouse SQL giving the same number as `LoadTruth.id_checksum` over a table's ids.
ID_CHECKSUM_SQL = "sum(reinterpretAsUInt32(reverse(unhex(substring(event_id, 1, 8)))))"
# ClickHouse SQL giving `JoinTruth.pair_checksum` over a table of joined rows; format it with
# the columns holding the left and the right event id.
PAIR_CHECKSUM_SQL = (
    "sum(reinterpretAsUInt32(reverse(substring(MD5(concat({left}, '|', {right})), 1, 4))))"
)


def id_checksum_part(event_id: str) -> int:
    """The id's contribution to the truth checksum: its first 8 hex digits as a number."""
    return int(event_id[:8], 16)


def pair_checksum_part(left_id: str, right_id: str) -> int:
    """A joined row's contribution to the pair checksum: the first 4 bytes of
    md5("left|right") as a big-endian number (order-sensitive, unlike a sum of id parts)."""
    return int.from_bytes(hashlib.md5(f"{left_id}|{right_id}".encode()).digest()[:4], "big")
