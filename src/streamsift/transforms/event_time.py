"""How far a record's event time may run ahead of its Kafka message timestamp.

One record dated years ahead would otherwise become the newest event time of its partition:
dedup would call every later record of the partition late and stop comparing them, and the
join's watermark would jump ahead and drop every later row. A record whose event time is more
than `schema.max_future_skew` ahead of its Kafka timestamp is therefore a dead letter
(error class `future_event_time`).

The reference is the Kafka message timestamp (set by the producer, or by the broker with
LogAppendTime) because it is stored with the message: a re-read of the same offsets decides
exactly the same, which the wall clock at processing time would not. See docs/semantics.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.durations import format_duration

FUTURE_EVENT_TIME = "future_event_time"  # the DLQ's error_class for these records
# Every message of such a dead letter holds this phrase; the sink derives the class from it.
AHEAD_OF_KAFKA_TIMESTAMP = "ahead of its Kafka timestamp"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def future_event_time_errors(
    path: str,
    event_us: pa.Array | pa.ChunkedArray | Sequence[int | None],
    kafka_ms: Sequence[int],
    max_skew_us: int,
) -> dict[int, str]:
    """The records whose event time is more than `max_skew_us` ahead of their Kafka timestamp.

    Returns {record index: reason naming the field, its value and the allowed skew}. Records
    without an event time (null) or without a Kafka timestamp (negative: not available) pass.
    """
    if isinstance(event_us, pa.ChunkedArray):
        event_us = event_us.combine_chunks()
    events = pc.cast(event_us, pa.int64()) if isinstance(event_us, pa.Array) else None
    if events is None:
        events = pa.array(event_us, pa.int64())
    stamps = pa.array(kafka_ms, pa.int64())
    limit = pc.add(pc.multiply(stamps, 1000), max_skew_us)
    too_far = pc.and_(pc.greater(events, limit), pc.greater_equal(stamps, 0))
    flagged = pc.indices_nonzero(pc.fill_null(too_far, False)).to_pylist()
    return {i: _reason(path, events[i].as_py(), kafka_ms[i], max_skew_us) for i in flagged}


def _reason(path: str, event_us: int, kafka_ms: int, max_skew_us: int) -> str:
    ahead = timedelta(microseconds=event_us - kafka_ms * 1000)
    return (
        f"field '{path}': event time {_iso(event_us)} is {format_duration(ahead)} "
        f"{AHEAD_OF_KAFKA_TIMESTAMP} {_iso(kafka_ms * 1000)}, more than the "
        f"{format_duration(timedelta(microseconds=max_skew_us))} allowed "
        "(schema.max_future_skew)"
    )


def _iso(us: int) -> str:
    """A UTC time as ISO-8601 with `Z`; times past year 9999 as microseconds since 1970."""
    try:
        text = (_EPOCH + timedelta(microseconds=us)).isoformat()
    except OverflowError:
        return f"{us} us after 1970"
    return text.replace("+00:00", "Z")
