"""What to read from Kafka and how to connect: the read spec and the consumers made from it.

Used on the driver (kafka.py) and on executors (kafka_range.py, fetch.py); the spec is
pickled by PySpark and sent to the executors with the data source. This module imports no
other Kafka source module, so those can all import it.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaException

from streamsift.sources.errors import SourceError
from streamsift.sources.kafka_auth import client_config, describe_security


@dataclass(frozen=True)
class KafkaReadSpec:
    """What to read and how to connect. `properties` may hold secrets: never log them."""

    bootstrap_servers: str
    topic: str
    consumer_group: str
    start_from: str = "earliest"
    properties: dict[str, str] = field(default_factory=dict)
    max_rows_per_batch: int | None = None
    metadata_timeout_s: float = 30.0  # source.connect_timeout: metadata at start-up
    read_timeout_s: float = 120.0  # source.read_timeout: a read waiting for the broker
    # A live query with nothing new waits this long for news before planning (0: never; a
    # query of several sources must not, or one idle source would hold up the others).
    idle_wait_s: float = 0.0
    wake_file: str | None = None  # present: the run is stopping, end an idle wait at once

    def consumer_config(self, **extra: Any) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.consumer_group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 10,
            "session.timeout.ms": 6000,
            "socket.connection.setup.timeout.ms": 10_000,
            "logger": _quiet_logger(),
        }
        conf.update(self.properties)
        conf.update(extra)
        return client_config(conf)

    def identity(self) -> str:
        """Tells specs apart without holding their secrets in plain text."""
        text = json.dumps(
            [self.bootstrap_servers, self.consumer_group, self.properties], sort_keys=True
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def __repr__(self) -> str:  # keep secrets out of reprs and logs
        return f"KafkaReadSpec(topic={self.topic!r}, bootstrap_servers={self.bootstrap_servers!r})"


def _quiet_logger() -> Any:
    logger = logging.getLogger("streamsift.kafka.librdkafka")
    return logger


def make_consumer(spec: KafkaReadSpec, **extra: Any) -> Consumer:
    """A consumer for `spec`; settings librdkafka refuses (e.g. a SASL mechanism this build
    lacks) are a SourceError naming the security setting, not a retry."""
    try:
        return Consumer(spec.consumer_config(**extra))
    except KafkaException as exc:
        error = exc.args[0]
        reason = error.str() if hasattr(error, "str") else str(error)
        raise SourceError(
            f"cannot make a Kafka client with {describe_security(spec.properties)}: {reason}"
        ) from None
