"""Range reads of the Kafka source on the real broker, with the consumer kept between reads."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from streamsift.sources.kafka import (
    KafkaPartitionRange,
    KafkaReadSpec,
    close_kept_consumers,
    fetch_range,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def topic(broker, unique_name):
    broker.create_topic(unique_name, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(300):
        producer.produce(unique_name, value=f"m{i}".encode(), partition=0)
    producer.flush(15)
    yield unique_name
    close_kept_consumers()


@pytest.mark.parametrize(
    "ranges",
    [
        [(0, 100), (100, 200), (200, 300)],  # consecutive, one kept consumer
        [(0, 100), (50, 120), (120, 121)],  # a replayed range
        [(200, 300), (0, 10), (10, 10), (10, 300)],  # backwards, empty, then the rest
    ],
)
def test_each_range_reads_exactly_its_messages(broker, topic, ranges):
    spec = KafkaReadSpec(broker.bootstrap_servers, topic, f"g-{topic}")
    for start, end in ranges:
        records = fetch_range(spec, KafkaPartitionRange(topic, 0, start, end))
        assert records.offsets == list(range(start, end))
        assert records.values == [f"m{i}".encode() for i in range(start, end)]


def test_a_consumer_that_stopped_fetching_is_replaced(broker, topic, monkeypatch):
    """A consumer that receives nothing while the range's messages exist (here: one handed
    out paused) is replaced by a fresh one after STALL_REFRESH_S; the range is read in full."""
    from confluent_kafka import Consumer, TopicPartition

    from streamsift.sources import kafka

    spec = KafkaReadSpec(broker.bootstrap_servers, topic, f"g-{topic}")
    stuck = Consumer({**kafka.FETCH_DEFAULTS, **spec.consumer_config()})
    stuck.assign([TopicPartition(topic, 0, 100)])
    stuck.pause(stuck.assignment())
    monkeypatch.setattr(kafka, "STALL_REFRESH_S", 0.5)
    monkeypatch.setattr(kafka._kept_consumers, "take", lambda _spec, _part: stuck)

    records = fetch_range(spec, KafkaPartitionRange(topic, 0, 100, 300))
    assert records.offsets == list(range(100, 300))
    assert records.values == [f"m{i}".encode() for i in range(100, 300)]
