"""Writing Arrow tables into ClickHouse exactly once.

Every insert carries an `insert_deduplication_token` that the caller derives from the
micro-batch (query id, batch id, chunk index), so replaying a batch after a crash inserts
nothing twice. This only works on tables that remember tokens, which `prepare()` checks.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from clickhouse_connect.driver.exceptions import (
    ClickHouseError,
    DatabaseError,
    OperationalError,
)

from streamsift.config.models import ClickHouseConnection, MissingDedupWindow
from streamsift.sinks.clickhouse.ddl import (
    alter_dedup_window_sql,
    create_table_sql,
    dedup_window_of,
    quote,
)
from streamsift.sinks.errors import (
    SinkConfigError,
    SinkError,
    SinkPermanentError,
    SinkTransientError,
)
from streamsift.sinks.retry import OnRetry, RetryInterrupted, RetryPolicy, StopCheck

log = logging.getLogger("streamsift.sink")

# ClickHouse error codes worth retrying (overload, network, timeouts, read-only replicas).
TRANSIENT_CODES = {
    3,
    159,
    164,
    202,
    203,
    209,
    210,
    236,
    241,
    242,
    252,
    279,
    285,
    319,
    425,
    999,
    1000,
}

# Errors caused by the values of some rows (unparsable, out of range, constraint violated):
# such rows are isolated and sent to the DLQ; any other permanent error stops the pipeline.
DATA_ERROR_CODES = {
    6,
    27,
    32,
    38,
    41,
    53,
    69,
    70,
    72,
    117,
    131,
    190,
    321,
    349,
    376,
    377,
    407,
    469,
    691,
}

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def connect(conn: ClickHouseConnection, connect_timeout_s: float = 10.0) -> Any:
    """A clickhouse-connect client: chdb in this process for `path`, HTTP for `host`.

    chdb allows one process per data directory, so embedded clients are shared per path.
    """
    import clickhouse_connect

    _quiet_http_logs()  # after the import, which sets urllib3's level

    try:
        if conn.embedded:
            path = str(Path(conn.path or ".").resolve())
            with _clients_lock:
                if path not in _clients:
                    if _clients:
                        raise SinkConfigError(
                            f"embedded ClickHouse is already open at {next(iter(_clients))} in this "
                            f"process; chdb allows one data directory per process, so {path} "
                            "cannot be opened too. Use one sink.clickhouse.path for all pipelines "
                            "of a process, or a ClickHouse server."
                        )
                    Path(path).mkdir(parents=True, exist_ok=True)
                    client = clickhouse_connect.get_client(dsn=f"chdb://{path}")
                    if conn.database != "default":
                        client.command(f"CREATE DATABASE IF NOT EXISTS {quote(conn.database)}")
                    _clients[path] = client
                return _clients[path]
        return server_client(conn, connect_timeout_s)
    except ClickHouseError as exc:
        raise classify(exc, f"connecting to {describe(conn)}") from None


def server_client(
    conn: ClickHouseConnection, connect_timeout_s: float, answer_timeout_s: float = 300
) -> Any:
    """An HTTP client of the ClickHouse server `conn` names; its errors are
    clickhouse-connect's own (`connect` classifies them, the probes say only their kind)."""
    import clickhouse_connect

    return clickhouse_connect.get_client(
        host=conn.host,
        port=conn.port or (8443 if conn.secure else 8123),
        username=conn.username,
        password=conn.password.get_secret_value(),
        database=conn.database,
        secure=conn.secure,
        verify=not conn.skip_certificate_verification,
        connect_timeout=connect_timeout_s,
        send_receive_timeout=answer_timeout_s,
    )


def _quiet_http_logs() -> None:
    """urllib3 warns on every retried connection and clickhouse-connect on every failed
    request; the sink reports failures once, in its own words. (clickhouse-connect sets
    urllib3's level when imported, so this runs after that.) It matters most in Spark's Python
    workers, where nobody configures logging and Python's last-resort handler would print
    each warning on the console. Debug logging (`--verbose`) keeps them."""
    if logging.getLogger("streamsift").isEnabledFor(logging.DEBUG):
        return
    for name in ("urllib3", "clickhouse_connect"):
        logging.getLogger(name).setLevel(logging.ERROR)


def short_reason(error: BaseException) -> str:
    """The gist of a connection failure ('Connection refused'), not urllib3's whole story."""
    text = str(error)
    m = re.search(r"\[Errno -?\d+\] ([^'\"()\]]+)", text)
    if m:
        return m.group(1).strip()
    if "timed out" in text.lower():
        return "timed out"
    first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return first[:300]


def describe(conn: ClickHouseConnection) -> str:
    """Where the data goes, without secrets."""
    if conn.embedded:
        return f"embedded ClickHouse at {conn.path}"
    scheme = "https" if conn.secure else "http"
    return f"ClickHouse {scheme}://{conn.host}:{conn.port or 8123}/{conn.database}"


def classify(exc: Exception, what: str) -> Exception:
    """Turn a client exception into a transient or a permanent sink error."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    code = getattr(exc, "code", None)
    if code is None:
        m = re.search(r"Code: (\d+)", str(exc))
        code = int(m.group(1)) if m else None
    if isinstance(exc, OperationalError) or code in TRANSIENT_CODES:
        return SinkTransientError(f"{what}: {text}")
    if (
        isinstance(exc, DatabaseError)
        and code is None
        and any(
            s in str(exc)
            for s in ("HTTP 502", "HTTP 503", "HTTP 504", "status 502", "status 503", "status 504")
        )
    ):
        return SinkTransientError(f"{what}: {text}")
    return SinkPermanentError(f"{what}: {text}", code)


@dataclass(frozen=True)
class RowFailure:
    """A row ClickHouse refused: its index in the inserted table and why."""

    index: int
    code: int | None
    message: str


@dataclass
class ClickHouseWriter:
    """Inserts into one database of one ClickHouse, with tokens and transient retries."""

    conn: ClickHouseConnection
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    on_status: OnRetry | None = None
    # set when the run is asked to stop: retries end at once (driver side only, not pickled)
    stop: StopCheck | None = None
    connect_timeout_s: float = 10.0
    _client: Any = None

    @property
    def client(self) -> Any:
        """The connection, opened on first use; callers retry it with the statement."""
        if self._client is None:
            self._client = connect(self.conn, self.connect_timeout_s)
        return self._client

    def wait_until_reachable(self, within_s: float) -> None:
        """Connect, retrying transient failures for up to `within_s` (a start-up check).

        Raises SinkTransientError naming host:port and the reason when time runs out, and
        RetryInterrupted when a stop is requested meanwhile.
        """
        last: list[Exception] = []

        def attempt() -> Any:
            try:
                return self.client
            except SinkTransientError as exc:
                last[:] = [exc]
                raise

        policy = RetryPolicy(0.5, 5.0, give_up_after_s=within_s, log_episodes=False)
        try:
            policy.run(
                attempt,
                f"connecting to {describe(self.conn)}",
                self.on_status,
                self.stop,
                operation="connect",
            )
        except RetryInterrupted:
            raise
        except SinkTransientError as exc:
            reason = short_reason(last[0] if last else exc)
            raise SinkTransientError(
                f"{describe(self.conn)} did not answer within {within_s:g}s: {reason}"
            ) from None

    def answers(self) -> bool:
        """One ping, no retries: does ClickHouse answer right now? (for status, not for data)"""
        try:
            return bool(self.client.ping())
        except (SinkError, ClickHouseError, OSError):
            self._client = None
            return False

    def command(self, sql: str) -> Any:
        def run() -> Any:
            try:
                return self.client.command(sql)
            except ClickHouseError as exc:
                raise classify(exc, sql.split("(")[0][:80]) from None

        return self.retry.run(run, "ClickHouse command", self.on_status, self.stop, "command")

    def query_rows(self, sql: str) -> list[tuple]:
        def run() -> list[tuple]:
            try:
                return self.client.query(sql).result_rows
            except ClickHouseError as exc:
                raise classify(exc, "query") from None

        return self.retry.run(run, "ClickHouse query", self.on_status, self.stop, "query")

    def table_exists(self, table: str) -> bool:
        rows = self.query_rows(
            "SELECT count() FROM system.tables "
            f"WHERE database = '{self.conn.database}' AND name = '{table}'"
        )
        return bool(rows and rows[0][0])

    def prepare_table(
        self,
        table: str,
        columns: Sequence[tuple[str, str]],
        create: bool,
        order_by: Sequence[str] = (),
        on_missing_window: MissingDedupWindow = MissingDedupWindow.SET,
    ) -> None:
        """Make sure `table` exists and remembers insert tokens (exactly-once needs both)."""
        if not self.table_exists(table):
            if not create:
                raise SinkConfigError(
                    f"table {self.conn.database}.{table} does not exist in {describe(self.conn)}; "
                    "create it, or set sink.create_table: true"
                )
            self.command(create_table_sql(self.conn.database, table, columns, order_by))
            log.info("created table %s.%s", self.conn.database, table)
            return
        self._check_columns(table, [c for c, _ in columns])
        rows = self.query_rows(
            "SELECT engine, create_table_query FROM system.tables "
            f"WHERE database = '{self.conn.database}' AND name = '{table}'"
        )
        engine, create_query = rows[0]
        window = dedup_window_of(engine, create_query)
        if window is None or window > 0:
            return
        alter = alter_dedup_window_sql(self.conn.database, table)
        if on_missing_window is MissingDedupWindow.REFUSE:
            raise SinkConfigError(
                f"table {self.conn.database}.{table} has non_replicated_deduplication_window = 0, "
                "so ClickHouse would ignore insert tokens and a crash could double rows. "
                f"Run: {alter}  (or set sink.on_missing_dedup_window: set)"
            )
        log.warning(
            "table %s.%s ignored insert tokens (non_replicated_deduplication_window = 0); "
            "setting it so inserts are exactly-once: %s",
            self.conn.database,
            table,
            alter,
        )
        self.command(alter)

    def _check_columns(self, table: str, names: Sequence[str]) -> None:
        rows = self.query_rows(
            "SELECT name FROM system.columns "
            f"WHERE database = '{self.conn.database}' AND table = '{table}'"
        )
        existing = {r[0] for r in rows}
        missing = [n for n in names if n not in existing]
        if missing:
            raise SinkConfigError(
                f"table {self.conn.database}.{table} has no column(s) {', '.join(missing)} "
                "named in the mapping"
            )

    def insert(self, table: str, data: pa.Table, token: str) -> None:
        """Insert `data` once: a repeat with the same token inserts nothing."""
        if data.num_rows == 0:
            return

        # One record batch is one block: ClickHouse then takes or refuses the insert whole.
        data = data.combine_chunks()

        def run() -> None:
            try:
                self.client.insert_arrow(
                    f"{quote(self.conn.database)}.{quote(table)}",
                    data,
                    settings={"insert_deduplication_token": token},
                )
            except ClickHouseError as exc:
                raise classify(exc, f"insert into {table}") from None

        self.retry.run(run, f"insert into {table}", self.on_status, self.stop, "insert")

    def insert_isolating(self, table: str, data: pa.Table, token: str) -> list[RowFailure]:
        """Insert `data`; rows whose values ClickHouse refuses are left out and returned.

        A refused insert is split in halves until the refusing rows stand alone. Sub-inserts
        get tokens derived from `token`, so a replay makes the same splits and the same tokens.
        """
        try:
            self.insert(table, data, token)
            return []
        except SinkPermanentError as exc:
            if exc.code not in DATA_ERROR_CODES:
                raise
            if data.num_rows == 1:
                return [RowFailure(0, exc.code, str(exc))]
        mid = data.num_rows // 2
        left = self.insert_isolating(table, data.slice(0, mid), token + ":0")
        right = self.insert_isolating(table, data.slice(mid), token + ":1")
        return left + [RowFailure(f.index + mid, f.code, f.message) for f in right]

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_client"] = None  # clients do not travel to executors; each opens its own
        state["on_status"] = None
        state["stop"] = None
        return state

    def count(self, table: str, where: str = "") -> int:
        sql = f"SELECT count() FROM {quote(self.conn.database)}.{quote(table)}"
        return int(self.query_rows(sql + (f" WHERE {where}" if where else ""))[0][0])
