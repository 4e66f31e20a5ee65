"""The parse step of a source, timed: what `streamsift bench --scenario formats` measures.

A pipeline's executors turn each micro-batch of Kafka values into typed Arrow columns with
the parser of the source's format (JSON, or Avro / Protobuf in the Confluent wire format).
This module runs that same parser (streamsift.transforms.registry_decode) on a list of
values and reports events per wall-clock second and per CPU-second of this process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamsift.config.registry_schemas import SchemaBundle
from streamsift.config.types import FieldType
from streamsift.transforms.parse import FieldSpec
from streamsift.transforms.registry_decode import clear_decoders, make_parser

FORMATS = ("json", "avro", "protobuf")


@dataclass(frozen=True)
class DecodeRate:
    """The best of `rounds` parses of `events` values; `rows_ok` counts values that parsed."""

    fmt: str
    events: int
    rounds: int
    rows_ok: int
    events_per_s: float
    events_per_cpu_s: float
    bytes_per_event: float
    first_error: str | None
    rows: list[dict[str, Any]] = field(repr=False, default_factory=list)  # the parsed columns


def measure_decode(
    fmt: str,
    fields: Sequence[tuple[str, FieldType]],
    values: Sequence[bytes],
    schemas: Callable[[int], SchemaBundle] | None = None,
    rounds: int = 3,
) -> DecodeRate:
    """Parse `values` `rounds` times with the parser the executors use for `fmt` (schemas:
    the writer schema by id, as the registry client answers; fetched once, as on an executor)
    and keep the fastest round by wall clock and by CPU time."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if rounds < 1 or not values:
        raise ValueError("measure_decode needs at least one round and one value")
    specs = [FieldSpec(path, path.replace(".", "__"), kind) for path, kind in fields]
    clear_decoders()
    parser = make_parser(specs, fmt, schemas)
    wall = cpu = float("inf")
    errors: list[str | None] = []
    rows: list[dict[str, Any]] = []
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = parser.parse(values)
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
        errors = result.errors
    rows = result.table.to_pylist()
    bad = [e for e in errors if e is not None]
    n = len(values)
    return DecodeRate(
        fmt=fmt,
        events=n,
        rounds=rounds,
        rows_ok=n - len(bad),
        events_per_s=n / max(wall, 1e-9),
        events_per_cpu_s=n / max(cpu, 1e-9),
        bytes_per_event=sum(map(len, values)) / n,
        first_error=bad[0] if bad else None,
        rows=rows,
    )
