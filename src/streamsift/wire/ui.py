"""The web UI's helper answers: the server's defaults for the wizard, the checks it runs as
the user types (a pipeline name, a ClickHouse destination, an uploaded file), the table a
document would create, and each pipeline's short time series of figures."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from streamsift.wire.base import Answer


class KnownClickHouse(Answer):
    """A ClickHouse server a pipeline of this server writes to (no password)."""

    host: str
    port: int | None
    database: str
    username: str
    secure: bool


class TableInUse(Answer):
    """A table a pipeline of this server writes to."""

    table: str
    pipeline: str


class UiDefaults(Answer):
    """What the wizard starts from on this server."""

    bootstrap_servers: list[str] = Field(
        description="brokers this server's pipelines read, the running ones first (the demo's "
        "broker with serve --demo)"
    )
    clickhouse_path: str = Field(description="the embedded ClickHouse under the data dir")
    clickhouse_servers: list[KnownClickHouse]
    tables_in_use: list[TableInUse]
    pipelines: list[str] = Field(description="the names already taken")


class NameCheck(Answer):
    """Whether a pipeline name can be used here, in words when it cannot."""

    name: str
    valid: bool
    taken: bool
    message: str | None


class ClickHouseCheck(Answer):
    """What deploying into a ClickHouse would meet: reachable, to be created, or shared."""

    ok: bool = Field(description="deploy can go ahead")
    will_create: bool = Field(description="an embedded directory deploy creates")
    shared_with: list[str] = Field(description="pipelines of this server writing there")
    version: str | None
    database: str | None
    tables: list[str]
    message: str


class UploadCheck(Answer):
    """An uploaded document checked before create: its name, summary and what is missing."""

    name: str
    summary: str
    name_taken: bool
    missing_topics: list[str] = Field(description="'topic on brokers' the brokers do not have")
    problems: list[str] = Field(description="what would stop create or the first run, in words")
    notes: list[str] = Field(
        description="what could not be checked (a broker that did not answer): create may go on",
    )


class TablePlan(Answer):
    """The table a document writes into, and the statement that creates it."""

    table: str
    create_table: bool
    sql: str | None = Field(description="CREATE TABLE ... when the pipeline creates its table")


class SeriesPoint(Answer):
    """A pipeline's figures at one moment (counts of its current run)."""

    at: datetime
    read: int
    written: int
    duplicates: int
    dlq: int
    filtered: int | None
    lag: int | None
    written_per_s: float | None = Field(description="rows written per second since the last point")
    read_per_s: float | None


class Series(Answer):
    """A pipeline's recent figures, oldest first, one point per interval (kept by the server,
    at most a day)."""

    id: str
    interval_s: float
    points: list[SeriesPoint]


class Rate(Answer):
    """A pipeline's latest rows written per second, measured by the server."""

    id: str
    written_per_s: float | None
    at: datetime | None
