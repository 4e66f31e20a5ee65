"""Connection probes for the UI: reach a Kafka cluster or a ClickHouse, list what is there.

Every route here (and the sampling and inference routes, routers/schemas.py) first checks its
destination against the server's `--allow-connect` list (service/destinations.py): a host
outside it is refused with 403 before any connection is made. Failures are said by kind
(refused, timed out, TLS, not a ClickHouse, authentication): what a peer answered is never
echoed (service/authoring/probes.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from streamsift.api.deps import SettingsDep
from streamsift.api.error_responses import InvalidRequest
from streamsift.api.settings import ServiceSettings
from streamsift.config.models import ClickHouseConnection, KafkaSecurity
from streamsift.service import destinations
from streamsift.service.authoring import probes
from streamsift.wire.helpers import (
    ClickHouseColumnsRequest,
    ClickHouseTestResult,
    ColumnModel,
    KafkaConnection,
    KafkaTestResult,
    TopicModel,
)

router = APIRouter(prefix="/api/v1/connections", tags=["connections"])


async def require_allowed(settings: ServiceSettings, field: str, hosts: Iterable[str]) -> None:
    """403 naming `field` when a host is outside the server's `--allow-connect` list (names
    are resolved off the event loop)."""
    if not settings.allow_connect:
        return
    host = await run_in_threadpool(destinations.refused, settings.allow_connect, list(hosts))
    if host is not None:
        raise InvalidRequest(
            f"{field}: {host or '(no host)'} is outside this server's --allow-connect list: "
            "the connection helpers may not connect there",
            status=403,
        )


async def require_kafka_allowed(
    settings: ServiceSettings, bootstrap_servers: str, security: KafkaSecurity
) -> None:
    """The security block as a document's (no file outside the data dir, no token provider
    by module: service/document_policy.py), then the brokers, and the OIDC token endpoint
    librdkafka fetches a token from."""
    settings.document_policy().check_security(security, "security")
    await require_allowed(
        settings, "bootstrap_servers", destinations.kafka_hosts(bootstrap_servers)
    )
    oauth = getattr(security, "oauthbearer", None)
    url = getattr(oauth, "token_endpoint_url", None)
    if url:
        await require_allowed(
            settings, "security.oauthbearer.token_endpoint_url", [destinations.url_host(url)]
        )


async def require_clickhouse_allowed(settings: ServiceSettings, conn: ClickHouseConnection) -> None:
    if not conn.embedded:
        await require_allowed(settings, "host", [conn.host or ""])


def service_path(settings: ServiceSettings, conn: ClickHouseConnection) -> ClickHouseConnection:
    """An embedded ClickHouse's directory as the service means it (a relative path is the
    data dir's), refused outside the data dir; a server connection as it is."""
    if not conn.embedded:
        return conn
    assert conn.path is not None
    policy = settings.document_policy()
    policy.check_path("path", conn.path)
    return conn.model_copy(update={"path": policy.anchor(conn.path)})


@router.post("/kafka/test", summary="reach a Kafka cluster; list its brokers and topics")
async def kafka_test(body: KafkaConnection, settings: SettingsDep) -> KafkaTestResult:
    await require_kafka_allowed(settings, body.bootstrap_servers, body.security)
    md = await run_in_threadpool(
        probes.kafka_metadata, body.bootstrap_servers, body.security, settings.probe_timeout_s
    )
    return KafkaTestResult(
        brokers=list(md.brokers),
        topics=[TopicModel(name=t.name, partitions=t.partitions) for t in md.topics],
    )


@router.post("/kafka/topics", summary="the topics of a Kafka cluster, with their partitions")
async def kafka_topics(body: KafkaConnection, settings: SettingsDep) -> list[TopicModel]:
    # A POST, like the test: the connection may hold a password, which has no place in a URL.
    await require_kafka_allowed(settings, body.bootstrap_servers, body.security)
    md = await run_in_threadpool(
        probes.kafka_metadata, body.bootstrap_servers, body.security, settings.probe_timeout_s
    )
    return [TopicModel(name=t.name, partitions=t.partitions) for t in md.topics]


@router.post("/clickhouse/test", summary="reach a ClickHouse; its version and tables")
async def clickhouse_test(
    body: ClickHouseConnection, settings: SettingsDep
) -> ClickHouseTestResult:
    await require_clickhouse_allowed(settings, body)
    conn = service_path(settings, body)
    info = await run_in_threadpool(probes.clickhouse_info, conn, settings.probe_timeout_s)
    return ClickHouseTestResult(
        version=info.version, database=info.database, tables=list(info.tables)
    )


@router.post("/clickhouse/columns", summary="the columns of a ClickHouse table")
async def clickhouse_columns(
    body: ClickHouseColumnsRequest, settings: SettingsDep
) -> list[ColumnModel]:
    conn = service_path(settings, body.connection())
    await require_clickhouse_allowed(settings, conn)
    columns = await run_in_threadpool(
        probes.clickhouse_columns, conn, body.table, settings.probe_timeout_s
    )
    return [ColumnModel(name=c.name, type=c.type) for c in columns]
