"""What the web UI asks the service before a pipeline exists: the defaults that fit this
server (its brokers, its ClickHouse destinations, the table names and pipeline names taken),
what deploying into a ClickHouse would meet, an uploaded document's missing topics, and the
CREATE TABLE a document runs. Answers in the product's words; secrets never leave."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from streamsift.config.models import Pipeline
from streamsift.config.sink import ClickHouseConnection
from streamsift.errors import StreamsiftError
from streamsift.service.authoring import probes
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from streamsift.sinks.clickhouse.ddl import create_table_sql, quote

log = logging.getLogger(__name__)

ACTIVE = (State.RUNNING, State.RETRYING, State.CREATED, State.RESUMING)


@dataclass(frozen=True)
class Known:
    """What this server's pipelines use, the active ones first."""

    bootstrap_servers: list[str] = field(default_factory=list)
    embedded_paths: dict[str, list[str]] = field(default_factory=dict)  # path -> pipelines
    servers: list[ClickHouseConnection] = field(default_factory=list)
    tables: list[tuple[str, str]] = field(default_factory=list)  # (table, pipeline)
    pipelines: list[str] = field(default_factory=list)


def known(service: PipelineService) -> Known:
    """Brokers, ClickHouse destinations and tables of the service's pipelines."""
    records = sorted(
        service.list(), key=lambda r: (r.state not in ACTIVE, -r.updated_at.timestamp())
    )
    out = Known(pipelines=sorted(r.id for r in records))
    for record in records:
        try:
            pipeline = service.pipeline(record.id)
        except StreamsiftError as exc:  # deleted meanwhile, or a stored document gone bad
            log.debug("ui defaults: %s skipped: %s", record.id, exc)
            continue
        for src in pipeline.inputs:
            servers = getattr(src, "bootstrap_servers", None)
            if servers and servers not in out.bootstrap_servers:
                out.bootstrap_servers.append(servers)
        conn = pipeline.sink.clickhouse
        if conn.embedded:
            assert conn.path is not None
            out.embedded_paths.setdefault(str(conn.path), []).append(record.id)
        elif all(_server_key(conn) != _server_key(s) for s in out.servers):
            out.servers.append(conn)
        out.tables.append((pipeline.sink.table, record.id))
    return out


def _server_key(conn: ClickHouseConnection) -> tuple[object, ...]:
    return (conn.host, conn.port, conn.database, conn.username, conn.secure)


@dataclass(frozen=True)
class ClickHouseVerdict:
    ok: bool
    will_create: bool
    shared_with: list[str]
    version: str | None
    database: str | None
    tables: list[str]
    message: str


def check_clickhouse(
    service: PipelineService, conn: ClickHouseConnection, timeout_s: float
) -> ClickHouseVerdict:
    """What deploying into `conn` (its path already the service's) would meet. An embedded
    directory that does not exist yet is created by deploy; one this server's pipelines
    write to is shared through the server (a second opener would be refused, deploy is not).
    Otherwise the probe's answer; its failure is raised in words (the probe's errors)."""
    if conn.embedded:
        assert conn.path is not None
        path = Path(conn.path)
        users = known(service).embedded_paths.get(str(path), [])
        if users:
            names = ", ".join(users)
            return ClickHouseVerdict(
                True,
                False,
                users,
                None,
                conn.database,
                [],
                f"The embedded ClickHouse in {path} is this server's, used by {names}: "
                "a new pipeline writes into it through the server too.",
            )
        if not path.exists():
            return ClickHouseVerdict(
                True,
                True,
                [],
                None,
                conn.database,
                [],
                f"{path} does not exist yet: deploy creates it, with an embedded ClickHouse in it.",
            )
        if path.is_dir() and not any(path.iterdir()):
            return ClickHouseVerdict(
                True,
                True,
                [],
                None,
                conn.database,
                [],
                f"{path} is empty: deploy creates an embedded ClickHouse in it.",
            )
    info = probes.clickhouse_info(conn, timeout_s)
    return ClickHouseVerdict(
        True,
        False,
        [],
        info.version,
        info.database,
        list(info.tables),
        f"Connected: ClickHouse {info.version}, database {info.database}, "
        f"{len(info.tables)} table(s).",
    )


def missing_topics(pipeline: Pipeline, timeout_s: float) -> tuple[list[str], list[str], list[str]]:
    """The topics the document reads that its brokers do not have ('topic on servers'), the
    problems that makes, in words, and notes on the brokers that could not be asked."""
    missing: list[str] = []
    problems: list[str] = []
    notes: list[str] = []
    for src in pipeline.inputs:
        servers = getattr(src, "bootstrap_servers", None)
        topic = getattr(src, "topic", None)
        if not servers or not topic:
            continue
        try:
            md = probes.kafka_metadata(servers, src.security, timeout_s)
        except StreamsiftError as exc:
            notes.append(
                f"the topic {topic} could not be checked ({exc}): the pipeline may still be "
                "created; it retries until its brokers answer"
            )
            continue
        if topic not in {t.name for t in md.topics}:
            missing.append(f"{topic} on {servers}")
            problems.append(
                f"the topic {topic} does not exist on {servers}: create it first, or fix "
                "the topic's name in the file"
            )
    return missing, problems, notes


def create_table_statement(pipeline: Pipeline) -> str | None:
    """The CREATE TABLE the pipeline runs at its start (None when it writes into an existing
    table)."""
    sink = pipeline.sink
    if not sink.create_table:
        return None
    version = pipeline.replacing_version_column
    engine = f"ReplacingMergeTree({quote(version)})" if version is not None else "MergeTree"
    return create_table_sql(
        sink.clickhouse.database,
        sink.table,
        [(m.column, m.type) for m in sink.mapping],
        pipeline.table_order_by,
        engine=engine,
    )
