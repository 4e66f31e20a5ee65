"""`streamsift bench --scenario formats`: decode speed of JSON, Avro and Protobuf.

The same orders (a nested record, a timestamp, a float, a bool, an array; ~230 bytes as
JSON) are encoded as JSON, as Avro and as Protobuf in the Confluent wire format (magic byte
0, a 4-byte schema id, for Protobuf the message indexes), with fastavro and protobuf directly
from the bench's own schemas, then parsed into the same eight pipeline fields by the parser a
pipeline's executors use (timed by decode_timing.py). What is measured is the parse step alone
on one core (no Kafka, no Spark, no ClickHouse): the schema lookup answers from memory, as
the registry client's per-process cache does after its first fetch. The three parses must
give the same rows (checked), else the run is marked not exact.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from streamsift.config.registry_schemas import RegisteredSchema, RegistryError, SchemaBundle
from streamsift.config.types import FieldType
from streamsift_bench.decode_timing import FORMATS, DecodeRate, measure_decode

AVRO_ID, PROTO_ID = 1, 2
FIELDS: list[tuple[str, FieldType]] = [
    ("order_id", FieldType.STRING),
    ("qty", FieldType.INT),
    ("price", FieldType.FLOAT),
    ("paid", FieldType.BOOL),
    ("created", FieldType.TIMESTAMP),
    ("status", FieldType.STRING),
    ("tags", FieldType.ARRAY),
    ("customer.address.city", FieldType.STRING),
]
EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)
STATUSES = ("new", "paid", "shipped", "cancelled")

AVRO_SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "order_id", "type": "string"},
        {"name": "qty", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": "string"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [
                    {"name": "id", "type": "string"},
                    {
                        "name": "address",
                        "type": {
                            "type": "record",
                            "name": "Address",
                            "fields": [{"name": "city", "type": "string"}],
                        },
                    },
                ],
            },
        },
    ],
}


def order(i: int) -> dict[str, Any]:
    """The i-th order (deterministic), as the Avro writer takes it."""
    return {
        "order_id": f"o-{i:09d}",
        "qty": 1 + i % 9,
        "price": round(1.25 + (i % 400) * 0.5, 2),
        "paid": i % 3 != 0,
        "created": EPOCH + timedelta(milliseconds=i * 37),
        "status": STATUSES[i % len(STATUSES)],
        "tags": ["web", f"t{i % 7}"],
        "customer": {"id": f"c-{i % 1000}", "address": {"city": f"city-{i % 50}"}},
    }


def json_value(o: dict[str, Any]) -> bytes:
    doc = dict(o, created=o["created"].isoformat().replace("+00:00", "Z"))
    return json.dumps(doc, separators=(",", ":")).encode()


def avro_encoder() -> Any:
    """A function from an order to its Avro value in the wire format."""
    import fastavro

    parsed = fastavro.parse_schema(AVRO_SCHEMA)
    header = struct.pack(">bI", 0, AVRO_ID)

    def encode(o: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        buf.write(header)
        fastavro.schemaless_writer(buf, parsed, o)
        return buf.getvalue()

    return encode


def proto_file() -> Any:
    """The bench's Protobuf schema (bench.proto: Order, Customer, Address) as a
    FileDescriptorProto; `created` is a google.protobuf.Timestamp."""
    from google.protobuf import descriptor_pb2

    F = descriptor_pb2.FieldDescriptorProto
    f = descriptor_pb2.FileDescriptorProto(
        name="bench.proto",
        package="bench",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )

    def message(name: str, fields: list[tuple[str, int, int, str]]) -> None:
        m = f.message_type.add(name=name)
        for number, (fname, kind, label, type_name) in enumerate(fields, start=1):
            fd = m.field.add(name=fname, number=number, type=kind, label=label)
            if type_name:
                fd.type_name = type_name

    one, many = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message(
        "Order",
        [
            ("order_id", F.TYPE_STRING, one, ""),
            ("qty", F.TYPE_INT64, one, ""),
            ("price", F.TYPE_DOUBLE, one, ""),
            ("paid", F.TYPE_BOOL, one, ""),
            ("created", F.TYPE_MESSAGE, one, ".google.protobuf.Timestamp"),
            ("status", F.TYPE_STRING, one, ""),
            ("tags", F.TYPE_STRING, many, ""),
            ("customer", F.TYPE_MESSAGE, one, ".bench.Customer"),
        ],
    )
    message(
        "Customer",
        [("id", F.TYPE_STRING, one, ""), ("address", F.TYPE_MESSAGE, one, ".bench.Address")],
    )
    message("Address", [("city", F.TYPE_STRING, one, "")])
    return f


def proto_encoder() -> Any:
    """A function from an order to its Protobuf value in the wire format (message index [0],
    written as the single byte 0)."""
    from google.protobuf import descriptor_pool, message_factory, timestamp_pb2

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(proto_file())
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Order"))
    header = struct.pack(">bIb", 0, PROTO_ID, 0)

    def encode(o: dict[str, Any]) -> bytes:
        m = cls(
            order_id=o["order_id"],
            qty=o["qty"],
            price=o["price"],
            paid=o["paid"],
            status=o["status"],
            tags=o["tags"],
        )
        m.created.FromDatetime(o["created"])
        m.customer.id = o["customer"]["id"]
        m.customer.address.city = o["customer"]["address"]["city"]
        return header + m.SerializeToString()

    return encode


def schemas() -> dict[int, SchemaBundle]:
    """The bench's writer schemas by id, as the registry serves them (Protobuf: the
    `?format=serialized` FileDescriptorProto, base64)."""
    avro = RegisteredSchema(AVRO_ID, json.dumps(AVRO_SCHEMA), "AVRO")
    proto_text = base64.b64encode(proto_file().SerializeToString()).decode()
    proto = RegisteredSchema(
        PROTO_ID,
        proto_text,
        "PROTOBUF",
        references=(("google/protobuf/timestamp.proto", "google/protobuf/timestamp.proto", 0),),
    )
    return {AVRO_ID: SchemaBundle(avro), PROTO_ID: SchemaBundle(proto)}


class SchemaLookup:
    """The writer schema by id from memory; an unknown id is refused like the registry does."""

    def __init__(self, by_id: dict[int, SchemaBundle]) -> None:
        self.by_id = by_id

    def __call__(self, schema_id: int) -> SchemaBundle:
        try:
            return self.by_id[schema_id]
        except KeyError:
            raise RegistryError(f"unknown schema id {schema_id}") from None


def encoded(events: int) -> dict[str, list[bytes]]:
    """The same `events` orders in each format."""
    orders = [order(i) for i in range(events)]
    to_avro, to_proto = avro_encoder(), proto_encoder()
    return {
        "json": [json_value(o) for o in orders],
        "avro": [to_avro(o) for o in orders],
        "protobuf": [to_proto(o) for o in orders],
    }


def run_formats(events: int, rounds: int = 3, log: Any = print) -> dict[str, Any]:
    """Measure the three formats on the same `events` orders; the results.json section."""
    if events <= 0 or rounds <= 0:
        raise ValueError("--events and --rounds must be positive")
    values = encoded(events)
    lookup = SchemaLookup(schemas())
    rates: dict[str, DecodeRate] = {}
    for fmt in FORMATS:
        log(f"formats: parsing {events:,} {fmt} events, {rounds} rounds")
        rates[fmt] = measure_decode(fmt, FIELDS, values[fmt], lookup, rounds)
    return summarize(rates)


def summarize(rates: dict[str, DecodeRate]) -> dict[str, Any]:
    """Per format: events/s (wall and CPU), bytes per event, ratio to JSON by CPU-second, and
    whether every event parsed into the same row as JSON's."""
    reference = rates["json"].rows
    out: dict[str, Any] = {"measured": "parse step alone, one core", "fields": len(FIELDS)}
    per_format = {}
    for fmt, r in rates.items():
        exact = r.rows_ok == r.events and r.rows == reference
        per_format[fmt] = {
            "events": r.events,
            "rounds": r.rounds,
            "rows_ok": r.rows_ok,
            "exact": exact,
            "first_error": r.first_error,
            "events_per_s": round(r.events_per_s),
            "events_per_cpu_s": round(r.events_per_cpu_s),
            "bytes_per_event": round(r.bytes_per_event, 1),
            "cpu_ratio_to_json": round(r.events_per_cpu_s / rates["json"].events_per_cpu_s, 3),
        }
    out["formats"] = per_format
    out["exact"] = all(f["exact"] for f in per_format.values())
    return out


def markdown(section: dict[str, Any]) -> list[str]:
    """The report's "Formats" section."""
    lines = [
        "## Formats: decode speed",
        "",
        f"The same orders ({section['fields']} fields: nested record, timestamp, float, bool, "
        "array) as JSON, Avro and Protobuf in the Confluent wire format, parsed by the "
        f"executors' parser; {section['measured']} (no Kafka, Spark or ClickHouse). Best of "
        "the rounds; events per CPU-second is what a shared machine disturbs least.",
        "",
        "| format | events | bytes/event | events/s | events/CPU-s | CPU ratio to JSON | "
        "rows as JSON's |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for fmt, f in section["formats"].items():
        check = "yes" if f["exact"] else f"NO ({f['rows_ok']:,} parsed; {f['first_error']})"
        lines.append(
            f"| {fmt} | {f['events']:,} | {f['bytes_per_event']:,.0f} | "
            f"{f['events_per_s']:,} | {f['events_per_cpu_s']:,} | "
            f"{f['cpu_ratio_to_json']:.3f} | {check} |"
        )
    return lines + [""]


def bench_formats(
    out: Path, events: int, rounds: int = 3, command: str = "", log: Any = print
) -> dict[str, Any]:
    """The whole scenario: measure, then write results.json and report.md into `out`."""
    from streamsift_bench.common import write_json
    from streamsift_bench.measures import load_average, machine_info

    started = time.time()
    machine = machine_info()
    section = run_formats(events, rounds, log)
    machine["load_average_end"] = load_average()
    results = {
        "schema": 1,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "command": command,
        "options": {"scenario": "formats", "events": events, "rounds": rounds},
        "machine": machine,
        "formats": section,
        "all_exact": section["exact"],
        "duration_seconds": round(time.time() - started, 1),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", results)
    (out / "report.md").write_text("\n".join(report_lines(results)))
    return results


def report_lines(results: dict[str, Any]) -> list[str]:
    """report.md of a formats run: when, on what, then the Formats section."""
    m = results["machine"]
    return [
        "# streamsift benchmark report: formats",
        "",
        f"Run {results['started_at']} in {results['duration_seconds']:,.0f} s: "
        f"`{results.get('command') or 'streamsift bench --scenario formats'}`",
        "",
        f"Machine: {m['cores']} cores ({m['cpu'] or 'unknown CPU'}), Python {m['python']}. "
        f"Load average at start {m.get('load_average_start')}, at end "
        f"{m.get('load_average_end')} (a shared machine: compare events per CPU-second).",
        "",
        *markdown(results["formats"]),
    ]
