"""Range reads of the Kafka source on the real broker, with the consumer kept between reads."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from streamsift.sources.kafka_range import KafkaPartitionRange, close_kept_consumers, fetch_range
from streamsift.sources.kafka_spec import KafkaReadSpec

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

    from streamsift.sources import kafka_range

    spec = KafkaReadSpec(broker.bootstrap_servers, topic, f"g-{topic}")
    stuck = Consumer({**kafka_range.FETCH_DEFAULTS, **spec.consumer_config()})
    stuck.assign([TopicPartition(topic, 0, 100)])
    stuck.pause(stuck.assignment())
    monkeypatch.setattr(kafka_range, "STALL_REFRESH_S", 0.5)
    monkeypatch.setattr(kafka_range._kept_consumers, "take", lambda _spec, _part: stuck)

    records = fetch_range(spec, KafkaPartitionRange(topic, 0, 100, 300))
    assert records.offsets == list(range(100, 300))
    assert records.values == [f"m{i}".encode() for i in range(100, 300)]


def test_the_background_end_probe_answers_true_ends(broker, unique_name):
    """Live planning takes the ends from the background probe: true ends on the bundled
    broker, whose high watermark under-reports them, with new messages seen without a
    planner probing itself; the probe stops with the reader."""
    from confluent_kafka import TopicPartition
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from streamsift.sources.kafka import KafkaStreamReader

    broker.create_topic(unique_name, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 50})

    def produce(counts: dict[int, int]) -> None:
        for partition, n in counts.items():
            for i in range(n):
                producer.produce(unique_name, value=f"m{i}".encode(), partition=partition)
        producer.flush(15)

    produce({0: 120, 1: 7})
    reader = KafkaStreamReader(KafkaReadSpec(broker.bootstrap_servers, unique_name, "g"), None)  # type: ignore[arg-type]
    try:
        first = reader.latestOffset({}, ReadAllAvailable())  # probes itself, starts the watcher
        assert first == {f"{unique_name}/0": 120, f"{unique_name}/1": 7}
        _, high = reader._consumer().get_watermark_offsets(
            TopicPartition(unique_name, 0), timeout=10
        )
        assert high < 120  # what makes the probe needed on this broker
        produce({0: 30, 1: 3})
        expected = {f"{unique_name}/0": 150, f"{unique_name}/1": 10}
        deadline = time.monotonic() + 10
        while (watched := reader._watcher.ends()) != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watched == expected
        answer = reader.latestOffset(first, ReadAllAvailable())
        assert answer == expected and list(answer) == sorted(answer)
        watcher = reader._watcher
    finally:
        reader.stop()
    assert not watcher._thread.is_alive()


def test_an_idle_wait_ends_with_new_data_or_when_woken(broker, unique_name, tmp_path):
    """A live query with nothing new waits for news (`idle_wait_s`): a message produced
    during the wait ends it with the new end; a stopping run (its wake file present) ends it
    with nothing new, long before the wait is over."""
    import threading

    from pyspark.sql.streaming.datasource import ReadAllAvailable

    from streamsift.sources.kafka import KafkaStreamReader

    broker.create_topic(unique_name, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce(unique_name, value=b"first", partition=0)
    producer.flush(15)
    wake = tmp_path / "stopping"
    spec = KafkaReadSpec(
        broker.bootstrap_servers, unique_name, "g", idle_wait_s=120.0, wake_file=str(wake)
    )
    reader = KafkaStreamReader(spec, None)  # type: ignore[arg-type]
    key = f"{unique_name}/0"
    try:
        start = reader.latestOffset({}, ReadAllAvailable())
        assert start == {key: 1}
        answers: list[dict[str, int]] = []
        waiting = threading.Thread(
            target=lambda: answers.append(reader.latestOffset(start, ReadAllAvailable()))
        )
        waiting.start()
        time.sleep(1.0)
        assert not answers  # nothing new: still waiting
        producer.produce(unique_name, value=b"second", partition=0)
        producer.flush(15)
        waiting.join(30)
        assert answers == [{key: 2}]

        woken = threading.Thread(
            target=lambda: answers.append(reader.latestOffset({key: 2}, ReadAllAvailable()))
        )
        woken.start()
        time.sleep(1.0)
        assert len(answers) == 1
        wake.touch()
        woken.join(30)
        assert not woken.is_alive() and answers[1] == {key: 2}
    finally:
        reader.stop()
