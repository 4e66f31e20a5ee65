"""Connection probes the UI needs before a pipeline exists: Kafka and ClickHouse.

Each probe waits a bounded time and turns what went wrong into an error of the hierarchy that
names the address: a broker that does not answer is a `TransientError`, a topic or table that
does not exist a `NotFoundError`. Secrets (SASL and ClickHouse passwords) are passed to the
clients only, never into messages or logs.

A probe says what kind of failure it met (refused, timed out, TLS, not a ClickHouse with the
HTTP status it answered, authentication refused, a ClickHouse error code), never what the peer
sent: the service may reach hosts its clients cannot, and echoing a peer's answer would let a
client read an internal service through it (SSRF read-back). The full client error goes to the
server's log at debug level. An OAUTHBEARER token provider that fails inside confluent-kafka's
`oauth_cb` (which surfaces as a bare SystemError) is a `TokenProviderFailed` naming the provider.

The embedded ClickHouse (chdb) allows one process per data directory, and a running pipeline
may hold it: probes of a `path` therefore run in a short-lived child process, so the server
never keeps the directory open.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import multiprocessing
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from streamsift.config.base import IDENTIFIER
from streamsift.config.models import ClickHouseConnection, KafkaSecurity
from streamsift.engine.errors import EmbeddedClickHouseBusy
from streamsift.errors import NotFoundError, StreamsiftError, TransientError
from streamsift.service.errors import (
    ClickHouseRefused,
    ClickHouseUnreachable,
    KafkaClientRefused,
    KafkaUnreachable,
    NotClickHouse,
    TokenProviderFailed,
)
from streamsift.sources.kafka_auth import AuthRefusals, client_config

DEFAULT_TIMEOUT_S = 10.0
MAX_SAMPLES = 100
MAX_RAW_CHARS = 10_000
_CHILD_START_S = 30.0  # a child process importing the ClickHouse client, on a busy machine
log = logging.getLogger("streamsift.probes")


# ------------------------------------------------------------------------------ Kafka


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int


@dataclass(frozen=True)
class KafkaMetadata:
    brokers: tuple[str, ...]
    topics: tuple[TopicInfo, ...]


@dataclass(frozen=True)
class SampleMessage:
    partition: int
    offset: int
    timestamp: str | None  # ISO-8601, UTC
    key: str | None
    value: Any  # the decoded JSON, or None when the message is not JSON
    raw: str | None  # the text of a message that is not JSON (cut at MAX_RAW_CHARS)
    error: str | None  # why the value could not be decoded


def _consumer(
    servers: str, security: KafkaSecurity, timeout_s: float, refusals: AuthRefusals | None = None
) -> Consumer:
    conf = client_config(
        {
            "bootstrap.servers": servers,
            "group.id": "streamsift-probe",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "socket.connection.setup.timeout.ms": max(1000, int(timeout_s * 1000)),
            "logger": logging.getLogger("streamsift.kafka.librdkafka"),
            **({"error_cb": refusals} if refusals is not None else {}),
            **security.librdkafka(),
        }
    )
    guard: _TokenGuard | None = None
    if "oauth_cb" in conf:
        guard = _TokenGuard(conf["oauth_cb"], _provider_name(security))
        guard.prefetch(str(conf.get("sasl.oauthbearer.config") or ""))
        conf["oauth_cb"] = guard
    try:
        return Consumer(conf)
    except (SystemError, KafkaException) as exc:
        if guard is not None and guard.failure is not None:
            raise guard.failure from None
        if isinstance(exc, KafkaException) and exc.args:
            raise KafkaClientRefused(
                f"the Kafka client refused the connection's settings: {exc.args[0].str()}"
            ) from None
        raise


def _provider_name(security: KafkaSecurity) -> str:
    oauth = getattr(security, "oauthbearer", None)
    return str(getattr(oauth, "token_provider", None) or "the token provider")


class _TokenGuard:
    """An `oauth_cb` around the provider's, asked for its first token before the client is made.

    confluent-kafka calls oauth_cb while it builds the client, and an exception raised there is
    lost: the constructor returns NULL (a bare SystemError) or raises librdkafka's KafkaError
    object, which is no Python exception at all and kills the thread that called (a request
    that never answers). So the first token is fetched here, where a failure is an ordinary
    `TokenProviderFailed`, and handed to the constructor's call; later refreshes (from poll,
    which re-raises a callback's exception) fail the same way.
    """

    def __init__(self, callback: Callable[[str], tuple[str, float]], name: str) -> None:
        self.callback, self.name = callback, name
        self.failure: TokenProviderFailed | None = None
        self._first: tuple[str, float] | None = None

    def prefetch(self, config: str) -> None:
        self._first = self._call(config)

    def __call__(self, config: str) -> tuple[str, float]:
        first, self._first = self._first, None
        return first if first is not None else self._call(config)

    def _call(self, config: str) -> tuple[str, float]:
        try:
            return self.callback(config)
        except Exception as exc:  # noqa: BLE001 - any provider failure is reported, by kind
            log.warning("OAUTHBEARER token provider %s failed", self.name, exc_info=True)
            self.failure = TokenProviderFailed(
                f"security.oauthbearer.token_provider: {self.name} failed to give a token: "
                f"{_provider_failure(exc)}"
            )
            raise self.failure from None


def _provider_failure(exc: Exception) -> str:
    """What a provider's exception says: our own errors in full, Python's own briefly, anything
    else (a library's error may quote a remote answer) by its type only."""
    if isinstance(exc, StreamsiftError):
        return exc.message
    if type(exc).__module__ == "builtins":
        text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return type(exc).__name__


# librdkafka reads the first 4 bytes of an answer as a size and quotes it: the peer's bytes
_RESPONSE_SIZE = re.compile(r"Invalid response size -?\d+ \([^)]*\)(: increase [\w.]+)?")


_OIDC_FAILURE = "Failed to acquire SASL OAUTHBEARER token"


def _kafka_reason(text: str) -> str:
    """librdkafka's words for a failure, without what a peer sent: the size it read from a
    non-Kafka answer, and the OIDC token endpoint's answer (librdkafka quotes its body)."""
    if _OIDC_FAILURE in text:
        return f"{text.split(_OIDC_FAILURE, 1)[0]}{_OIDC_FAILURE}: {_oidc_kind(text)}"
    return _RESPONSE_SIZE.sub("an answer that is not Kafka's", text)


def _oidc_kind(text: str) -> str:
    lowered = text.lower()
    if "connect" in lowered or "resolve" in lowered:
        return "the token endpoint could not be reached"
    if "timed out" in lowered or "timeout" in lowered:
        return "the token endpoint did not answer in time"
    if "access_token" in text:
        return "the token endpoint's answer holds no access_token"
    if "jwt" in lowered:
        return "the token endpoint's access_token is not a JWT"
    return "the token endpoint refused the client credentials or gave no usable token"


def _no_answer(
    servers: str,
    timeout_s: float,
    exc: KafkaException | None,
    security: KafkaSecurity | None = None,
    refusals: AuthRefusals | None = None,
) -> KafkaUnreachable:
    if refusals is not None and refusals.reason is not None and security is not None:
        return KafkaUnreachable(
            f"Kafka at {servers} refused the connection with {security.describe()}: "
            f"{_kafka_reason(refusals.reason)}"
        )
    reason = _kafka_reason(exc.args[0].str()) if exc is not None and exc.args else "no metadata"
    return KafkaUnreachable(f"Kafka at {servers} did not answer within {timeout_s:.0f} s: {reason}")


def kafka_metadata(
    servers: str, security: KafkaSecurity, timeout_s: float = DEFAULT_TIMEOUT_S
) -> KafkaMetadata:
    """The brokers and topics a Kafka cluster reports (internal `__` topics left out)."""
    refusals = AuthRefusals()
    consumer = _consumer(servers, security, timeout_s, refusals)
    try:
        md = consumer.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        consumer.poll(0)  # serves the error callback
        raise _no_answer(servers, timeout_s, exc, security, refusals) from None
    finally:
        consumer.close()
    brokers = tuple(sorted(f"{b.host}:{b.port}" for b in md.brokers.values()))
    topics = tuple(
        TopicInfo(name, len(t.partitions))
        for name, t in sorted(md.topics.items())
        if not name.startswith("__") and t.error is None
    )
    return KafkaMetadata(brokers, topics)


def sample_messages(
    servers: str,
    security: KafkaSecurity,
    topic: str,
    count: int,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[SampleMessage]:
    """Up to `count` messages from the start of `topic`'s partitions (no consumer group
    is joined and no offsets are committed), waiting at most `timeout_s`."""
    count = max(1, min(count, MAX_SAMPLES))
    consumer = _consumer(servers, security, timeout_s)
    try:
        partitions = _partitions(consumer, servers, topic, timeout_s)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        found: list[SampleMessage] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(found) < count and len(at_end) < len(partitions):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for msg in consumer.consume(num_messages=count - len(found), timeout=min(left, 1)):
                error = msg.error()
                if error is None:
                    found.append(_sample(msg))
                elif error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                else:
                    raise _no_answer(servers, timeout_s, KafkaException(error))
        return found[:count]
    finally:
        consumer.close()


def _partitions(consumer: Consumer, servers: str, topic: str, timeout_s: float) -> list[int]:
    try:
        md = consumer.list_topics(topic, timeout=timeout_s)
    except KafkaException as exc:
        raise _no_answer(servers, timeout_s, exc) from None
    info = md.topics.get(topic)
    if info is None or (
        info.error is not None and info.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    ):
        raise NotFoundError(f"topic '{topic}' does not exist on {servers}")
    if info.error is not None:
        raise NotFoundError(
            f"topic '{topic}' is refused by {servers}: {info.error.str().removeprefix('Broker: ')}"
        )
    return sorted(info.partitions)


def _sample(msg: Any) -> SampleMessage:
    kind, ts = msg.timestamp()
    when = (
        datetime.fromtimestamp(ts / 1000, tz=timezone.utc).isoformat() if kind and ts >= 0 else None
    )
    key = msg.key()
    raw = msg.value()
    value: Any = None
    text: str | None = None
    error: str | None = None
    if raw is None:
        error = "empty message (null value)"
    else:
        try:
            value = json.loads(raw)
        except UnicodeDecodeError:
            error = "not UTF-8 text"
            text = raw[:MAX_RAW_CHARS].decode("utf-8", "replace")
        except json.JSONDecodeError as exc:
            error = f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            text = raw[:MAX_RAW_CHARS].decode("utf-8", "replace")
    return SampleMessage(
        partition=msg.partition(),
        offset=msg.offset(),
        timestamp=when,
        key=key.decode("utf-8", "replace") if key is not None else None,
        value=value,
        raw=text,
        error=error,
    )


# ------------------------------------------------------------------------------ ClickHouse


@dataclass(frozen=True)
class ClickHouseInfo:
    version: str
    database: str
    tables: tuple[str, ...]


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: str


def clickhouse_info(
    conn: ClickHouseConnection, timeout_s: float = DEFAULT_TIMEOUT_S
) -> ClickHouseInfo:
    """The server's version and the tables of the connection's database."""
    return _run(_info, conn, timeout_s)


def clickhouse_columns(
    conn: ClickHouseConnection, table: str, timeout_s: float = DEFAULT_TIMEOUT_S
) -> list[ColumnInfo]:
    """The columns of `table` in the connection's database, in table order."""
    if not IDENTIFIER.fullmatch(table):
        raise NotFoundError(f"{table!r} is not a plain table name (letters, digits, _)")
    return _run(_columns, conn, timeout_s, table)


def _run(probe: Any, conn: ClickHouseConnection, timeout_s: float, *args: Any) -> Any:
    """Run `probe(conn, timeout_s, *args)` here for a server, in a child for an embedded path."""
    if not conn.embedded:
        return probe(conn, timeout_s, *args)
    if conn.path is None or not conn.path.is_dir():
        raise NotFoundError(f"no embedded ClickHouse at {conn.path}: the directory does not exist")
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        future = pool.submit(_in_child, probe, conn, timeout_s, *args)
        try:
            result = future.result(timeout=timeout_s + _CHILD_START_S)
        except concurrent.futures.TimeoutError:
            raise ClickHouseUnreachable(
                f"embedded ClickHouse at {conn.path} did not answer within "
                f"{timeout_s + _CHILD_START_S:.0f} s"
            ) from None
    if isinstance(result, _ChildFailure):
        raise result.error()
    return result


@dataclass(frozen=True)
class _ChildFailure:
    """An error of the hierarchy raised in the child, carried back whole (message and hint:
    exceptions with their own constructors do not survive pickling intact)."""

    cls: type[StreamsiftError]
    message: str
    hint: str | None

    def error(self) -> StreamsiftError:
        exc = self.cls.__new__(self.cls)
        StreamsiftError.__init__(exc, self.message, self.hint)
        return exc


def _in_child(probe: Any, *args: Any) -> Any:
    try:
        return probe(*args)
    except StreamsiftError as exc:
        return _ChildFailure(type(exc), exc.message, exc.hint)


def _client(conn: ClickHouseConnection, timeout_s: float) -> Any:
    from streamsift.sinks.clickhouse.client import connect
    from streamsift.sinks.errors import SinkError

    if not conn.embedded:
        return _server_client(conn, timeout_s)
    try:
        return connect(conn, connect_timeout_s=timeout_s)
    except SinkError as exc:
        raise _probe_error(conn, exc) from None


def _server_client(conn: ClickHouseConnection, timeout_s: float) -> Any:
    """A client of a ClickHouse server that waits at most `timeout_s` for each answer (the
    sink's client waits minutes for a big insert; a probe of a peer that accepts and stays
    silent must not hold a thread that long)."""
    from clickhouse_connect.driver.exceptions import ClickHouseError

    from streamsift.sinks.clickhouse.client import server_client

    try:
        return server_client(conn, timeout_s, answer_timeout_s=timeout_s)
    except ClickHouseError as exc:
        log.debug("ClickHouse probe of %s failed: %s", _where(conn), exc)
        raise server_failure(_where(conn), str(exc)) from None


def _query(client: Any, conn: ClickHouseConnection, sql: str) -> list[tuple]:
    from clickhouse_connect.driver.exceptions import ClickHouseError

    from streamsift.sinks.clickhouse.client import classify, describe

    try:
        return list(client.query(sql).result_rows)
    except ClickHouseError as exc:
        error = classify(exc, f"querying {describe(conn)}")
        assert isinstance(error, StreamsiftError)
        raise _probe_error(conn, error) from None


def _probe_error(conn: ClickHouseConnection, exc: StreamsiftError) -> StreamsiftError:
    """A sink's error in a probe's words (a sink's hints speak of checkpoints and runs)."""
    if conn.embedded:
        if "Unable to open the chdb engine" in exc.message:
            return EmbeddedClickHouseBusy(
                f"cannot open the embedded ClickHouse at {conn.path}: another process "
                "(a running pipeline?) has it open",
                "chdb allows one process per data directory: stop the pipeline first, "
                "or use a ClickHouse server",
            )
        if isinstance(exc, TransientError):
            return ClickHouseUnreachable(exc.message)
        return ClickHouseRefused(exc.message)
    log.debug("ClickHouse probe of %s:%s failed: %s", conn.host, conn.port, exc.message)
    return server_failure(_where(conn), exc.message)


def _where(conn: ClickHouseConnection) -> str:
    scheme = "https" if conn.secure else "http"
    return f"{scheme}://{conn.host}:{conn.port or (8443 if conn.secure else 8123)}"


# ClickHouse's error codes a probe names in words (others by their number only)
_CLICKHOUSE_CODES = {
    81: "database does not exist",
    192: "authentication refused: unknown user",
    193: "authentication refused: wrong password",
    194: "authentication refused: wrong password",
    497: "access denied to the user",
    516: "authentication refused: wrong user name or password",
}
_NO_NAME = (
    "name or service not known",
    "nameresolution",
    "name resolution",
    "nodename nor servname",
    "no address associated",
)
_HTTP_STATUS = re.compile(r"HTTP status (\d{3})|status (\d{3})")
_CLICKHOUSE_ERROR = re.compile(r"\bCode: (\d{1,4})\. DB::Exception")


def server_failure(where: str, text: str) -> StreamsiftError:
    """The kind of failure a ClickHouse client's error `text` tells of, in a message that holds
    nothing the peer sent: the kind, the HTTP status, a ClickHouse error code."""
    lowered = text.lower()
    code = _CLICKHOUSE_ERROR.search(text)
    status = _HTTP_STATUS.search(text)
    http_status = next((g for g in status.groups() if g), None) if status else None
    if code is not None:
        number = int(code.group(1))
        said = _CLICKHOUSE_CODES.get(number, "the statement was refused")
        return ClickHouseRefused(f"ClickHouse at {where}: {said} (error code {number})")
    if "unexpected response to server version query" in lowered:
        return NotClickHouse(
            f"{where} is not a ClickHouse: an unexpected answer to the version query "
            "(HTTP status 200)"
        )
    if http_status is not None:
        if http_status in ("401", "403"):
            return ClickHouseRefused(
                f"ClickHouse at {where}: authentication refused (HTTP status {http_status})"
            )
        if http_status in ("502", "503", "504"):
            return ClickHouseUnreachable(
                f"{where} answered HTTP status {http_status}: busy, or a proxy without its server"
            )
        return NotClickHouse(
            f"{where} is not a ClickHouse, or not its HTTP interface: it answered "
            f"HTTP status {http_status}"
        )
    if "connection refused" in lowered:
        return ClickHouseUnreachable(f"{where} refused the connection")
    if any(w in lowered for w in _NO_NAME):
        return ClickHouseUnreachable(f"the host of {where} does not resolve")
    if any(w in lowered for w in ("sslerror", "[ssl", "ssl:", "certificate verify")):
        why = "its certificate is not trusted" if "certificate" in lowered else "no TLS answer"
        return ClickHouseUnreachable(
            f"the TLS handshake with {where} failed: {why}",
            "is it ClickHouse's HTTPS port? (secure, skip_certificate_verification)",
        )
    if "timed out" in lowered or "timeout" in lowered:
        return ClickHouseUnreachable(f"{where} did not answer in time")
    if any(
        w in lowered
        for w in (
            "badstatusline",
            "remotedisconnected",
            "protocolerror",
            "connection aborted",
            "connection reset",
        )
    ):
        return NotClickHouse(f"{where} is not a ClickHouse: its answer is not HTTP")
    return ClickHouseUnreachable(f"could not reach ClickHouse at {where}")


_VERSION = re.compile(r"\d{1,4}(\.\d{1,6}){1,4}(-[A-Za-z0-9.]{1,32})?")


def _info(conn: ClickHouseConnection, timeout_s: float) -> ClickHouseInfo:
    client = _client(conn, timeout_s)
    version = _query(client, conn, "SELECT version()")[0][0]
    if not _VERSION.fullmatch(str(version)):  # a peer that mimics an answer is still no server
        raise NotClickHouse(f"{describe_server(conn)} is not a ClickHouse: no version number")
    rows = _query(
        client,
        conn,
        "SELECT name FROM system.tables WHERE database = "
        f"'{conn.database}' AND NOT is_temporary ORDER BY name",
    )
    return ClickHouseInfo(str(version), conn.database, tuple(r[0] for r in rows))


def describe_server(conn: ClickHouseConnection) -> str:
    return f"embedded ClickHouse at {conn.path}" if conn.embedded else _where(conn)


def _columns(conn: ClickHouseConnection, timeout_s: float, table: str) -> list[ColumnInfo]:
    client = _client(conn, timeout_s)
    rows = _query(
        client,
        conn,
        "SELECT name, type FROM system.columns WHERE database = "
        f"'{conn.database}' AND table = '{table}' ORDER BY position",
    )
    if not rows:
        raise NotFoundError(f"table {conn.database}.{table} does not exist")
    return [ColumnInfo(name, type_) for name, type_ in rows]
