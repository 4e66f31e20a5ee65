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
