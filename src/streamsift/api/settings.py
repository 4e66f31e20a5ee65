"""What `streamsift serve` is started with: address, data directory, token, limits, and what
a document or request may reach through the service (docs/security.md)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from streamsift.config.alerts import Alerts
from streamsift.config.loader import MAX_DOCUMENT_BYTES
from streamsift.config.models import Isolation
from streamsift.service.document_policy import DocumentPolicy


class ServiceSettings(BaseModel):
    """The server's settings, validated once at start."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)  # 0: any free port (tests)
    data_dir: Path = Path(".streamsift")
    # When set, every route but the health checks needs `Authorization: Bearer <token>`.
    token: SecretStr | None = None
    # Request bodies above this are refused (413): the limit of a pipeline document.
    max_body_bytes: int = Field(default=MAX_DOCUMENT_BYTES, gt=0)
    # How long a connection probe (Kafka, ClickHouse) waits for an answer (`--probe-timeout`).
    probe_timeout_s: float = Field(default=10.0, gt=0)
    # The OTLP receiver of the service's OTLP pipelines (on `host`): None turns a transport
    # off, 0 picks a free port. `streamsift serve` passes 4318 and 4317, OTLP's own ports;
    # the receiver listens once the service has an OTLP pipeline.
    otlp_http_port: int | None = Field(default=None, ge=0, le=65535)
    otlp_grpc_port: int | None = Field(default=None, ge=0, le=65535)
    # Host header names answered besides the bound address, localhost and 127.0.0.1
    # (`--allowed-host`, e.g. the name a reverse proxy forwards): a guard against DNS rebinding.
    allowed_hosts: tuple[str, ...] = ()
    # Directories a document's paths may name besides the data dir (`--allow-path`).
    allow_paths: tuple[Path, ...] = ()
    # Where the connection helpers (probes, sampling, schema inference) may connect: hosts
    # or CIDR blocks (`--allow-connect`); empty: anywhere.
    allow_connect: tuple[str, ...] = ()
    # `spark.*` keys a document may set beyond the tuning allow-list (`--allow-spark-conf`,
    # a key or a prefix ending in `*`).
    allow_spark_conf: tuple[str, ...] = ()
    # Alert rules and channels for every pipeline (`--alerts FILE`, config/alerts.py); a
    # pipeline's own `alerts:` add to them. How often the alert watch judges the pipelines.
    alerts: Alerts | None = None
    alerts_interval_s: float = Field(default=5.0, gt=0)
    # Retries of a transient fault before a pipeline that sets none (`runtime.retry`) fails
    # (`--retry-attempts`); None: keep retrying, with capped back-off.
    retry_attempts: int | None = Field(default=None, ge=0)
    # Where pipelines run: the pipeline host (each as a query of one shared Spark application)
    # unless they ask for a process of their own; PROCESS: every one in its own (`--isolation`).
    isolation: Isolation = Isolation.HOST
    # Start the pipeline host with the server, so that the first create finds it warm.
    warm_host: bool = False
    # How often each pipeline's figures are sampled for the UI's charts (kept 24 h).
    history_interval_s: float = Field(default=10.0, ge=0.2)

    def document_policy(self) -> DocumentPolicy:
        """What a document may name through this server (service/document_policy.py)."""
        return DocumentPolicy(
            self.data_dir.resolve(),
            self.allow_paths,
            self.allow_spark_conf,
            allow_connect=self.allow_connect,
        )
