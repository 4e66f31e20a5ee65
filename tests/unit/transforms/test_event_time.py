"""Event times far ahead of (or far behind) the Kafka timestamp: the pure rule and its effect
on one partition's parse + dedup, without Spark."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from streamsift.config import ConfigError, parse_pipeline, read_document
from streamsift.config.models import Dedup, Schema
from streamsift.engine.batch_writer import error_class
from streamsift.engine.processor import SourceProcessor
from streamsift.sources.kafka_range import KafkaRecords
from streamsift.transforms.event_time import future_event_time_errors
from support.paths import EXAMPLES

UTC = timezone.utc
BASE = read_document(EXAMPLES / "users-dedup.yaml")
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)  # the Kafka timestamp of "normal" messages
FUTURE = datetime(2099, 1, 1, tzinfo=UTC)
PAST = datetime(2001, 1, 1, tzinfo=UTC)
MIN_US = 60_000_000


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def us(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000)


# ---------------------------------------------------------------------------- the pure rule


def test_only_event_times_beyond_the_skew_are_flagged() -> None:
    kafka = [ms(NOW)] * 5
    events = [
        us(NOW),  # same time
        us(NOW) + 5 * MIN_US,  # exactly at the limit: allowed
        us(NOW) + 5 * MIN_US + 1,  # one microsecond beyond
        us(PAST),  # far past: not this rule's business
        None,  # no event time (already a dead letter)
    ]
    got = future_event_time_errors("created_at", events, kafka, 5 * MIN_US)
    assert list(got) == [2]


def test_the_reason_names_the_field_its_value_the_reference_and_the_skew() -> None:
    got = future_event_time_errors("user.ts", [us(FUTURE)], [ms(NOW)], 5 * MIN_US)
    reason = got[0]
    assert reason.startswith("field 'user.ts': event time 2099-01-01T00:00:00Z is ")
    assert "ahead of its Kafka timestamp 2026-11-25T12:00:00Z" in reason
    assert reason.endswith("more than the 5m allowed (schema.max_future_skew)")
    assert error_class(reason, "parse") == "future_event_time"


def test_messages_without_a_kafka_timestamp_are_not_judged() -> None:
    assert future_event_time_errors("t", [us(FUTURE)], [-1], 0) == {}


def test_event_times_beyond_year_9999_still_get_a_reason() -> None:
    huge = 2**62
    got = future_event_time_errors("t", [huge], [ms(NOW)], 0)
    assert f"event time {huge} us after 1970" in got[0]


# ---------------------------------------------------------------------------- one partition

FIELDS = [{"name": "id", "type": "string"}, {"name": "ts", "type": "timestamp"}]


def processor(
    tmp_path: Path, skew: object = "5m", dedup: bool = True, ts_type: str = "timestamp"
) -> SourceProcessor:
    fields = [{"name": "id", "type": "string"}, {"name": "ts", "type": ts_type}]
    schema = Schema.model_validate({"fields": fields, "event_time": "ts", "max_future_skew": skew})
    rule = Dedup.model_validate({"key": "id", "time_window": "1h"}) if dedup else None
    return SourceProcessor.build(schema, rule, tmp_path / "dedup")


def records(start: int, rows: list[tuple[str, datetime | float, datetime]]) -> KafkaRecords:
    """(id, event time, Kafka timestamp) per message, from offset `start` on."""
    values = [
        json.dumps({"id": k, "ts": t.isoformat() if isinstance(t, datetime) else t}).encode()
        for k, t, _ in rows
    ]
    offsets = list(range(start, start + len(rows)))
    return KafkaRecords(
        "events",
        0,
        start,
        start + len(rows),
        offsets,
        [ms(kafka) for _, _, kafka in rows],
        [k.encode() for k, _, _ in rows],
        values,
    )


def run(proc: SourceProcessor, recs: KafkaRecords) -> list[dict]:
    table = pa.Table.from_batches(list(proc.process(recs)), schema=proc.schema)
    return table.select(["id", "_offset", "_event_time", "_late", "_error"]).to_pylist()


def normal(i: int, key: str) -> tuple[str, datetime, datetime]:
    at = NOW + timedelta(seconds=i)
    return key, at, at


def test_one_far_future_event_goes_to_the_dlq_and_dedup_goes_on(tmp_path: Path) -> None:
    proc = processor(tmp_path)
    first = run(proc, records(0, [normal(0, "a"), ("x", FUTURE, NOW), normal(1, "b")]))
    assert [r["_error"] is not None for r in first] == [False, True, False]
    assert "event time 2099-01-01T00:00:00Z" in first[1]["_error"]
    assert first[1]["_event_time"] is None  # a dead letter never moves a watermark
    # re-sends in later batches are still compared (not late) and dropped
    resent = run(proc, records(3, [normal(5, "a"), normal(6, "b"), normal(7, "c")]))
    assert [(r["id"], r["_late"]) for r in resent] == [("c", False)]


def test_a_burst_of_far_future_events_all_go_to_the_dlq(tmp_path: Path) -> None:
    proc = processor(tmp_path)
    burst = [(f"f{i}", FUTURE + timedelta(days=i), NOW) for i in range(50)]
    got = run(proc, records(0, [normal(0, "a"), *burst, normal(1, "a")]))
    assert sum(r["_error"] is not None for r in got) == 50
    assert [r["id"] for r in got if r["_error"] is None] == ["a"]  # the repeat was dropped
    later = run(proc, records(52, [normal(9, "a"), normal(10, "new")]))
    assert [(r["id"], r["_late"]) for r in later] == [("new", False)]


def test_a_far_past_event_is_late_kept_and_leaves_dedup_alone(tmp_path: Path) -> None:
    proc = processor(tmp_path)
    run(proc, records(0, [normal(0, "a"), normal(1, "b")]))
    got = run(proc, records(2, [("old", PAST, NOW), normal(2, "a"), ("old", PAST, NOW)]))
    # the old event and its repeat: late, both kept, not compared; the re-send of a: dropped
    assert [(r["id"], r["_late"], r["_error"]) for r in got] == [
        ("old", True, None),
        ("old", True, None),
    ]


def test_a_burst_of_far_past_events_is_late_kept_and_counted(tmp_path: Path) -> None:
    proc = processor(tmp_path)
    run(proc, records(0, [normal(0, "a")]))
    burst = [(f"p{i % 10}", PAST + timedelta(seconds=i), NOW) for i in range(40)]
    got = run(proc, records(1, [*burst, normal(1, "a")]))
    assert len(got) == 40 and all(r["_late"] and r["_error"] is None for r in got)
    later = run(proc, records(42, [normal(3, "a"), normal(4, "b")]))
    assert [(r["id"], r["_late"]) for r in later] == [("b", False)]


def test_a_replayed_range_decides_the_same(tmp_path: Path) -> None:
    proc = processor(tmp_path)
    run(proc, records(0, [normal(0, "a")]))
    batch = records(1, [("x", FUTURE, NOW), normal(1, "a"), normal(2, "b"), ("y", PAST, NOW)])
    assert run(proc, batch) == run(proc, batch)


def test_the_rule_holds_without_dedup_too(tmp_path: Path) -> None:
    """A joined source without dedup: the record must still stay out of the watermark."""
    got = run(processor(tmp_path, dedup=False), records(0, [("x", FUTURE, NOW), normal(0, "a")]))
    assert got[0]["_error"] is not None and got[0]["_event_time"] is None
    assert got[1]["_error"] is None and got[1]["_event_time"] is not None


def test_unix_seconds_event_times_are_judged_too(tmp_path: Path) -> None:
    got = run(
        processor(tmp_path, ts_type="int"),
        records(0, [("x", int(FUTURE.timestamp()), NOW), ("y", int(NOW.timestamp()), NOW)]),
    )
    assert [r["_error"] is not None for r in got] == [True, False]


def test_null_turns_the_check_off(tmp_path: Path) -> None:
    proc = processor(tmp_path, skew=None)
    got = run(proc, records(0, [normal(0, "a"), ("x", FUTURE, NOW)]))
    assert all(r["_error"] is None for r in got)
    later = run(proc, records(2, [normal(5, "a")]))  # the 2099 event made it late: kept
    assert [(r["id"], r["_late"]) for r in later] == [("a", True)]


# ---------------------------------------------------------------------------- the setting


def test_the_default_is_five_minutes() -> None:
    assert Schema.model_validate({"fields": FIELDS}).max_future_skew == timedelta(minutes=5)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("30s", timedelta(seconds=30)), ("0s", timedelta(0)), ("7d", timedelta(days=7)), (None, None)],
)
def test_accepted_values(value: object, expected: timedelta | None) -> None:
    schema = Schema.model_validate({"fields": FIELDS, "max_future_skew": value})
    assert schema.max_future_skew == expected
    assert Schema.model_validate(schema.model_dump(by_alias=True)) == schema


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "8d",
            "source.schema.max_future_skew: 8d exceeds the 7d maximum (no dedup or join window "
            "is longer); write null to turn the check off",
        ),
        (
            "soon",
            "source.schema.max_future_skew: 'soon' is not a duration: use a number and a unit "
            "(ms, s, m, h, d), e.g. '30s', '1h', '7d'",
        ),
        (
            False,
            "source.schema.max_future_skew: expected a duration such as '30s', '1h' or '7d', "
            "got a boolean",
        ),
    ],
)
def test_refused_values_name_the_field(value: object, message: str) -> None:
    doc = copy.deepcopy(BASE)
    doc["source"]["schema"]["max_future_skew"] = value
    with pytest.raises(ConfigError) as info:
        parse_pipeline(doc)
    assert info.value.problems == [message]


def test_each_joined_source_has_its_own_setting() -> None:
    doc = read_document(EXAMPLES / "orders-users-join.yaml")
    doc["sources"][1]["schema"]["max_future_skew"] = "1y"
    with pytest.raises(ConfigError) as info:
        parse_pipeline(doc)
    assert info.value.problems[0].startswith("sources[1].schema.max_future_skew: '1y'")
