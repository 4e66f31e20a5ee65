"""A ClickHouse HTTP endpoint backed by chdb, for tests, the demo and the embedded sidecar.

No ClickHouse server package is reachable here, but chdb (the ClickHouse engine in-process)
is. chdb allows one process per data directory, so this module gives that directory one owner
that speaks the part of ClickHouse's HTTP interface clickhouse-connect uses: queries in any
format (Native by default, Arrow for ``query_arrow``), commands, ``INSERT ... FORMAT`` bodies
(Native, Arrow, ...; lz4/zstd/gzip/deflate ``Content-Encoding``), settings as URL parameters
(``insert_deduplication_token`` included), ``param_*`` query parameters, ``/ping`` and
ClickHouse-style errors (``X-ClickHouse-Exception-Code``).

Run it in-process (``ClickHouseHTTPServer(...).start()``) or as its own process
(``python -m streamsift.embedded.clickhouse_server --data-dir D --port P``, see ``spawn_server``),
which tests can SIGKILL and restart on the same directory and port. What a request says and
how errors read is in ``clickhouse_protocol``; fault injection (``/_faults``) in
``clickhouse_faults``.

Not supported: multipart/form-data requests (external data, ``form_encode_query_params``),
ClickHouse's own block compression (``compress=1``/``decompress=1`` URL parameters),
``client_protocol_version`` (so the client keeps protocol 0), real sessions (every request runs
in the one chdb session; settings given as URL parameters are applied for that request only, but
a ``SET`` or ``USE`` sent as a statement affects later requests), ``readonly`` and the HTTP-only
settings (ignored), users and passwords (any credentials are accepted), response compression
and streamed results (results are built in memory).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from streamsift.embedded.clickhouse_faults import Fault, FaultInjector, Faults
from streamsift.embedded.clickhouse_protocol import (
    OUTPUT_KINDS,
    ClickHouseError,
    Statement,
    content_type,
    decompressed,
    prepend,
    quote,
    quote_ident,
    read_statement,
    split_params,
)

logger = logging.getLogger(__name__)


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering


@dataclass(frozen=True)
class _InsertResult:
    rows_written: int
    bytes_written: int


# --------------------------------------------------------------------------- server


class _HTTPServer(ThreadingHTTPServer):
    """Threaded HTTP server that remembers open connections so stop() can close them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: ClickHouseHTTPServer) -> None:
        self.app = app
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    """One HTTP connection: reads each request fully, hands it to the app, writes the reply."""

    protocol_version = "HTTP/1.1"
    server_version = "ClickHouse-chdb"
    disable_nagle_algorithm = True
    timeout = 600
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        logger.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._serve()

    def do_POST(self) -> None:  # noqa: N802
        self._serve()

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)  # CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        url = urlsplit(self.path)
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        app = self.server.app
        path = url.path.rstrip("/")
        if path == "/ping" or (path == "" and self.command != "POST" and "query" not in params):
            reply = _Reply(200, b"Ok.\n", {"Content-Type": "text/html; charset=UTF-8"})
        elif path == "/_faults" and app.fault_endpoint:
            reply = app._control_faults(params)
        elif path == "":
            reply = app._handle(params, self.headers.get("Content-Encoding", ""), body)
        else:
            err = ClickHouseError(
                1002, "UNKNOWN_EXCEPTION", f"There is no handle {url.path}. Use / or /ping"
            )
            reply = _Reply(404, (str(err) + "\n").encode(), {"X-ClickHouse-Exception-Code": "1002"})
        if reply.drop:
            self.close_connection = True
            return
        self.send_response(reply.status)
        headers = {"Content-Type": "text/plain; charset=UTF-8", **reply.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD" and reply.body:
            self.wfile.write(reply.body)


class ClickHouseHTTPServer:
    """A ClickHouse HTTP endpoint over one chdb data directory, served from a background thread.

    chdb's session is not safe for interleaved statements (and we change its settings per
    request), so statements run one at a time under a lock; request bodies are read before it.
    chdb opens one data directory per process at a time: in-process, run one server at a time
    and nothing else that opens chdb; for more, use ``spawn_server``.
    """

    def __init__(
        self,
        data_dir: str | Path,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        fault_endpoint: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self._port = port
        self.fault_endpoint = fault_endpoint  # serve /_faults (for tests driving a subprocess)
        self.fault_injector = FaultInjector()
        self._lock = threading.Lock()  # serialises everything that touches the chdb session
        self._session: Any = None
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.version = ""
        self.timezone = "UTC"

    # -- public API

    @property
    def port(self) -> int:
        return self._httpd.server_address[1] if self._httpd else self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def faults(self) -> Faults:
        return self.fault_injector.faults

    @property
    def delay_ms(self) -> int:
        return self.faults.delay_ms

    @delay_ms.setter
    def delay_ms(self, value: int) -> None:
        self.faults.delay_ms = int(value)

    def fail_next(
        self, n: int = 1, status: int = 503, *, code: int = 1002, after_execute: bool = False
    ) -> None:
        """Make the next n query/insert requests fail (see Faults); status 0 drops the connection."""
        self.fault_injector.fail_next(n, status, code=code, after_execute=after_execute)

    def start(self) -> ClickHouseHTTPServer:
        """Open the chdb data directory and serve HTTP in a background thread."""
        if self._httpd is not None:
            return self
        from chdb import session as chdb_session

        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._session = chdb_session.Session(str(self.data_dir))
        try:
            row = self._session.query("SELECT version(), timezone()", "TabSeparated").bytes()
            self.version, self.timezone = row.decode().rstrip("\n").split("\t")
            self._httpd = _HTTPServer((self.host, self._port), self)
        except BaseException:
            self._session.close()
            self._session = None
            raise
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"clickhouse-http-{self.port}",
            daemon=True,
        )
        self._thread.start()
        logger.info("ClickHouse HTTP endpoint on %s over %s", self.url, self.data_dir)
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and the chdb session (idempotent)."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            self._port = httpd.server_address[1]
            httpd.shutdown()
            httpd.server_close()
            with httpd.sockets_lock:
                open_sockets = list(httpd.open_sockets)
            for sock in open_sockets:
                with contextlib.suppress(OSError):  # already closed by the peer
                    sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None

    def __enter__(self) -> ClickHouseHTTPServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- request handling

    def _control_faults(self, params: dict[str, str]) -> _Reply:
        """GET/POST /_faults?fail_next=N&status=S&code=C&after_execute=1&delay_ms=X (for subprocesses)."""
        try:
            faults = self.fault_injector.configure(params)
        except ValueError as exc:
            return _Reply(400, f"bad fault parameter: {exc}\n".encode())
        return _Reply(200, json.dumps(faults).encode(), {"Content-Type": "application/json"})

    def _handle(self, params: dict[str, str], encoding: str, body: bytes) -> _Reply:
        """Run one query or insert request and build its reply (errors in ClickHouse's format)."""
        query_id = params.get("query_id") or str(uuid.uuid4())
        headers = {
            "X-ClickHouse-Query-Id": query_id,
            "X-ClickHouse-Timezone": self.timezone,
            "X-ClickHouse-Server-Display-Name": "chdb",
        }
        if self.faults.delay_ms > 0:
            time.sleep(self.faults.delay_ms / 1000)
        fault: Fault | None = self.fault_injector.take()
        try:
            if fault is not None and not fault.after_execute:
                raise fault.error()
            reply = self._execute(params, encoding, body, headers)
            if fault is not None:
                raise fault.error()
            return reply
        except ClickHouseError as err:
            error = err
        except Exception:  # a bug here must still give the client a ClickHouse-style answer
            logger.exception("internal error while handling a request")
            error = ClickHouseError(
                1001, "STD_EXCEPTION", "Internal error in the chdb HTTP endpoint"
            )
        if fault is not None and fault.status == 0:
            return _Reply(0, drop=True)
        headers["X-ClickHouse-Exception-Code"] = str(error.code)
        status = fault.status if fault is not None else error.http_status
        return _Reply(status, (str(error) + "\n").encode(), headers)

    def _execute(
        self, params: dict[str, str], encoding: str, body: bytes, headers: dict[str, str]
    ) -> _Reply:
        if any(params.get(key, "0") not in ("0", "false") for key in ("compress", "decompress")):
            raise ClickHouseError(
                48,
                "NOT_IMPLEMENTED",
                "ClickHouse block compression (compress/decompress) is not supported",
            )
        settings, query_params = split_params(params)
        query = params.get("query", "")
        chunks = decompressed(encoding, body)
        if query:
            chunks = prepend(query.encode() + b"\n", chunks)
        try:
            stmt, head, rest = read_statement(chunks)
        except UnicodeDecodeError as exc:  # chdb takes SQL as str
            raise ClickHouseError(36, "BAD_ARGUMENTS", f"Query is not valid UTF-8: {exc}") from exc
        if not stmt.kind:
            raise ClickHouseError(62, "SYNTAX_ERROR", "Empty query")
        database = params.get("database") or "default"
        with self._lock:
            session = self._session
            if session is None:
                raise ClickHouseError(210, "NETWORK_ERROR", "Server is shutting down")
            try:
                session.query(f"USE {quote_ident(database)}")
                if settings:
                    session.query(
                        "SET " + ", ".join(f"{k} = {quote(v)}" for k, v in settings.items())
                    )
            except RuntimeError as exc:
                raise ClickHouseError.from_chdb(exc) from exc
            try:
                if stmt.data_offset is not None:
                    return self._insert(session, stmt, head, rest, headers)
                return self._query(session, stmt, params, query_params, headers)
            except RuntimeError as exc:
                raise ClickHouseError.from_chdb(exc) from exc
            finally:
                if settings:
                    try:
                        session.query("SET " + ", ".join(f"{k} = DEFAULT" for k in settings))
                    except RuntimeError:
                        logger.warning(
                            "could not reset settings %s", sorted(settings), exc_info=True
                        )

    @staticmethod
    def _insert(
        session: Any, stmt: Statement, head: bytes, rest: Iterator[bytes], headers: dict[str, str]
    ) -> _Reply:
        """INSERT ... FORMAT x with the data in the body, inserted from a spooled file.

        chdb's streaming inserter (send_insert) reports success for inserts that a table
        constraint rejects (checked with chdb 4.4: 2 rows "written", 0 stored), so the body is
        spooled to a file and inserted with FROM INFILE, which raises as a server would.
        """
        assert stmt.fmt is not None and stmt.data_offset is not None
        started = time.perf_counter()
        with tempfile.NamedTemporaryFile(prefix="chhttp-", suffix=".insert") as spool:
            first = head[stmt.data_offset :]
            if first:
                spool.write(first)
            for chunk in rest:
                if chunk:
                    spool.write(chunk)
            spool.flush()
            path = spool.name.replace("'", "\\'")
            result = session.query(f"{stmt.sql} FROM INFILE '{path}' FORMAT {stmt.fmt}")
        result = _InsertResult(result.rows_written(), result.bytes_written())
        summary = {
            "read_rows": "0",
            "read_bytes": "0",
            "written_rows": str(result.rows_written),
            "written_bytes": str(result.bytes_written),
            "total_rows_to_read": "0",
            "result_rows": str(result.rows_written),
            "result_bytes": str(result.bytes_written),
            "elapsed_ns": str(int((time.perf_counter() - started) * 1e9)),
        }
        headers["X-ClickHouse-Summary"] = json.dumps(summary)
        return _Reply(200, b"", headers)

    @staticmethod
    def _query(
        session: Any,
        stmt: Statement,
        params: dict[str, str],
        query_params: dict[str, str],
        headers: dict[str, str],
    ) -> _Reply:
        """Any other statement: run it; its result (if any) in its FORMAT, else default_format."""
        fmt = stmt.fmt or params.get("default_format") or "TabSeparated"
        if fmt.lower() in ("dataframe", "datastore", "arrowtable"):  # chdb's Python-only formats
            raise ClickHouseError(73, "UNKNOWN_FORMAT", f"Unknown format {fmt}")
        result = session.query(stmt.sql, fmt, params=query_params or None)
        data = result.bytes() if result is not None else b""
        if data or stmt.kind in OUTPUT_KINDS:
            headers["X-ClickHouse-Format"] = fmt
            headers["Content-Type"] = content_type(fmt)
        if result is not None:
            headers["X-ClickHouse-Summary"] = json.dumps(
                {
                    "read_rows": str(result.rows_read()),
                    "read_bytes": str(result.bytes_read()),
                    "written_rows": str(result.rows_written()),
                    "written_bytes": str(result.bytes_written()),
                    "total_rows_to_read": str(result.rows_read()),
                    "result_bytes": str(len(data)),
                    "elapsed_ns": str(int(result.elapsed() * 1e9)),
                }
            )
        return _Reply(200, data, headers)


# --------------------------------------------------------------------------- processes


def spawn_server(
    data_dir: str | Path,
    port: int = 0,
    *,
    fault_endpoint: bool = False,
    timeout: float = 60.0,
    python: str | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the endpoint as a separate process; return it and its port once it listens.

    The child is its own session leader (so a test can SIGKILL it alone); stderr is inherited.
    """
    command = [python or sys.executable, "-m", "streamsift.embedded.clickhouse_server"]
    command += ["--data-dir", str(data_dir), "--port", str(port)]
    if fault_endpoint:
        command.append("--fault-endpoint")
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    line = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                proc.kill()
                proc.wait()
                raise TimeoutError(f"ClickHouse HTTP endpoint did not start within {timeout} s")
            data = os.read(proc.stdout.fileno(), 4096)  # unbuffered: select() sees what is left
            if not data:
                code = proc.wait()
                raise RuntimeError(f"ClickHouse HTTP endpoint exited with code {code} on start")
            line += data
    match = re.search(rb"listening on \S+:(\d+)", line)
    if match is None:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"unexpected first line from ClickHouse HTTP endpoint: {line!r}")
    return proc, int(match.group(1))


def main(argv: list[str] | None = None) -> int:
    """Run the endpoint in the foreground until SIGTERM/SIGINT; print 'listening on HOST:PORT'."""
    parser = argparse.ArgumentParser(
        prog="python -m streamsift.embedded.clickhouse_server",
        description="A ClickHouse HTTP endpoint backed by chdb (one process per data directory).",
    )
    parser.add_argument(
        "--data-dir", required=True, help="chdb data directory (created if missing)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--fault-endpoint", action="store_true", help="serve /_faults for fault injection"
    )
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = ClickHouseHTTPServer(
        args.data_dir, host=args.host, port=args.port, fault_endpoint=args.fault_endpoint
    ).start()
    print(f"listening on {server.host}:{server.port}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
