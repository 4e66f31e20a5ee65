"""The ClickHouse side of a pipeline: connection, table, column mapping, and the DLQ table."""

from __future__ import annotations

import re
from collections import Counter
from datetime import timedelta
from enum import Enum
from pathlib import Path

from pydantic import (
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from streamsift.config.base import (
    IDENTIFIER,
    ConfigModel,
    Duration,
    shorten,
)
from streamsift.config.types import (
    CHType,
    parse_clickhouse_type,
)

# ---------------------------------------------------------------------------- sink

# A column name: plain, or the dotted name of a Nested column's array (`Events.Timestamp`).
COLUMN_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


class ColumnMapping(ConfigModel):
    """Write payload field `field` into ClickHouse column `column` of type `type`."""

    field: str
    column: str
    type: str

    @field_validator("column")
    @classmethod
    def _column(cls, v: str) -> str:
        if not COLUMN_NAME.match(v):
            raise ValueError(
                f"{shorten(v)} is not a column name (letters, digits, _; dots join the parts "
                "of a Nested column, e.g. Events.Timestamp)"
            )
        return v

    @field_validator("type")
    @classmethod
    def _type(cls, v: str) -> str:
        return str(parse_clickhouse_type(v))

    @property
    def ch_type(self) -> CHType:
        return parse_clickhouse_type(self.type)


class ClickHouseConnection(ConfigModel):
    """Embedded (`path`, chdb) or a server (`host`, `port`, ...). Exactly one of the two."""

    path: Path | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    username: str = "default"
    password: SecretStr = SecretStr("")
    database: str = "default"
    secure: bool = False
    skip_certificate_verification: bool = False

    @field_validator("port", mode="before")
    @classmethod
    def _port(cls, v: object) -> object:
        return int(v) if isinstance(v, str) and v.strip().isdigit() else v

    @model_validator(mode="after")
    def _one_mode(self) -> ClickHouseConnection:
        if (self.path is None) == (self.host is None):
            raise ValueError("give either path (embedded ClickHouse) or host (a ClickHouse server)")
        if not IDENTIFIER.match(self.database):
            raise ValueError(f"database {self.database!r} is not a plain name")
        return self

    @property
    def embedded(self) -> bool:
        return self.path is not None


class MissingDedupWindow(str, Enum):
    """What to do with an existing table whose insert deduplication is off."""

    SET = "set"
    REFUSE = "refuse"


class NewFields(str, Enum):
    """What to do with message fields the schema does not list (docs/semantics.md)."""

    IGNORE = "ignore"  # not written (the default, for schemas listed by hand)
    ADD_COLUMNS = "add_columns"  # a Nullable column is added per new field, and mapped
    DLQ = "dlq"  # the message goes to the DLQ, saying which fields are new


class ClickHouseSink(ConfigModel):
    clickhouse: ClickHouseConnection
    table: str
    mapping: tuple[ColumnMapping, ...] = Field(min_length=1)
    create_table: bool = False
    order_by: tuple[str, ...] | None = None
    max_batch_size: int = Field(default=100_000, gt=0)
    # the trigger interval: 500 ms halves a caught-up record's wait against 1 s at no
    # measured cost in sustained rate (docs/benchmarks.md)
    max_delay_time: Duration = timedelta(milliseconds=500)
    on_missing_dedup_window: MissingDedupWindow = MissingDedupWindow.SET
    on_new_fields: NewFields = NewFields.IGNORE
    # how long start-up waits for a ClickHouse server to answer before the run ends
    connect_timeout: Duration = timedelta(seconds=30)

    @field_validator("table")
    @classmethod
    def _table(cls, v: str) -> str:
        return check_table_name(v)

    @field_validator("order_by", mode="before")
    @classmethod
    def _order_by(cls, v: object) -> object:
        return (v,) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> ClickHouseSink:
        columns = Counter(m.column for m in self.mapping)
        dupes = sorted(c for c, count in columns.items() if count > 1)
        if dupes:
            raise ValueError(f"mapping writes column(s) {', '.join(dupes)} more than once")
        for col in self.order_by or ():
            if col not in columns:
                raise ValueError(f"order_by names {col!r}, which is not a mapped column")
        return self


class Dlq(ConfigModel):
    """Where bad records go: a ClickHouse table beside the sink's (default `<table>_dlq`)."""

    table: str | None = None

    @field_validator("table")
    @classmethod
    def _table(cls, v: str | None) -> str | None:
        return None if v is None else check_table_name(v)


def check_table_name(v: str) -> str:
    """`v` if it is a plain ClickHouse table name (the sink quotes nothing), else ValueError."""
    if not IDENTIFIER.match(v):
        raise ValueError(f"{shorten(v)} is not a plain table name (letters, digits, _)")
    return v
