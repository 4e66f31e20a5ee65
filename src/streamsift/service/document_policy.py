"""What a pipeline document may do when it arrives through the service, not the CLI.

The CLI runs the user's own files, so a document may name any path, any Spark setting and any
importable token provider there. Through `streamsift serve`, a document comes from an API
client (or a GlassFlow file someone uploaded), so it must not become code or reach outside
the data: every path it names resolves inside the server's data dir or a directory the
operator allowed (`--allow-path`), after `..` and symbolic links; its Spark settings are
tuning keys from an allow-list the operator may widen (`--allow-spark-conf`); its Spark
master is local, or the one the server was started with; its Kafka properties load no
library; its OAUTHBEARER token provider is `aws_msk_iam` or one the operator registered by
name; its alerts go to http(s) URLs and SMTP servers inside the operator's `--allow-connect`
list, when there is one (the server itself sends them). A relative path in such a document
is relative to the data dir: the service makes it absolute when it stores the document.
docs/security.md lists the rules and the settings.

A breach is a `ConfigError` naming the field (HTTP 422), like any invalid document.
"""

from __future__ import annotations

import copy
import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from streamsift.config.alerts import Alerts
from streamsift.config.errors import ConfigError
from streamsift.config.kafka_properties import AWS_MSK_IAM
from streamsift.config.kafka_security import KafkaSecurity
from streamsift.config.models import Pipeline
from streamsift.config.secrets import MASK
from streamsift.config.source import KafkaSource
from streamsift.service import destinations
from streamsift.sources.kafka_auth import (
    PROVIDERS_ENV,
    REGISTERED_ONLY_ENV,
    registered_providers,
)
from streamsift.spark_host.session import MASTER_ENV, is_local_master

# Spark settings a document may set through the service: tuning that names no class, no
# file, no command line and no Python. Each entry is a key or a prefix ending in `*`.
SPARK_CONF_ALLOWED = (
    "spark.sql.shuffle.partitions",
    "spark.default.parallelism",
    "spark.sql.adaptive.enabled",
    "spark.sql.session.timeZone",
    "spark.sql.execution.arrow.maxRecordsPerBatch",
    "spark.sql.streaming.noDataMicroBatches.enabled",
    "spark.sql.streaming.minBatchesToRetain",
    "spark.sql.streaming.stateStore.minDeltasForSnapshot",
    "spark.sql.streaming.stateStore.maintenanceInterval",
    "spark.sql.streaming.stateStore.rocksdb.*",
    "spark.sql.streaming.join.stateFormatVersion",
    "spark.driver.memory",
    "spark.driver.cores",
    "spark.driver.maxResultSize",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.cores.max",
    "spark.memory.fraction",
    "spark.memory.storageFraction",
    "spark.network.timeout",
    "spark.executor.heartbeatInterval",
    "spark.locality.wait",
    "spark.task.maxFailures",
)
# Even under an allowed prefix, keys that name something to load or run.
_LOADS_CODE = ("class", "classes", "plugins", "extensions", "jars", "javaoptions", "path")

# librdkafka properties that load a shared library or name a callback.
_LOADING_PROPERTIES = frozenset(
    {"plugin.library.paths", "ssl.engine.location", "ssl.engine.id", "ssl_engine_callback_data"}
)


@dataclass(frozen=True)
class DocumentPolicy:
    """The service's rules for documents; `check` raises a ConfigError naming each breach."""

    data_dir: Path
    allow_paths: tuple[Path, ...] = ()
    allow_spark_conf: tuple[str, ...] = ()
    # where a document's alerts may be sent (`--allow-connect`); empty: anywhere
    allow_connect: tuple[str, ...] = ()

    @property
    def roots(self) -> tuple[Path, ...]:
        """The directories a document's paths may lie in (resolved)."""
        return tuple(p.resolve() for p in (self.data_dir, *self.allow_paths))

    def check(self, pipeline: Pipeline) -> None:
        _refuse(self.problems(pipeline))

    def problems(self, pipeline: Pipeline) -> Iterator[str]:
        runtime = pipeline.runtime
        if runtime.checkpoint_dir is not None:
            yield from self._path("runtime.checkpoint_dir", runtime.checkpoint_dir)
        if runtime.state_location is not None:
            yield from self._location("runtime.state_location", runtime.state_location)
        if pipeline.sink.clickhouse.path is not None:
            yield from self._path("sink.clickhouse.path", pipeline.sink.clickhouse.path)
        yield from self._master(runtime.master)
        for key in runtime.spark_conf:
            if not self.spark_key_allowed(key):
                yield (
                    f"runtime.spark_conf: {key} is not a setting this server lets documents "
                    "set (it could load code or files); the operator can allow it with "
                    f"`streamsift serve --allow-spark-conf {key}`, or run the pipeline "
                    "with `streamsift run`"
                )
        for where, source in _sources(pipeline):
            yield from self.security_problems(source.security, f"{where}.security")
            for key, value in source.properties.items():
                yield from self._property(f"{where}.properties.{key}", key, value)
        if pipeline.alerts is not None:
            yield from self.alert_problems(pipeline.alerts, "alerts")

    def alert_problems(self, alerts: Alerts, where: str) -> Iterator[str]:
        """Alert channels the server may not send to: a URL that is not http(s), a host
        outside `--allow-connect` (a document would make the server post there)."""
        targets: list[tuple[str, str, bool]] = []  # field, URL or host, is a URL
        targets += [
            (f"{where}.webhooks[{i}].url", w.url, True) for i, w in enumerate(alerts.webhooks)
        ]
        targets += [
            (f"{where}.slack[{i}].webhook_url", s.webhook_url.get_secret_value(), True)
            for i, s in enumerate(alerts.slack)
        ]
        targets += [(f"{where}.email[{i}].host", e.host, False) for i, e in enumerate(alerts.email)]
        for field, target, is_url in targets:
            if target == MASK:  # a secret sent back masked: the stored one is checked
                continue
            host = destinations.url_host(target) if is_url else target
            if is_url and urlparse(target.strip()).scheme.lower() not in ("http", "https"):
                yield f"{field}: only http and https URLs can receive alerts"
            elif self.allow_connect and destinations.refused(self.allow_connect, [host]):
                shown = "its host" if field.endswith("webhook_url") else host
                yield (
                    f"{field}: {shown} is outside this server's --allow-connect list: "
                    "alerts may not be sent there"
                )

    def security_problems(self, security: KafkaSecurity, where: str) -> Iterator[str]:
        """A Kafka security block's breaches: paths outside the roots, a provider by module."""
        files = {
            "ca_file": security.ca_file,
            "client_cert_file": security.client_cert_file,
            "client_key_file": security.client_key_file,
        }
        if security.kerberos is not None:
            files["kerberos.keytab"] = security.kerberos.keytab
            files["kerberos.krb5_config"] = security.kerberos.krb5_config
        for name, path in files.items():
            if path is not None:
                yield from self._path(f"{where}.{name}", path)
        oauth = security.oauthbearer
        if oauth is not None and oauth.token_provider is not None:
            name = oauth.token_provider
            if name != AWS_MSK_IAM and name not in registered_providers():
                yield (
                    f"{where}.oauthbearer.token_provider: {name!r} is not a token provider "
                    "this server knows: name aws_msk_iam or one the operator registered "
                    "(streamsift serve --token-provider NAME=MODULE:FUNCTION); a document "
                    "sent to the service cannot name code to run"
                )

    def check_security(self, security: KafkaSecurity, where: str = "security") -> None:
        _refuse(self.security_problems(security, where))

    def check_path(self, field: str, path: Path) -> None:
        """A ConfigError naming `field` unless `path` lies in a root (see `inside`)."""
        _refuse(self._path(field, path))

    def spark_key_allowed(self, key: str) -> bool:
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in self.allow_spark_conf):
            return True
        last = key.rsplit(".", 1)[-1].lower()
        if any(last.endswith(word) for word in _LOADS_CODE):
            return False
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in SPARK_CONF_ALLOWED)

    def inside(self, path: Path) -> bool:
        """Whether `path` lies in a root once anchored (see `anchor`) and `..` and symbolic
        links are resolved."""
        resolved = Path(os.path.abspath(self.anchor(path))).resolve()
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def anchor(self, path: Path) -> Path:
        """A document's path as the service means it: a relative path is inside the data dir
        (the service's documents name places in the service's space, not in the working
        directory of whoever started the server)."""
        path = Path(path)
        return path if path.is_absolute() else self.data_dir.resolve() / path

    def anchored_document(self, doc: dict[str, Any]) -> dict[str, Any]:
        """`doc` (streamsift's format) with each relative path it names made absolute by
        `anchor`, so the server and the workers it starts read the same places. Values that
        are not paths are left for validation to name."""
        doc = copy.deepcopy(doc)
        runtime = _mapping(doc.get("runtime"))
        self._anchor_key(runtime, "checkpoint_dir")
        location = runtime.get("state_location")
        if isinstance(location, str) and urlparse(location).scheme == "":
            self._anchor_key(runtime, "state_location")
        self._anchor_key(_mapping(_mapping(doc.get("sink")).get("clickhouse")), "path")
        sources = [doc.get("source")] + list(_sequence(doc.get("sources")))
        for source in (_mapping(s) for s in sources):
            security = _mapping(source.get("security"))
            for key in ("ca_file", "client_cert_file", "client_key_file"):
                self._anchor_key(security, key)
            for key in ("keytab", "krb5_config"):
                self._anchor_key(_mapping(security.get("kerberos")), key)
            properties = _mapping(source.get("properties"))
            for key in [k for k in properties if isinstance(k, str) and k.endswith(".location")]:
                self._anchor_key(properties, key)
        return doc

    def _anchor_key(self, mapping: dict[str, Any], key: str) -> None:
        value = mapping.get(key)
        if isinstance(value, str) and value.strip():
            mapping[key] = str(self.anchor(Path(value)))

    def _path(self, field: str, path: Path) -> Iterator[str]:
        if not self.inside(path):
            roots = ", ".join(str(r) for r in self.roots)
            yield (
                f"{field}: {path} is outside the directories this server lets documents use "
                f"({roots}); use a path inside its data dir, or the operator can allow a "
                "directory with `streamsift serve --allow-path DIR`"
            )

    def _location(self, field: str, location: str) -> Iterator[str]:
        """A local directory or `file:` URL is a path; a remote store's URL (s3://, gs://,
        hdfs://, ...) is not on this host."""
        parsed = urlparse(location)
        if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:  # `C:` is no scheme
            yield from self._path(field, Path(parsed.path if parsed.scheme == "file" else location))

    def _master(self, master: str | None) -> Iterator[str]:
        if master is None or is_local_master(master):
            return
        if master == os.environ.get(MASTER_ENV):
            return
        yield (
            f"runtime.master: {master} is not this server's Spark master; through the service "
            "a pipeline runs on local[N] or on the master the server was started with "
            "(`streamsift serve --master URL`)"
        )

    def _property(self, field: str, key: str, value: str) -> Iterator[str]:
        if key in _LOADING_PROPERTIES or key.endswith("_cb"):
            yield (
                f"{field}: this librdkafka property loads code; it cannot be set through the "
                "service (run the pipeline with `streamsift run`)"
            )
        elif key.endswith(".location") and value:
            yield from self._path(field, Path(value))


def serve_registered_providers_only(entries: list[str]) -> None:
    """For `streamsift serve`: the providers it was given (`NAME=MODULE:FUNCTION`) join
    STREAMSIFT_TOKEN_PROVIDERS, and this process and the workers it starts (which inherit its
    environment) resolve registered providers only, never a module a document names."""
    given = [e for e in os.environ.get(PROVIDERS_ENV, "").split(",") if e.strip()]
    os.environ[PROVIDERS_ENV] = ",".join(given + entries)
    os.environ[REGISTERED_ONLY_ENV] = "1"


def _refuse(problems: Iterator[str]) -> None:
    """A ConfigError holding `problems`, if there are any."""
    found = list(problems)
    if found:
        raise ConfigError(found)


def _mapping(value: Any) -> dict[str, Any]:
    """`value` if it is a mapping (edited in place), else an empty one (nothing to anchor)."""
    return value if isinstance(value, dict) else {}


def _sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _sources(pipeline: Pipeline) -> Iterator[tuple[str, KafkaSource]]:
    """Each Kafka source with its place in the document (`source`, `sources[i]`)."""
    if pipeline.source_ is not None:
        yield "source", pipeline.source_
    for i, source in enumerate(pipeline.sources or ()):
        yield f"sources[{i}]", source
