"""What dedup compares, per mode: the byte key of a record and the hash of its payload.

`first` keys by the dedup key's values; `exact` by a hash of the canonical payload; `last`
keys by the dedup key and also compares payload hashes (docs/semantics.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

MODES = ("first", "last", "exact")


def encode_key(values: Sequence[object]) -> bytes:
    """A stable byte key for one record's dedup key values."""
    if len(values) == 1 and isinstance(values[0], str):
        return values[0].encode()
    return "\x1f".join("\x00" if v is None else repr(v) for v in values).encode()


def payload_hash(raw: bytes) -> bytes:
    """A 16-byte hash of a JSON payload in canonical form (keys sorted, no whitespace).

    Two payloads that differ only in key order or spacing hash the same; `1` and `1.0` differ.
    """
    canonical = json.dumps(
        json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.blake2b(canonical.encode(), digest_size=16).digest()


def record_keys(
    mode: str,
    table: pa.Table,
    key_columns: Sequence[str],
    payloads: Sequence[bytes | None],
    rows: Sequence[int],
) -> tuple[list[bytes] | pa.Array, list[bytes] | None]:
    """The keys of `rows` (indices into `table` and `payloads`) under `mode`, and their payload
    hashes where the mode compares payloads (`last`; else None). Mode `first` on one string
    column gives its keys as an Arrow binary array (`encode_key`'s bytes, made in C)."""
    if mode == "exact":
        return [payload_hash(payloads[i]) for i in rows], None  # type: ignore[arg-type]
    if mode == "first" and len(key_columns) == 1:
        column = table.column(key_columns[0])
        if pa.types.is_string(column.type):
            if len(rows) != len(column):
                column = column.take(pa.array(rows, pa.int64()))
            binary = pc.fill_null(column.cast(pa.binary()), pa.scalar(b"\x00", pa.binary()))
            return binary.combine_chunks(), None
    key_cols = [table.column(c).to_pylist() for c in key_columns]
    keys = [encode_key([col[i] for col in key_cols]) for i in rows]
    if mode == "first":
        return keys, None
    # last: by key, dropping only repeats of the key's latest payload
    return keys, [payload_hash(payloads[i]) for i in rows]  # type: ignore[arg-type]
