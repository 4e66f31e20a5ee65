"""The chdb-backed ClickHouse HTTP endpoint, driven by clickhouse-connect over real loopback HTTP."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import clickhouse_connect
import pyarrow as pa
import pytest
from clickhouse_connect.driver.client import Client
from clickhouse_connect.driver.exceptions import DatabaseError, OperationalError

from streamsift.embedded.clickhouse_faults import set_remote_faults
from streamsift.embedded.clickhouse_server import ClickHouseHTTPServer, spawn_server

pytestmark = pytest.mark.integration

ALL_TYPES_DDL = """
CREATE TABLE {name} (
    id UInt64,
    ts DateTime64(3, 'UTC'),
    n Nullable(Int32),
    tags Array(String),
    u UUID,
    amount Decimal(18, 4),
    kind LowCardinality(String),
    attrs Map(String, String),
    day Date
) ENGINE = MergeTree ORDER BY id
SETTINGS non_replicated_deduplication_window = 1000
"""
COLUMNS = ["id", "ts", "n", "tags", "u", "amount", "kind", "attrs", "day"]
ROWS = [
    [
        1,
        dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
        None,
        ["a", "b"],
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        Decimal("1.2345"),
        "click",
        {"k": "v", "x": ""},
        dt.date(2024, 1, 2),
    ],
    [
        2,
        dt.datetime(1999, 12, 31, 23, 59, 59, 999000),
        -7,
        [],
        uuid.UUID(int=0),
        Decimal("-3.5000"),
        "view",
        {},
        dt.date(1999, 12, 31),
    ],
]


@pytest.fixture(scope="module")
def server(chdb_path: Path) -> Iterator[ClickHouseHTTPServer]:
    # the session's one chdb directory: chdb opens one data directory per process, and
    # earlier tests in this process may have opened it already
    with ClickHouseHTTPServer(chdb_path) as srv:
        yield srv


@pytest.fixture
def client(server: ClickHouseHTTPServer) -> Iterator[Client]:
    server.fail_next(0)
    server.delay_ms = 0
    cli = clickhouse_connect.get_client(
        host="127.0.0.1", port=server.port, username="default", password=""
    )
    yield cli
    cli.close()


def table_name() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


def http(url: str, data: bytes | None = None, method: str | None = None) -> tuple[int, dict, bytes]:
    """A raw HTTP request; returns status, headers and body, also for error statuses."""
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_ping(server: ClickHouseHTTPServer, client: Client) -> None:
    status, _, body = http(f"{server.url}/ping")
    assert (status, body) == (200, b"Ok.\n")
    assert http(f"{server.url}/ping", method="HEAD")[0] == 200
    assert http(f"{server.url}/")[2] == b"Ok.\n"
    assert client.ping()


def test_connect_handshake(server: ClickHouseHTTPServer, client: Client) -> None:
    assert client.server_version == server.version
    assert server.version.startswith("2")
    assert client.command("SELECT 1") == 1
    assert client.command("SELECT 'a', 2") == ["a", "2"]


@pytest.mark.parametrize("compress", [True, False, "zstd", "gzip"])
def test_insert_rows_and_query_back_all_types(
    server: ClickHouseHTTPServer, compress: bool | str
) -> None:
    """client.insert sends Native (lz4-compressed by default); values come back exactly."""
    cli = clickhouse_connect.get_client(host="127.0.0.1", port=server.port, compress=compress)
    if compress is True:
        assert cli.write_compression == "lz4"  # the default client compresses inserts
    name = table_name()
    cli.command(ALL_TYPES_DDL.format(name=name))
    summary = cli.insert(name, ROWS, column_names=COLUMNS)
    assert summary.written_rows == 2

    result = cli.query(f"SELECT {', '.join(COLUMNS)} FROM {name} ORDER BY id")
    assert [list(row) for row in result.result_rows] == ROWS
    assert [t.name for t in result.column_types][:3] == [
        "UInt64",
        "DateTime64(3, 'UTC')",
        "Nullable(Int32)",
    ]

    arrow = cli.query_arrow(f"SELECT * FROM {name} ORDER BY id")
    assert arrow.num_rows == 2
    assert arrow.column("tags").to_pylist() == [["a", "b"], []]
    assert arrow.column("kind").to_pylist() == ["click", "view"]
    assert arrow.column("attrs").to_pylist()[0] == [("k", "v"), ("x", "")]

    df = cli.query_df(f"SELECT id, n, kind FROM {name} ORDER BY id")
    assert df["id"].tolist() == [1, 2]
    assert df["kind"].tolist() == ["click", "view"]

    meta = cli.query(f"SELECT * FROM {name} LIMIT 0")  # the FORMAT JSON metadata probe
    assert meta.column_names == tuple(COLUMNS)
    cli.close()


def test_insert_arrow_and_query_back(client: Client) -> None:
    name = table_name()
    client.command(ALL_TYPES_DDL.format(name=name))
    table = pa.table(
        {
            "id": pa.array([10, 11], pa.uint64()),
            "ts": pa.array(
                [dt.datetime(2024, 5, 6, 7, 8, 9, 250000), dt.datetime(2024, 5, 6)],
                pa.timestamp("ms", tz="UTC"),
            ),
            "n": pa.array([None, 5], pa.int32()),
            "tags": pa.array([["p"], ["q", "r"]], pa.list_(pa.string())),
            "u": ["00000000-0000-0000-0000-000000000001", "ffffffff-ffff-ffff-ffff-ffffffffffff"],
            "amount": pa.array([Decimal("0.0001"), Decimal("12345.6789")], pa.decimal128(18, 4)),
            "kind": pa.array(["a", "b"]).dictionary_encode(),
            "attrs": pa.array([[("m", "n")], []], pa.map_(pa.string(), pa.string())),
            "day": pa.array([dt.date(2024, 5, 6), dt.date(2024, 5, 7)], pa.date32()),
        }
    )
    summary = client.insert_arrow(name, table)
    assert summary.written_rows == 2
    rows = client.query(
        f"SELECT id, ts, n, tags, u, amount, kind, attrs FROM {name} ORDER BY id"
    ).result_rows
    assert rows == [
        (
            10,
            dt.datetime(2024, 5, 6, 7, 8, 9, 250000),
            None,
            ["p"],
            uuid.UUID(int=1),
            Decimal("0.0001"),
            "a",
            {"m": "n"},
        ),
        (
            11,
            dt.datetime(2024, 5, 6),
            5,
            ["q", "r"],
            uuid.UUID(int=2**128 - 1),
            Decimal("12345.6789"),
            "b",
            {},
        ),
    ]


def test_dedup_token_repeat_inserts_nothing(client: Client) -> None:
    name = table_name()
    client.command(ALL_TYPES_DDL.format(name=name))
    ids = pa.array(range(100, 200), pa.uint64())
    table = pa.table({"id": ids, "kind": pa.array([f"k{i}" for i in range(100)])})

    client.insert_arrow(name, table, settings={"insert_deduplication_token": "q:1:0"})
    client.insert_arrow(name, table, settings={"insert_deduplication_token": "q:1:0"})
    assert client.command(f"SELECT count() FROM {name}") == 100
    # Same token, other rows: still skipped (ClickHouse keys on the token alone).
    other = pa.table({"id": pa.array([1], pa.uint64()), "kind": ["z"]})
    client.insert_arrow(name, other, settings={"insert_deduplication_token": "q:1:0"})
    assert client.command(f"SELECT count() FROM {name}") == 100
    # A new token inserts, even the same rows.
    client.insert_arrow(name, table, settings={"insert_deduplication_token": "q:2:0"})
    assert client.command(f"SELECT count() FROM {name}") == 200

    # Native inserts (client.insert) honour the token too.
    rows = [[1000 + i, f"n{i}"] for i in range(10)]
    for _ in range(2):
        client.insert(
            name, rows, column_names=["id", "kind"], settings={"insert_deduplication_token": "n:1"}
        )
    assert client.command(f"SELECT count() FROM {name} WHERE id >= 1000") == 10


def test_dedup_token_ignored_without_window(client: Client) -> None:
    """The DESIGN trap, reproduced: plain MergeTree defaults to window 0 and ignores tokens."""
    name = table_name()
    client.command(f"CREATE TABLE {name} (id UInt64) ENGINE = MergeTree ORDER BY id")
    table = pa.table({"id": pa.array([1, 2, 3], pa.uint64())})
    for _ in range(2):
        client.insert_arrow(name, table, settings={"insert_deduplication_token": "same"})
    assert client.command(f"SELECT count() FROM {name}") == 6
    client.command(f"ALTER TABLE {name} MODIFY SETTING non_replicated_deduplication_window = 100")
    for _ in range(2):
        client.insert_arrow(name, table, settings={"insert_deduplication_token": "after-alter"})
    assert client.command(f"SELECT count() FROM {name}") == 9


def test_unknown_table_is_a_clickhouse_error(server: ClickHouseHTTPServer, client: Client) -> None:
    with pytest.raises(DatabaseError) as info:
        client.query("SELECT * FROM no_such_table")
    assert info.value.code == 60
    assert "Code: 60" in str(info.value) and "UNKNOWN_TABLE" in str(info.value)

    with pytest.raises(DatabaseError) as info:
        client.insert_arrow("no_such_table", pa.table({"id": [1]}))
    assert info.value.code == 60

    status, headers, body = http(f"{server.url}/?query=SELECT+*+FROM+no_such_table")
    assert status == 404
    assert headers["X-ClickHouse-Exception-Code"] == "60"
    assert body.startswith(b"Code: 60. DB::Exception: ") and body.rstrip().endswith(
        b"(UNKNOWN_TABLE)"
    )

    status, headers, body = http(f"{server.url}/", data=b"SELEC 1")
    assert (status, headers["X-ClickHouse-Exception-Code"]) == (400, "62")


def test_bad_insert_data_is_an_error(client: Client) -> None:
    name = table_name()
    client.command(f"CREATE TABLE {name} (id UInt64) ENGINE = MergeTree ORDER BY id")
    with pytest.raises(DatabaseError) as info:
        client.raw_insert(name, ["id"], b"\x01\x01garbage", fmt="Native")
    assert info.value.code is not None and info.value.code > 0
    client.raw_insert(name, ["id"], "1\n2\n", fmt="CSV")  # the session is usable afterwards
    assert client.command(f"SELECT count() FROM {name}") == 2


def test_settings_database_query_id_and_params(
    server: ClickHouseHTTPServer, client: Client
) -> None:
    assert client.command("SELECT getSetting('max_threads')", settings={"max_threads": 3}) == 3
    assert client.command("SELECT getSetting('max_threads')") != 3  # per request, not sticky
    comment = client.query("SELECT getSetting('log_comment')", settings={"log_comment": "it's x"})
    assert comment.first_row[0] == "it's x"
    with pytest.raises(DatabaseError) as info:
        client.command("SELECT 1", settings={"no_such_setting_xyz": 1})
    assert info.value.code == 115

    db = f"db_{uuid.uuid4().hex[:8]}"
    client.command(f"CREATE DATABASE {db}")
    scoped = clickhouse_connect.get_client(host="127.0.0.1", port=server.port, database=db)
    scoped.command("CREATE TABLE only_here (id UInt8) ENGINE = MergeTree ORDER BY id")
    scoped.insert("only_here", [[1], [2]], column_names=["id"])
    assert scoped.command("SELECT currentDatabase()") == db
    assert scoped.command("SELECT count() FROM only_here") == 2
    assert client.command(f"SELECT count() FROM {db}.only_here") == 2
    assert client.command("SELECT currentDatabase()") == "default"
    scoped.close()

    result = client.query("SELECT 1", settings={"query_id": "my-query-1"})
    assert result.summary["query_id"] == "my-query-1"
    rows = client.query(
        "SELECT {s:String} AS s, {n:UInt8} + 1 AS n", parameters={"s": "tab\there", "n": 4}
    ).result_rows
    assert rows == [("tab\there", 5)]
    assert client.raw_query("SELECT 1 AS x", fmt="JSONEachRow") == b'{"x":1}\n'


def test_inserts_in_other_shapes(server: ClickHouseHTTPServer, client: Client) -> None:
    """VALUES, FORMAT CSV with the query in the URL, and the query in the body."""
    name = table_name()
    client.command(f"CREATE TABLE {name} (id UInt64, s String) ENGINE = MergeTree ORDER BY id")
    client.command(f"INSERT INTO {name} (id, s) VALUES (1, 'a'), (2, 'b')")
    client.command(f"INSERT INTO {name} FORMAT CSV", data='3,c\n4,"d,e"\n')
    status, _, _ = http(f"{server.url}/?query=INSERT+INTO+{name}+FORMAT+TSV", data=b"5\tf\n")
    assert status == 200
    status, headers, _ = http(
        f"{server.url}/",
        data=f"INSERT INTO {name} FORMAT JSONEachRow\n".encode() + b'{"id":6,"s":"g"}\n',
    )
    assert status == 200 and "X-ClickHouse-Summary" in headers
    assert client.query(f"SELECT s FROM {name} ORDER BY id").result_columns == [
        ["a", "b", "c", "d,e", "f", "g"]
    ]


def test_fault_injection(server: ClickHouseHTTPServer, client: Client) -> None:
    name = table_name()
    client.command(
        f"CREATE TABLE {name} (id UInt64) ENGINE = MergeTree ORDER BY id "
        "SETTINGS non_replicated_deduplication_window = 100"
    )
    table = pa.table({"id": pa.array(range(50), pa.uint64())})

    server.fail_next(1, status=503, code=252)
    with pytest.raises(OperationalError) as info:  # 503 is a "retryable" status for the client
        client.command("SELECT 1")
    assert info.value.code == 252
    assert client.command("SELECT 1") == 1  # only the next request failed

    # The insert commits, then the answer is an error: a retry with the same token is exact.
    server.fail_next(1, status=500, after_execute=True)
    with pytest.raises(DatabaseError):
        client.insert_arrow(name, table, settings={"insert_deduplication_token": "b:7:0"})
    assert client.command(f"SELECT count() FROM {name}") == 50
    client.insert_arrow(name, table, settings={"insert_deduplication_token": "b:7:0"})
    assert client.command(f"SELECT count() FROM {name}") == 50

    # Status 0: the connection drops without an answer after the insert committed.
    server.fail_next(1, status=0, after_execute=True)
    shifted = pa.table({"id": pa.array(range(100, 150), pa.uint64())})
    # urllib3 may or may not resend on its own; either way the token keeps it exact.
    with contextlib.suppress(OperationalError):
        client.insert_arrow(name, shifted, settings={"insert_deduplication_token": "b:8:0"})
    client.insert_arrow(name, shifted, settings={"insert_deduplication_token": "b:8:0"})
    assert client.command(f"SELECT count() FROM {name}") == 100

    server.delay_ms = 200
    started = time.monotonic()
    assert client.command("SELECT 1") == 1
    assert time.monotonic() - started >= 0.2
    server.delay_ms = 0


def test_fault_endpoint_is_opt_in(server: ClickHouseHTTPServer) -> None:
    assert server.fault_endpoint is False
    assert http(f"{server.url}/_faults?fail_next=1", data=b"")[0] == 404


def test_subprocess_kill9_and_restart_keeps_data(tmp_path: Path) -> None:
    data_dir = tmp_path / "chdb"
    proc, port = spawn_server(data_dir, fault_endpoint=True)
    try:
        cli = clickhouse_connect.get_client(host="127.0.0.1", port=port)
        cli.command(
            "CREATE TABLE events (id UInt64, ts DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY id "
            "SETTINGS non_replicated_deduplication_window = 100"
        )
        table = pa.table(
            {
                "id": pa.array(range(1000), pa.uint64()),
                "ts": pa.array([0] * 1000, pa.timestamp("ms", tz="UTC")),
            }
        )
        cli.insert_arrow("events", table, settings={"insert_deduplication_token": "run:1:0"})
        assert cli.command("SELECT count() FROM events") == 1000

        faults = set_remote_faults(f"http://127.0.0.1:{port}", fail_next=1, status=503)
        assert faults["fail_remaining"] == 1
        with pytest.raises(OperationalError):
            cli.command("SELECT 1")
        cli.close()

        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        assert proc.stdout is not None
        proc.stdout.close()

        proc, port2 = spawn_server(data_dir, port)
        assert port2 == port
        cli = clickhouse_connect.get_client(host="127.0.0.1", port=port)
        assert cli.command("SELECT count() FROM events") == 1000
        # The dedup log survived the kill too: replaying the same insert adds nothing.
        cli.insert_arrow("events", table, settings={"insert_deduplication_token": "run:1:0"})
        assert cli.command("SELECT count() FROM events") == 1000
        cli.close()

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
