"""One clean line for an error ClickHouse gave about a row's values, fit for a DLQ row.

The raw text repeats its prefix (`Code: 376. DB::Exception: Code: 376. DB::Exception: ...`),
names the temporary file chdb parsed the insert from, the server's version, the request URL,
and may hold a stack trace: none of that helps whoever reads the dead letter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_CHARS = 1000

_PREFIX = re.compile(r"^(?:.*?(?:Code: \d+\. DB::Exception: )+|insert into \S+: )")
_NAME = re.compile(r"\(([A-Z][A-Z0-9_]+)\)")
# Where the useful part ends: chdb's temp file, pipeline steps, version and URL trailers.
_TRAILERS = re.compile(
    r"(?:\s*\(in file/uri [^)]*\)|:? While executing |\s*\(version [^)]*\)|\s*\(for url |"
    r"\s*Stack trace)"
)


def row_error(code: int | None, message: str, secrets: Iterable[str] = ()) -> str:
    """`ClickHouse error <code>: <what ClickHouse said> (<ERROR_NAME>)`, on one line."""
    text = " ".join(message.split())
    names = _NAME.findall(text)
    text = _PREFIX.sub("", text)
    cut = _TRAILERS.search(text)
    if cut:
        text = text[: cut.start()]
    text = text.rstrip(" :.")
    if names and not text.endswith(f"({names[-1]})"):
        text += f" ({names[-1]})"
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return f"ClickHouse error {code}: {text}"[:MAX_CHARS]


def code_of(line: str) -> str:
    """The code in a line made by `row_error` (for the DLQ's `clickhouse_<code>` class)."""
    return line.removeprefix("ClickHouse error ").split(":", 1)[0]
