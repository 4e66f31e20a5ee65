"""Reading messages back by position (sources/fetch.py): how wanted offsets become reads, and
that a Kafka that does not answer fails the read (transient) instead of returning less."""

from __future__ import annotations

import pytest

from streamsift.embedded.broker import free_port
from streamsift.sources.errors import SourceUnavailable
from streamsift.sources.fetch import Stretch, fetch_messages, read_plan
from streamsift.sources.kafka_spec import KafkaReadSpec


def test_offsets_are_grouped_per_partition_in_order_one_stretch_each():
    plan = read_plan([("t", 1, 7), ("t", 0, 9), ("t", 1, 3), ("t", 0, 2), ("t", 0, 9)])
    assert plan == [
        Stretch("t", 0, 2, 9, frozenset({2, 9})),
        Stretch("t", 1, 3, 7, frozenset({3, 7})),
    ]


def test_offsets_far_apart_are_read_as_separate_stretches():
    plan = read_plan([("t", 0, 0), ("t", 0, 5), ("t", 0, 106), ("t", 0, 206)], max_gap=100)
    assert [(s.first, s.last, sorted(s.wanted)) for s in plan] == [
        (0, 5, [0, 5]),
        (106, 206, [106, 206]),  # a gap of exactly max_gap is read through
    ]


def test_topics_are_kept_apart_and_nothing_wanted_reads_nothing():
    plan = read_plan([("b", 0, 1), ("a", 0, 1)])
    assert [(s.topic, s.partition) for s in plan] == [("a", 0), ("b", 0)]
    assert read_plan([]) == []
    spec = KafkaReadSpec(f"127.0.0.1:{free_port()}", "t", "g", metadata_timeout_s=0.5)
    assert fetch_messages(spec, []) == {}  # no consumer, no connection


def test_a_kafka_that_does_not_answer_is_a_transient_failure():
    spec = KafkaReadSpec(f"127.0.0.1:{free_port()}", "t", "g", metadata_timeout_s=1.0)
    with pytest.raises(SourceUnavailable, match="did not answer within 1s"):
        fetch_messages(spec, [("t", 0, 5)])
