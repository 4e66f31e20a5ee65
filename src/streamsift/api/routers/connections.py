"""Connection probes for the UI: reach a Kafka cluster or a ClickHouse, list what is there."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from streamsift.api.deps import SettingsDep
from streamsift.api.models import (
    ClickHouseColumnsRequest,
    ClickHouseTestResult,
    ColumnModel,
    KafkaConnection,
    KafkaTestResult,
    TopicModel,
)
from streamsift.config.models import ClickHouseConnection
from streamsift.runtime import probes

router = APIRouter(prefix="/api/v1/connections", tags=["connections"])


@router.post("/kafka/test", summary="reach a Kafka cluster; list its brokers and topics")
async def kafka_test(body: KafkaConnection, settings: SettingsDep) -> KafkaTestResult:
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
    md = await run_in_threadpool(
        probes.kafka_metadata, body.bootstrap_servers, body.security, settings.probe_timeout_s
    )
    return [TopicModel(name=t.name, partitions=t.partitions) for t in md.topics]


@router.post("/clickhouse/test", summary="reach a ClickHouse; its version and tables")
async def clickhouse_test(
    body: ClickHouseConnection, settings: SettingsDep
) -> ClickHouseTestResult:
    info = await run_in_threadpool(probes.clickhouse_info, body, settings.probe_timeout_s)
    return ClickHouseTestResult(
        version=info.version, database=info.database, tables=list(info.tables)
    )


@router.post("/clickhouse/columns", summary="the columns of a ClickHouse table")
async def clickhouse_columns(
    body: ClickHouseColumnsRequest, settings: SettingsDep
) -> list[ColumnModel]:
    columns = await run_in_threadpool(
        probes.clickhouse_columns, body.connection(), body.table, settings.probe_timeout_s
    )
    return [ColumnModel(name=c.name, type=c.type) for c in columns]
