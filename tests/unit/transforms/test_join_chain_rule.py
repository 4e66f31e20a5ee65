"""A chain's later `latest` step (transforms/join/latest*.py), without Spark: its left records
(the previous step's rows) may arrive behind the watermark, so it keeps right versions
`slack` longer; the rows a step hands to the next carry their left record's time."""

from __future__ import annotations

from datetime import datetime, timezone

from streamsift.transforms.join.latest import LatestJoinProcessor, LatestRule
from streamsift.transforms.join.latest_rule import Record, Windows, pick, step

M = 60_000_000  # a minute in µs
W = Windows(left_us=60 * M, right_us=30 * M)
VERSIONS = (Record(0, 0, 1, "v1"), Record(10 * M, 0, 2, "v2"), Record(20 * M, 0, 3, "v3"))


def test_without_slack_a_left_record_behind_the_watermark_would_miss_its_version():
    late_left = Record(12 * M, 0, 9, "L")  # the previous step made it after the watermark
    assert pick(late_left, VERSIONS, W).payload == "v2"  # the version current at its time
    pruned = step(VERSIONS, (), [], [], 25 * M, W).rights
    assert [r.payload for r in pruned] == ["v3"]  # a single join keeps only v3 ...
    assert step(pruned, (), [], [late_left], 25 * M, W).matched[0][1].payload == "v3"  # wrong
    slack = Windows(W.left_us, W.right_us, slack_us=15 * M)
    kept = step(VERSIONS, (), [], [], 25 * M, slack)
    assert [r.payload for r in kept.rights] == ["v2", "v3"]  # ... a chain step v2 as well
    assert kept.wake_us == 20 * M + 30 * M + 15 * M
    assert step(kept.rights, (), [], [late_left], 25 * M, slack).matched[0][1].payload == "v2"


def test_a_left_record_past_its_window_with_no_version_expires_at_once():
    s = step((), (), [], [Record(0, 0, 1, "L")], 90 * M, W)
    assert s.expired == (Record(0, 0, 1, "L"),) and s.lefts == ()


def test_rows_for_the_next_step_carry_the_left_time_and_an_event_time_not_behind_the_watermark():
    processor = LatestJoinProcessor(LatestRule(W), left_outer=True, feeds_next=True)
    early = processor._row(Record(5 * M, 0, 1, "{}"), "{}", 0, 7, watermark_ms=60 * 60_000)
    assert early._tl == 5 * M
    assert early._event_time == datetime(1970, 1, 1, 1, 0, tzinfo=timezone.utc)  # watermark
    on_time = processor._row(Record(90 * M + 1, 0, 2, "{}"), None, -1, -1, watermark_ms=0)
    assert on_time._event_time == datetime(1970, 1, 1, 1, 30, 0, 1, tzinfo=timezone.utc)
    single = LatestJoinProcessor(LatestRule(W), left_outer=True)._row(
        Record(5 * M, 0, 1, "{}"), "{}", 0, 7, watermark_ms=0
    )
    assert set(single.asDict()) == {"_lp", "_rp", "_rpartition", "_roffset"}  # as before
