"""The bundled broker's process handling."""

from __future__ import annotations

import pytest

from streamsift.embedded.broker import Broker

pytestmark = pytest.mark.integration


def test_starting_a_running_broker_again_starts_no_second_process():
    broker = Broker()
    with broker.start() as again:  # __enter__ starts it too
        assert again is broker
        first = broker.process
        assert first is not None and first.poll() is None
        assert broker.start().process is first
    assert first.poll() is not None  # stopped with the block: nothing left running
