"""Decode speed of the three source formats, events/s on one core: the parse step alone
(no Kafka, no Spark), as each executor runs it per micro-batch.

The same orders (nested record, timestamp, decimal, array, map; ~300 bytes as JSON) are
encoded as JSON, as Avro and as Protobuf in the Confluent wire format by confluent-kafka's
own serializers against the test registry on a loopback port, then parsed into the same
pipeline fields by streamsift's parsers. Schemas are fetched once and cached, as on an
executor. Usage: .venv/bin/python scripts/bench_decode.py [--events N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from api_server import ServerThread  # noqa: E402
from registry_messages import (  # noqa: E402
    avro_order,
    avro_serializer,
    proto_order,
    proto_order_class,
    proto_serializer,
    serialize,
)
from streamsift.config.types import FieldType  # noqa: E402
from streamsift.sources.schema_registry import RegistryClient, WriterSchemas  # noqa: E402
from streamsift.testing.schema_registry import build_registry_app  # noqa: E402
from streamsift.transforms.parse import FieldSpec  # noqa: E402
from streamsift.transforms.registry_decode import make_parser  # noqa: E402

FIELDS = [
    ("qty", FieldType.INT),
    ("created", FieldType.TIMESTAMP),
    ("paid", FieldType.BOOL),
    ("tags", FieldType.ARRAY),
    ("status", FieldType.STRING),
    ("note", FieldType.STRING),
]
AVRO_ONLY = [("customer.address.city", FieldType.STRING), ("price", FieldType.STRING)]
PROTO_ONLY = [("address.city", FieldType.STRING), ("price", FieldType.FLOAT)]


def json_order(i: int) -> bytes:
    o = avro_order(i)
    o["created"] = o["created"].isoformat()
    o["price"], o["day"] = str(o["price"]), o["day"].isoformat()
    o["shipped"] = o["shipped"].isoformat() if o["shipped"] else None
    return json.dumps(o).encode()


def rate(parser, values: list[bytes], rounds: int) -> tuple[float, float]:
    """Events per wall-clock second and per CPU second of this process (the latter is what
    a shared machine disturbs least), best round of each."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = parser.parse(values)
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, time.process_time() - started_cpu)
        assert all(e is None for e in result.errors), result.errors[:3]
    return len(values) / wall, len(values) / cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    n = args.events
    with ServerThread(build_registry_app()) as server:
        client = RegistryClient(server.url)
        avro = avro_serializer(server.url)
        cls = proto_order_class()
        proto = proto_serializer(server.url, cls)
        values = {
            "json": [json_order(i) for i in range(n)],
            "avro": [serialize(avro, "bench", avro_order(i)) for i in range(n)],
            "protobuf": [serialize(proto, "bench-p", proto_order(cls, i)) for i in range(n)],
        }
        extra = {"json": AVRO_ONLY, "avro": AVRO_ONLY, "protobuf": PROTO_ONLY}
        print(f"{n:,} events, {args.rounds} rounds, best round; 8 fields each")
        for fmt, vals in values.items():
            specs = [FieldSpec(p, p.replace(".", "__"), t) for p, t in FIELDS + extra[fmt]]
            parser = make_parser(specs, fmt, WriterSchemas(client, fmt == "protobuf"))
            size = sum(map(len, vals)) / n
            wall, cpu = rate(parser, vals, args.rounds)
            print(
                f"  {fmt:<9} {wall:>10,.0f} events/s  {cpu:>10,.0f} events/CPU-s  "
                f"({size:.0f} B/event)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
