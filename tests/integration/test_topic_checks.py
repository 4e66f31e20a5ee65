"""Start-up checks of the Kafka source: a missing or invalid topic fails at the broker's first
answer, in the broker's words, instead of waiting out `connect_timeout` as if unreachable.

The bundled broker (tansu) answers a metadata request for a missing topic at once with
UNKNOWN_TOPIC_OR_PART and does not create the topic; an invalid name gets TOPIC_EXCEPTION.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from streamsift.sources.errors import SourceError, SourceUnavailable
from streamsift.sources.kafka import KafkaStreamReader
from streamsift.sources.kafka_spec import KafkaReadSpec

pytestmark = pytest.mark.integration


def check(broker, topic: str) -> SourceError:
    spec = KafkaReadSpec(broker.bootstrap_servers, topic, "g-topic-checks", metadata_timeout_s=5)
    reader = KafkaStreamReader(spec, processor=None)  # type: ignore[arg-type]
    try:
        with pytest.raises(SourceError) as info:
            reader.initialOffset()
    finally:
        reader.stop()
    return info.value


def test_missing_topic_fails_with_the_brokers_answer(broker, unique_name):
    error = check(broker, unique_name)
    assert not isinstance(error, SourceUnavailable)
    text = str(error)
    assert f"'{unique_name}'" in text and broker.bootstrap_servers in text
    assert "UNKNOWN_TOPIC_OR_PART" in text and "does not exist" in text
    # the question did not create it (tansu does not auto-create on metadata requests)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    assert unique_name not in admin.list_topics(timeout=10).topics


def test_invalid_topic_name_is_not_reported_as_an_unreachable_broker(broker):
    error = check(broker, "not a valid name!")
    assert not isinstance(error, SourceUnavailable)
    text = str(error)
    assert "TOPIC_EXCEPTION" in text and "did not answer" not in text
