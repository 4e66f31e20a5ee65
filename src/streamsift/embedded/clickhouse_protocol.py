"""The ClickHouse HTTP protocol as the embedded endpoint speaks it, without the server.

What a request says (the statement kind, and for ``INSERT ... FORMAT`` where its data starts,
read from as little of the body as needed), its body decoded per ``Content-Encoding``
(lz4/zstd/gzip/deflate/br), its URL parameters split into settings and ``param_*`` query
parameters, the ``Content-Type`` of an output format, and errors in ClickHouse's own format
(``Code: N. DB::Exception: ... (NAME)``, with the HTTP status ClickHouse gives them).
"""

from __future__ import annotations

import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

_CHUNK = 8 * 1024 * 1024  # slice size for feeding uncompressed insert bodies to chdb

# URL parameters that are part of the HTTP protocol, not settings.
_TRANSPORT_PARAMS = frozenset(
    {
        "query",
        "database",
        "default_format",
        "user",
        "password",
        "quota_key",
        "query_id",
        "stacktrace",
        "role",
        "buffer_size",
        "wait_end_of_query",
        "session_id",
        "session_timeout",
        "session_check",
        "close_session",
        "compress",
        "decompress",
        "client_protocol_version",
    }
)
# Real settings that only steer the HTTP layer (or cannot be undone per request): ignored.
_IGNORED_SETTINGS = frozenset(
    {
        "enable_http_compression",
        "send_progress_in_http_headers",
        "http_headers_progress_interval_ms",
        "cancel_http_readonly_queries_on_client_close",
        "add_http_cors_header",
        "readonly",
    }
)
_SETTING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_ERROR = re.compile(r"Code: (\d+)\. ")
_ERROR_NAME = re.compile(r"\(([A-Z][A-Z0-9_]+)\)")

# Statements that produce a result set (and so an X-ClickHouse-Format header).
OUTPUT_KINDS = frozenset(
    {"SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS", "EXPLAIN", "CHECK", "("}
)

# ClickHouse's HTTPHandler maps some exception codes to HTTP statuses; the rest are 500.
_HTTP_STATUS_BY_NAME: dict[str, int] = {
    **dict.fromkeys(
        [
            "BAD_ARGUMENTS",
            "CANNOT_COMPILE_REGEXP",
            "CANNOT_PARSE_TEXT",
            "CANNOT_PARSE_ESCAPE_SEQUENCE",
            "CANNOT_PARSE_QUOTED_STRING",
            "CANNOT_PARSE_DATE",
            "CANNOT_PARSE_DATETIME",
            "CANNOT_PARSE_NUMBER",
            "CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING",
            "CANNOT_PARSE_IPV4",
            "CANNOT_PARSE_IPV6",
            "CANNOT_PARSE_INPUT_ASSERTION_FAILED",
            "CANNOT_PARSE_UUID",
            "DUPLICATE_COLUMN",
            "ILLEGAL_COLUMN",
            "UNKNOWN_ELEMENT_IN_AST",
            "UNKNOWN_TYPE_OF_AST_NODE",
            "THERE_IS_NO_COLUMN",
            "TOO_DEEP_AST",
            "TOO_BIG_AST",
            "UNEXPECTED_AST_STRUCTURE",
            "SYNTAX_ERROR",
            "INCORRECT_DATA",
            "TYPE_MISMATCH",
            "VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE",
        ],
        400,
    ),
    **dict.fromkeys(
        [
            "UNKNOWN_TABLE",
            "UNKNOWN_FUNCTION",
            "UNKNOWN_IDENTIFIER",
            "UNKNOWN_TYPE",
            "UNKNOWN_STORAGE",
            "UNKNOWN_DATABASE",
            "UNKNOWN_SETTING",
            "UNKNOWN_DIRECTION_OF_SORTING",
            "UNKNOWN_AGGREGATE_FUNCTION",
            "UNKNOWN_FORMAT",
            "UNKNOWN_DATABASE_ENGINE",
            "UNKNOWN_TYPE_OF_QUERY",
        ],
        404,
    ),
    "QUERY_IS_TOO_LARGE": 413,
    "NOT_IMPLEMENTED": 501,
    "SOCKET_TIMEOUT": 503,
    "CANNOT_OPEN_FILE": 503,
    "CANNOT_SCHEDULE_TASK": 503,
    "TIMEOUT_EXCEEDED": 408,
}


class ClickHouseError(Exception):
    """An error to report in ClickHouse's format: ``Code: N. DB::Exception: ... (NAME)``."""

    def __init__(self, code: int, name: str, message: str, *, text: str | None = None) -> None:
        super().__init__(text or f"Code: {code}. DB::Exception: {message}. ({name})")
        self.code = code
        self.name = name

    @classmethod
    def from_chdb(cls, exc: BaseException) -> ClickHouseError:
        """Wrap a chdb error, keeping its own ``Code: N. DB::Exception: ... (NAME)`` text."""
        text = str(exc)
        match = _ERROR.search(text)
        if match is None:
            return cls(1001, "STD_EXCEPTION", text.rstrip(". "))
        names = _ERROR_NAME.findall(text)
        name = names[-1] if names else ""
        return cls(int(match.group(1)), name, "", text=text[match.start() :].strip())

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS_BY_NAME.get(self.name, 500)


@dataclass
class Statement:
    """What the head of a request says: the statement kind, and for INSERT ... FORMAT where data starts."""

    kind: str
    sql: str = ""
    fmt: str | None = None
    data_offset: int | None = None  # set for INSERT with inline data (FORMAT x / VALUES)


class _NeedMore(Exception):
    """The buffer ends inside a token: read more of the body."""


# --------------------------------------------------------------------------- request parsing


def _top_level_words(buf: bytes, complete: bool) -> Iterator[tuple[str, int, int]]:
    """Yield (UPPER_WORD, start, end) for words outside brackets, quotes and comments.

    A leading "(" is reported as the word "(" so a parenthesised SELECT is recognised.
    Raises _NeedMore when the buffer is cut inside a token and more data may follow.
    """
    i, n, depth, first = 0, len(buf), 0, True
    while i < n:
        c = buf[i]
        if c in b" \t\r\n\f\v":
            i += 1
        elif buf.startswith(b"--", i) or c == 0x23:  # -- and # comments
            j = buf.find(b"\n", i)
            if j < 0:
                if complete:
                    return
                raise _NeedMore
            i = j + 1
        elif buf.startswith(b"/*", i):
            j = buf.find(b"*/", i + 2)
            if j < 0:
                if complete:
                    return
                raise _NeedMore
            i = j + 2
        elif c in b"'\"`":
            j = i + 1
            while True:
                if j >= n or (buf[j] == c and j + 1 >= n and not complete):
                    if complete:
                        return
                    raise _NeedMore
                if buf[j] == 0x5C:  # backslash escape
                    j += 2
                elif buf[j] == c:
                    if j + 1 < n and buf[j + 1] == c:  # doubled quote
                        j += 2
                    else:
                        j += 1
                        break
                else:
                    j += 1
            i = j
            first = False
        elif c in b"([{":
            if first:
                yield "(", i, i + 1
            depth += 1
            i += 1
            first = False
        elif c in b")]}":
            depth = max(0, depth - 1)
            i += 1
        else:
            match = _WORD.match(buf, i)
            if match is None:
                i += 1
                first = False
                continue
            j = match.end()
            if j >= n and not complete:
                raise _NeedMore
            if depth == 0:
                yield buf[i:j].decode("ascii").upper(), i, j
            i = j
            first = False


def parse_statement(buf: bytes, complete: bool) -> Statement | None:
    """Classify the request text in buf; None means: read more of the body first."""
    try:
        words = _top_level_words(buf, complete)
        first = next(words, None)
        if first is None:
            return Statement(kind="") if complete else None
        kind = first[0]
        if kind == "INSERT":
            for word, start, end in words:
                if word == "FORMAT":
                    name = next(words, None)
                    if name is None:
                        break  # let chdb report the syntax error
                    pos = name[2]
                    while pos < len(buf) and buf[pos] in b" \t\f":
                        pos += 1
                    if pos < len(buf) and buf[pos] == 0x0D:
                        pos += 1
                    if pos < len(buf) and buf[pos] == 0x0A:
                        pos += 1
                    if pos >= len(buf) and not complete:
                        return None
                    sql = buf[:start].decode()
                    return Statement(
                        kind, sql=sql, fmt=buf[name[1] : name[2]].decode(), data_offset=pos
                    )
                if word == "VALUES":
                    return Statement(kind, sql=buf[:start].decode(), fmt="Values", data_offset=end)
                if word in ("SELECT", "WITH"):
                    break
        if not complete:
            return None
        fmt = None
        previous = kind
        for word, start, end in words:
            if previous == "FORMAT":
                fmt = buf[start:end].decode()
            previous = word
        return Statement(kind, sql=buf.decode(), fmt=fmt)
    except _NeedMore:
        return None


def decompressed(encoding: str, body: bytes) -> Iterator[bytes]:
    """Yield the request body decoded per Content-Encoding, one frame or slice at a time."""
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        view = memoryview(body)
        for start in range(0, len(view), _CHUNK):
            yield bytes(view[start : start + _CHUNK])
        return
    data = body
    try:
        if enc == "lz4":  # clickhouse-connect sends one LZ4 frame per block
            import lz4.frame

            while data:
                lz4_dec = lz4.frame.LZ4FrameDecompressor()
                yield lz4_dec.decompress(data)
                if not lz4_dec.eof:
                    raise ClickHouseError(
                        271, "CANNOT_DECOMPRESS", "Truncated lz4 frame in request body"
                    )
                data = lz4_dec.unused_data
        elif enc == "zstd":
            if sys.version_info >= (3, 14):
                from compression import zstd
            else:
                from backports import zstd
            while data:
                zstd_dec = zstd.ZstdDecompressor()
                yield zstd_dec.decompress(data)
                if not zstd_dec.eof:
                    raise ClickHouseError(
                        271, "CANNOT_DECOMPRESS", "Truncated zstd frame in request body"
                    )
                data = zstd_dec.unused_data
        elif enc in ("gzip", "x-gzip", "deflate"):
            while data:
                zlib_dec = zlib.decompressobj(wbits=31 if "gzip" in enc else 15)
                yield zlib_dec.decompress(data)
                if not zlib_dec.eof:
                    raise ClickHouseError(
                        271, "CANNOT_DECOMPRESS", f"Truncated {enc} stream in request body"
                    )
                data = zlib_dec.unused_data
        elif enc == "br":
            import brotli  # type: ignore[import-not-found]

            yield brotli.decompress(data)
        else:
            raise ClickHouseError(48, "NOT_IMPLEMENTED", f"Unknown Content-Encoding: {encoding}")
    except ImportError as exc:
        raise ClickHouseError(
            48, "NOT_IMPLEMENTED", f"Content-Encoding {enc} needs {exc.name}"
        ) from exc
    except (RuntimeError, ValueError, zlib.error) as exc:  # lz4, zstd and zlib decode errors
        raise ClickHouseError(
            271, "CANNOT_DECOMPRESS", f"Cannot decompress request body: {exc}"
        ) from exc


def read_statement(chunks: Iterator[bytes]) -> tuple[Statement, bytes, Iterator[bytes]]:
    """Read just enough of the body to know the statement; return it, the head read and the rest."""
    head = bytearray()
    for chunk in chunks:
        head += chunk
        stmt = parse_statement(bytes(head), complete=False)
        if stmt is not None:
            return stmt, bytes(head), chunks
    data = bytes(head)
    stmt = parse_statement(data, complete=True)
    assert stmt is not None
    return stmt, data, iter(())


def split_params(params: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Split URL parameters into ClickHouse settings and query parameters (param_*)."""
    settings: dict[str, str] = {}
    query_params: dict[str, str] = {}
    for key, value in params.items():
        if key.startswith("param_"):
            query_params[key[len("param_") :]] = value
        elif key in _TRANSPORT_PARAMS or key in _IGNORED_SETTINGS or key.startswith("http_"):
            continue
        elif not _SETTING_NAME.match(key):
            raise ClickHouseError(115, "UNKNOWN_SETTING", f"Unknown setting '{key}'")
        else:
            settings[key] = value
    return settings, query_params


def quote(value: str) -> str:
    """A ClickHouse string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def quote_ident(name: str) -> str:
    """A ClickHouse identifier in backquotes."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def content_type(fmt: str) -> str:
    """The Content-Type ClickHouse answers a result in format `fmt` with."""
    lower = fmt.lower()
    if lower.startswith("tabseparated") or lower.startswith("tsv"):
        return "text/tab-separated-values; charset=UTF-8"
    if lower.startswith("json"):
        return "application/json; charset=UTF-8"
    if lower.startswith("csv"):
        return "text/csv; charset=UTF-8"
    return "application/octet-stream"


def prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    """`first`, then the chunks of `rest` (the ``query`` URL parameter before the body)."""
    yield first
    yield from rest
