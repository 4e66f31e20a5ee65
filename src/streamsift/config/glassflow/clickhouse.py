"""A GlassFlow ClickHouse sink read as our `sink`: connection, table, column mapping, batching."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from streamsift.config.durations import format_duration
from streamsift.config.glassflow.reader import Reader, blank
from streamsift.config.glassflow.schema import Field
from streamsift.config.glassflow.values import column_type, decode_base64_password
from streamsift.config.types import CHType, check_compatible

CLICKHOUSE_HTTP_PORT = 8123
CLICKHOUSE_HTTPS_PORT = 8443
_HTTP_PORTS = {str(CLICKHOUSE_HTTP_PORT), str(CLICKHOUSE_HTTPS_PORT)}


@dataclass(frozen=True)
class Column:
    """One GlassFlow mapping entry as read (unchecked), with its path and key names."""

    field: str
    column: str
    type: str
    path: str
    field_key: str
    column_key: str
    type_key: str


def mapping_columns(
    r: Reader, entries: list[Any], container: str, field_key: str = "name"
) -> list[Column]:
    """The `{<field_key>, column_name, column_type}` entries of a GlassFlow mapping list."""
    columns = []
    shape = f"{{{field_key}, column_name, column_type}}"
    for _, path, entry in r.objects(entries, container, shape):
        columns.append(
            Column(
                field=entry.get(field_key),
                column=entry.get("column_name"),
                type=entry.get("column_type"),
                path=path,
                field_key=field_key,
                column_key="column_name",
                type_key="column_type",
            )
        )
    return columns


def check_sink_type(r: Reader, sink: dict[str, Any]) -> None:
    kind = sink.get("type")
    if kind is not None and str(kind).strip().lower() != "clickhouse":
        r.problem("sink.type", f"unsupported sink type {kind!r}; only clickhouse")


def read_sink(
    r: Reader,
    sink: dict[str, Any],
    conn: dict[str, Any] | None,
    conn_path: str,
    columns: list[Column],
    fields: dict[str, Field],
    source_id: str,
    *,
    base64_password: bool,
    empty_mapping: str,
) -> dict[str, Any]:
    """Our `sink` (without create_table) from GlassFlow's `sink`; `columns` map `fields`."""
    out: dict[str, Any] = {
        "clickhouse": read_connection(r, conn, conn_path, base64_password) if conn else {}
    }
    r.origin("sink", "sink")
    r.origin("sink.clickhouse", conn_path)
    table = r.text(sink, "table", "sink.table", empty="clickhouse table cannot be empty")
    if table is not None:
        out["table"] = table
    mapping = []
    for i, col in enumerate(columns):
        entry = read_column(r, col, fields, source_id)
        r.origin(f"sink.mapping[{i}]", col.path)
        r.origin(f"sink.mapping[{i}].field", f"{col.path}.{col.field_key}")
        r.origin(f"sink.mapping[{i}].column", f"{col.path}.{col.column_key}")
        r.origin(f"sink.mapping[{i}].type", f"{col.path}.{col.type_key}")
        if entry is not None:
            mapping.append(entry)
    if not columns:
        r.problem(
            empty_mapping,
            "no column mapping found: map at least one field to a ClickHouse column",
        )
    out["mapping"] = mapping
    size = sink.get("max_batch_size")
    if size is not None:
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            r.problem("sink.max_batch_size", "clickhouse max_batch_size must be greater than 0")
        else:
            out["max_batch_size"] = size
    delay = r.duration(sink, "max_delay_time", "sink.max_delay_time")
    if delay is not None and delay < timedelta(0):
        r.problem("sink.max_delay_time", "max_delay_time cannot be negative")
    elif delay:
        out["max_delay_time"] = format_duration(delay)
    return out


def read_connection(
    r: Reader, conn: dict[str, Any], path: str, base64_password: bool
) -> dict[str, Any]:
    """Our `sink.clickhouse`: host, HTTP port, database, credentials and TLS settings."""
    out: dict[str, Any] = {}
    host = r.text(conn, "host", f"{path}.host", empty="clickhouse host cannot be empty")
    if host is not None:
        out["host"] = host
    secure = r.flag(conn, "secure", f"{path}.secure")
    port = read_http_port(r, conn, path, secure)
    if port is not None:
        out["port"] = port
    out["database"] = r.text(conn, "database", f"{path}.database") or "default"
    out["username"] = r.text(conn, "username", f"{path}.username") or "default"
    password = conn.get("password")
    if password is not None and not isinstance(password, str):
        r.problem(f"{path}.password", f"must be a string, got {type(password).__name__}")
    elif password:
        if base64_password:
            decoded = decode_base64_password(password)
            if decoded == password:
                r.notes.append(
                    "the ClickHouse password is not base64 as GlassFlow v1/v2 expect: kept as written"
                )
            password = decoded
        out["password"] = password
    if secure:
        out["secure"] = True
    skip = (
        "skip_certificate_verification"
        if "skip_certificate_verification" in conn
        else "skip_certificate_check"
    )
    if r.flag(conn, skip, f"{path}.{skip}"):
        out["skip_certificate_verification"] = True
    r.origin("sink.clickhouse.skip_certificate_verification", f"{path}.{skip}")
    return out


def read_http_port(r: Reader, conn: dict[str, Any], path: str, secure: bool) -> int | None:
    """ClickHouse's HTTP port: `http_port`, else `port` if it is an HTTP one, else the default.

    GlassFlow's `port` is the native protocol port, which streamsift does not speak.
    """
    native = r.text(conn, "port", f"{path}.port")
    http = r.text(conn, "http_port", f"{path}.http_port")
    if http is not None:
        port_path = f"{path}.http_port"
        if native is not None and native != http:
            r.notes.append(
                f"sink.clickhouse.port is ClickHouse's HTTP port ({http}, GlassFlow's http_port); "
                f"GlassFlow's port {native} is the native protocol port, which streamsift does not use"
            )
    elif native in _HTTP_PORTS:
        http, port_path = native, f"{path}.port"
    else:
        http = str(CLICKHOUSE_HTTPS_PORT if secure else CLICKHOUSE_HTTP_PORT)
        port_path = f"{path}.http_port"
        r.notes.append(
            f"GlassFlow's port {native!r} is ClickHouse's native protocol port; streamsift speaks "
            f"HTTP and, with no http_port given, uses {http}. Check sink.clickhouse.port"
        )
    r.origin("sink.clickhouse.port", port_path)
    if not http.isdigit() or not 1 <= int(http) <= 65535:
        r.problem(port_path, f"{http!r} is not a port number")
        return None
    return int(http)


def read_column(
    r: Reader, col: Column, fields: dict[str, Field], source_id: str
) -> dict[str, str] | None:
    """One mapping entry, checked against the schema and our type compatibility rules."""
    fpath, cpath, tpath = (f"{col.path}.{k}" for k in (col.field_key, col.column_key, col.type_key))
    ok = True
    field = None
    if blank(col.field) or not isinstance(col.field, str):
        r.problem(fpath, "field name cannot be empty")
        ok = False
    else:
        field = fields.get(col.field.strip())
        if field is None and fields:
            where = f" for source_id {source_id!r}" if source_id else ""
            r.problem(fpath, f"mapping field {col.field!r} not found in schema{where}")
            ok = False
    if blank(col.column) or not isinstance(col.column, str):
        r.problem(cpath, "column name cannot be empty")
        ok = False
    ch = read_column_type(r, col.type, tpath)
    if ch is None:
        return None
    if field is not None and field.type is not None:
        problem = check_compatible(field.type, ch, col.field, str(col.column))
        if problem:
            r.problem(tpath, problem)
            ok = False
    if not ok:
        return None
    assert isinstance(col.field, str) and isinstance(col.column, str)
    # the field's own name: a stateless output replacing a schema field maps as `<name>_out`
    name = field.name if field is not None else col.field.strip()
    return {"field": name, "column": col.column.strip(), "type": str(ch)}


def read_column_type(r: Reader, value: object, path: str) -> CHType | None:
    """A ClickHouse type; the lowercase names of early GlassFlow files are repaired, with a note."""
    found = r.parsed(value, path, column_type)
    if found is None:
        return None
    result, repaired = found
    if repaired:
        r.notes.append(f"{path}: ClickHouse type {value!r} read as {str(result)!r}")
    return result
