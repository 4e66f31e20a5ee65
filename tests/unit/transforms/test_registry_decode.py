"""Avro and Protobuf messages serialized by confluent-kafka's own serializers, decoded by
streamsift's registry parser into the pipeline's typed fields; bad messages flagged with
their reason; fields derived from the registry's schemas."""

from __future__ import annotations

import json
import struct

import pytest

from streamsift.config.registry_schemas import avro_fields, schema_fields
from streamsift.config.types import FieldType
from streamsift.sources.schema_registry import RegistryClient, WriterSchemas, clear_cache
from streamsift.transforms.parse import FieldSpec
from streamsift.transforms.registry_decode import (
    RegistryParser,
    clear_decoders,
    decode_error_class,
    read_message_indexes,
)
from support.registry_messages import (
    avro_order,
    avro_order_schema,
    avro_serializer,
    expected_avro_row,
    expected_proto_row,
    proto_order,
    proto_order_class,
    proto_serializer,
    serialize,
)

AVRO_FIELDS = [
    ("id", FieldType.STRING),
    ("qty", FieldType.INT),
    ("price", FieldType.STRING),
    ("created", FieldType.TIMESTAMP),
    ("shipped", FieldType.TIMESTAMP),
    ("day", FieldType.STRING),
    ("paid", FieldType.BOOL),
    ("ratio", FieldType.FLOAT),
    ("customer.name", FieldType.STRING),
    ("customer.address.city", FieldType.STRING),
    ("customer.address.zip", FieldType.STRING),
    ("tags", FieldType.ARRAY),
    ("attrs", FieldType.MAP),
    ("status", FieldType.STRING),
    ("note", FieldType.STRING),
]
PROTO_FIELDS = [
    ("id", FieldType.STRING),
    ("qty", FieldType.INT),
    ("price", FieldType.FLOAT),
    ("paid", FieldType.BOOL),
    ("created", FieldType.TIMESTAMP),
    ("address.city", FieldType.STRING),
    ("address.zip", FieldType.INT),
    ("tags", FieldType.ARRAY),
    ("attrs", FieldType.MAP),
    ("status", FieldType.STRING),
    ("note", FieldType.STRING),
    ("coupon", FieldType.STRING),
]


@pytest.fixture(autouse=True)
def _fresh_caches():
    clear_cache()
    clear_decoders()


def avro(url: str) -> WriterSchemas:
    return WriterSchemas(RegistryClient(url))


def protobuf(url: str) -> WriterSchemas:
    return WriterSchemas(RegistryClient(url), protobuf=True)


def registry_fields(url: str, subject: str, message: str | None = None):
    """The fields a Protobuf subject's latest schema gives (`schema.from_registry`)."""
    bundle = RegistryClient(url).subject_schema(subject, protobuf=True)
    return schema_fields(bundle, "protobuf", subject, message)


def specs(fields):
    return [FieldSpec(name, name.replace(".", "__"), ftype) for name, ftype in fields]


def rows(result, fields):
    out = []
    for record in result.table.to_pylist():
        out.append({name: record[name.replace(".", "__")] for name, _ in fields})
    return out


def test_avro_fields_are_derived_with_dot_paths_and_logical_types() -> None:
    assert avro_fields(avro_order_schema()) == AVRO_FIELDS
    assert avro_fields(avro_order_schema(with_channel=True))[-1] == ("channel", FieldType.STRING)


def test_avro_from_confluent_serializer_decodes_exactly(schema_registry) -> None:
    ser = avro_serializer(schema_registry.url)
    values = [serialize(ser, "dec-avro", avro_order(i)) for i in range(12)]
    parser = RegistryParser(specs(AVRO_FIELDS), "avro", avro(schema_registry.url))
    result = parser.parse(values)
    assert result.errors == [None] * 12
    assert rows(result, AVRO_FIELDS) == [expected_avro_row(i) for i in range(12)]


def test_avro_evolution_decodes_each_message_with_its_writer_schema(schema_registry) -> None:
    old, new = avro_serializer(schema_registry.url), avro_serializer(schema_registry.url, True)
    values = [
        serialize(new if i % 2 else old, "dec-avro-evo", avro_order(i, bool(i % 2)))
        for i in range(6)
    ]
    ids = {struct.unpack(">I", v[1:5])[0] for v in values}
    assert len(ids) == 2
    fields = AVRO_FIELDS + [("channel", FieldType.STRING)]
    result = RegistryParser(specs(fields), "avro", avro(schema_registry.url)).parse(values)
    assert result.errors == [None] * 6
    assert rows(result, fields) == [expected_avro_row(i, bool(i % 2)) for i in range(6)]


def test_protobuf_from_confluent_serializer_decodes_exactly(schema_registry) -> None:
    cls = proto_order_class()
    ser = proto_serializer(schema_registry.url, cls)
    values = [serialize(ser, "dec-proto", proto_order(cls, i)) for i in range(8)]
    assert read_message_indexes(memoryview(values[0])[5:])[0] == [1]
    derived = registry_fields(schema_registry.url, "dec-proto-value", message="Order")
    assert derived == PROTO_FIELDS
    result = RegistryParser(specs(PROTO_FIELDS), "protobuf", protobuf(schema_registry.url)).parse(
        values
    )
    assert result.errors == [None] * 8
    assert rows(result, PROTO_FIELDS) == [expected_proto_row(i) for i in range(8)]


def test_protobuf_evolution_with_a_new_field(schema_registry) -> None:
    old_cls, new_cls = proto_order_class(), proto_order_class(with_channel=True)
    old = proto_serializer(schema_registry.url, old_cls)
    new = proto_serializer(schema_registry.url, new_cls)
    values = [
        serialize(new, "dec-proto-evo", proto_order(new_cls, i, True))
        if i % 2
        else serialize(old, "dec-proto-evo", proto_order(old_cls, i))
        for i in range(4)
    ]
    fields = PROTO_FIELDS + [("channel", FieldType.STRING)]
    result = RegistryParser(specs(fields), "protobuf", protobuf(schema_registry.url)).parse(values)
    assert result.errors == [None] * 4
    assert rows(result, fields) == [expected_proto_row(i, bool(i % 2)) for i in range(4)]


def test_bad_messages_are_flagged_with_reason_and_class(schema_registry) -> None:
    ser = avro_serializer(schema_registry.url)
    good = serialize(ser, "dec-bad", avro_order(1))
    bad = {
        "garbage": b"\x00" + good[1:5] + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        "trailing": good + b"\x01\x02",
        "unknown id": b"\x00" + struct.pack(">I", 77_777) + good[5:],
        "json": json.dumps({"a": 1}).encode(),
        "short": b"\x00\x01",
        "tombstone": None,
    }
    parser = RegistryParser(specs(AVRO_FIELDS), "avro", avro(schema_registry.url))
    result = parser.parse([good, *bad.values()])
    errors = dict(zip(["good", *bad], result.errors, strict=True))
    assert errors["good"] is None
    assert errors["unknown id"].startswith("unknown schema id 77777: ")
    assert "not found" in errors["unknown id"].lower()
    assert "first byte is 0x7b" in errors["json"]
    assert "fewer than the 5-byte header" in errors["short"]
    assert "fewer than the 5-byte header" in errors["tombstone"]
    assert "2 bytes left over" in errors["trailing"]
    classes = {k: decode_error_class(v) for k, v in errors.items() if v}
    assert classes == {
        "garbage": "undecodable",
        "trailing": "undecodable",
        "unknown id": "unknown_schema_id",
        "json": "not_wire_format",
        "short": "not_wire_format",
        "tombstone": "not_wire_format",
    }
    # the bad rows hold nulls; the good one its values
    assert rows(result, AVRO_FIELDS)[0] == expected_avro_row(1)
    assert all(v is None for r in rows(result, AVRO_FIELDS)[1:] for v in r.values())


def test_protobuf_garbage_and_a_type_mismatch(schema_registry) -> None:
    cls = proto_order_class()
    good = serialize(
        proto_serializer(schema_registry.url, cls), "dec-proto-bad", proto_order(cls, 3)
    )
    garbage = good[:6] + b"\x0a\xff\xff\xff\xff\x0f"  # a length past the end
    client = protobuf(schema_registry.url)
    result = RegistryParser(specs(PROTO_FIELDS), "protobuf", client).parse([good, garbage])
    assert result.errors[0] is None
    assert decode_error_class(result.errors[1]) == "undecodable", result.errors[1]
    # a field declared with a type its values do not have is a type mismatch, by field
    wrong = RegistryParser(specs([("qty", FieldType.BOOL)]), "protobuf", client).parse([good])
    assert wrong.errors == ["field 'qty': expected bool, got number"]
    assert decode_error_class(wrong.errors[0]) is None  # the DLQ calls it type_mismatch


def test_types_without_a_field_type_of_their_own_become_json(schema_registry) -> None:
    schema = {
        "type": "record",
        "name": "Node",
        "fields": [
            {"name": "either", "type": ["null", "string", "long"]},
            {"name": "items", "type": {"type": "array", "items": {
                "type": "record", "name": "Item", "fields": [{"name": "sku", "type": "string"}]}}},
            {"name": "next", "type": ["null", "Node"], "default": None},
            {"name": "when", "type": {"type": "int", "logicalType": "time-millis"}},
        ],
    }  # fmt: skip
    derived = avro_fields(schema)
    assert derived == [
        ("either", FieldType.JSON),
        ("items", FieldType.JSON),
        ("next", FieldType.JSON),  # recursive: no fixed depth to flatten
        ("when", FieldType.STRING),
    ]
    from datetime import time

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer

    ser = AvroSerializer(SchemaRegistryClient({"url": schema_registry.url}), json.dumps(schema))
    value = {
        "either": 5,
        "items": [{"sku": "a"}, {"sku": "b"}],
        "next": {"either": "x", "items": [], "next": None, "when": time(1, 2, 3, 4000)},
        "when": time(12, 30, 0, 250000),
    }
    result = RegistryParser(specs(derived), "avro", avro(schema_registry.url)).parse(
        [serialize(ser, "dec-json", value)]
    )
    assert result.errors == [None]
    assert rows(result, derived) == [
        {
            "either": "5",
            "items": '[{"sku":"a"},{"sku":"b"}]',
            "next": '{"either":"x","items":[],"next":null,"when":"01:02:03.004000"}',
            "when": "12:30:00.250000",
        }
    ]


def test_protobuf_schema_with_a_reference_to_another_subject(schema_registry) -> None:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    common = descriptor_pb2.FileDescriptorProto(
        name="refs/common.proto", package="refs", syntax="proto3"
    )
    money = common.message_type.add(name="Money")
    money.field.add(name="units", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    money.field.add(name="currency", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    main = descriptor_pb2.FileDescriptorProto(
        name="refs/payment.proto", package="refs", syntax="proto3", dependency=["refs/common.proto"]
    )
    payment = main.message_type.add(name="Payment")
    payment.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    payment.field.add(
        name="amount",
        number=2,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=".refs.Money",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(common)
    pool.Add(main)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("refs.Payment"))
    msg = cls(id="p1")
    msg.amount.units, msg.amount.currency = 12, "EUR"
    value = serialize(proto_serializer(schema_registry.url, cls), "dec-refs", msg)
    registered = RegistryClient(schema_registry.url).subject_version("dec-refs-value")
    assert registered.references  # the serializer registered common.proto as its own subject
    client = protobuf(schema_registry.url)
    derived = registry_fields(schema_registry.url, "dec-refs-value")
    assert derived == [
        ("id", FieldType.STRING),
        ("amount.units", FieldType.INT),
        ("amount.currency", FieldType.STRING),
    ]
    result = RegistryParser(specs(derived), "protobuf", client).parse([value])
    assert result.errors == [None]
    assert rows(result, derived) == [{"id": "p1", "amount.units": 12, "amount.currency": "EUR"}]
