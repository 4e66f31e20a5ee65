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
        [(0, 100), (100, 200), (200, 300)],  # consecutive: the kept consumer goes on
        [(0, 100), (50, 120), (120, 121)],  # a replayed range: the consumer is re-assigned
        [(200, 300), (0, 10), (10, 10), (10, 300)],  # backwards, empty, then the rest
    ],
)
def test_each_range_reads_exactly_its_messages(broker, topic, ranges):
    spec = KafkaReadSpec(broker.bootstrap_servers, topic, f"g-{topic}")
    for start, end in ranges:
        records = fetch_range(spec, KafkaPartitionRange(topic, 0, start, end))
        assert records.offsets == list(range(start, end))
        assert records.values == [f"m{i}".encode() for i in range(start, end)]


def test_a_kept_consumer_that_stopped_fetching_is_replaced(broker, topic, monkeypatch):
    """A consumer that receives nothing while the range's messages exist (here: paused) is
    replaced by a fresh one after STALL_REFRESH_S, and the range is read in full."""
    from streamsift.sources import kafka

    monkeypatch.setattr(kafka, "STALL_REFRESH_S", 0.5)
    spec = KafkaReadSpec(broker.bootstrap_servers, topic, f"g-{topic}")
    fetch_range(spec, KafkaPartitionRange(topic, 0, 0, 100))
    ((consumer, position, _),) = kafka._read_ahead._kept.values()
    assert position == 100
    consumer.pause(consumer.assignment())
    drained = consumer.consume(1000, 1.0)  # what it had fetched ahead is gone too
    assert all(m.offset() < 200 for m in drained if m.error() is None)

    records = fetch_range(spec, KafkaPartitionRange(topic, 0, 100, 300))
    assert records.offsets == list(range(100, 300))
