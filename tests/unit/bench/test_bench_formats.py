"""The pure parts of `streamsift bench --scenario formats`: the wire-format encoders, the
in-memory schema lookup, the exactness check and the report section."""

from __future__ import annotations

import json
import struct

import pytest

from streamsift.config.registry_schemas import RegistryError
from streamsift_bench import formats
from streamsift_bench.decode_timing import DecodeRate, measure_decode


def test_the_three_encodings_carry_the_same_order() -> None:
    values = formats.encoded(3)
    assert json.loads(values["json"][2])["customer"] == {
        "id": "c-2",
        "address": {"city": "city-2"},
    }
    # Confluent wire format: magic 0, the schema id; Protobuf then message indexes [0]
    assert values["avro"][0][:5] == struct.pack(">bI", 0, formats.AVRO_ID)
    assert values["protobuf"][0][:6] == struct.pack(">bIb", 0, formats.PROTO_ID, 0)


def test_the_schema_lookup_refuses_an_unknown_id_like_the_registry() -> None:
    lookup = formats.SchemaLookup(formats.schemas())
    assert lookup(formats.AVRO_ID).schema.schema_type == "AVRO"
    assert lookup(formats.PROTO_ID).schema.schema_type == "PROTOBUF"
    with pytest.raises(RegistryError, match="unknown schema id 9"):
        lookup(9)


def test_every_format_parses_into_the_same_rows() -> None:
    section = formats.run_formats(40, rounds=1, log=lambda _msg: None)
    assert section["exact"] is True
    assert {f: r["rows_ok"] for f, r in section["formats"].items()} == {
        "json": 40,
        "avro": 40,
        "protobuf": 40,
    }
    assert section["formats"]["json"]["cpu_ratio_to_json"] == 1.0


def rate(fmt: str, rows: list[dict], ok: int, cpu: float) -> DecodeRate:
    return DecodeRate(fmt, 2, 1, ok, cpu, cpu, 10.0, None if ok == 2 else "bad", rows)


def test_a_format_whose_rows_differ_or_fail_is_not_exact() -> None:
    same, other = [{"a": 1}, {"a": 2}], [{"a": 1}, {"a": 3}]
    section = formats.summarize(
        {
            "json": rate("json", same, 2, 100.0),
            "avro": rate("avro", other, 2, 25.0),
            "protobuf": rate("protobuf", same, 1, 10.0),
        }
    )
    assert [f["exact"] for f in section["formats"].values()] == [True, False, False]
    assert section["exact"] is False
    assert section["formats"]["avro"]["cpu_ratio_to_json"] == 0.25
    table = "\n".join(formats.markdown(section))
    assert "| avro | 2 | 10 | 25 | 25 | 0.250 | NO (2 parsed; None) |" in table
    assert "| protobuf | 2 | 10 | 10 | 10 | 0.100 | NO (1 parsed; bad) |" in table


def test_measure_decode_refuses_an_unknown_format_and_no_values() -> None:
    with pytest.raises(ValueError, match="format must be one of json, avro, protobuf"):
        measure_decode("xml", formats.FIELDS, [b"{}"])
    with pytest.raises(ValueError, match="at least one round and one value"):
        measure_decode("json", formats.FIELDS, [])
