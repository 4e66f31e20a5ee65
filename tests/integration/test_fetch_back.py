"""Refused rows' messages read back from the real broker by position (sources/fetch.py)."""

from __future__ import annotations

import pytest

from streamsift.sources.fetch import fetch_messages
from streamsift.sources.kafka_spec import KafkaReadSpec

pytestmark = pytest.mark.integration


def test_messages_are_read_back_byte_for_byte_from_several_partitions(
    broker, unique_name, produce_messages
):
    broker.create_topic(unique_name, 2)
    sent = [(f"k{i}".encode(), f'{{"i": {i}}}'.encode()) for i in range(300)]
    sent[150] = (None, None)  # a tombstone: no key, no value
    where = produce_messages(unique_name, sent)
    wanted = [0, 7, 150, 151, 299]
    spec = KafkaReadSpec(broker.bootstrap_servers, unique_name, "refetch-test")

    got = fetch_messages(spec, [(unique_name, *where[i]) for i in wanted])

    assert len(got) == len(wanted)
    for i in wanted:
        message = got[(unique_name, *where[i])]
        assert message is not None
        assert (message.key, message.value) == sent[i], i
