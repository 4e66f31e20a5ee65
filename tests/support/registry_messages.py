"""Avro and Protobuf schemas and messages for the schema-registry tests, serialized by
confluent-kafka's own AvroSerializer / ProtobufSerializer (Confluent wire format)."""

from __future__ import annotations

import json
import uuid
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    timestamp_pb2,
    wrappers_pb2,
)

UTC = timezone.utc
T0 = datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)


def avro_order_schema(with_channel: bool = False) -> dict[str, Any]:
    """An order with logical types, a nested record two levels deep, unions; v2 adds an
    optional `channel` (additive evolution)."""
    fields: list[dict[str, Any]] = [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "qty", "type": "long"},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        },
        {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "shipped",
            "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}],
            "default": None,
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "paid", "type": "boolean"},
        {"name": "ratio", "type": "double"},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [
                    {"name": "name", "type": "string"},
                    {
                        "name": "address",
                        "type": {
                            "type": "record",
                            "name": "Address",
                            "fields": [
                                {"name": "city", "type": "string"},
                                {"name": "zip", "type": ["null", "string"], "default": None},
                            ],
                        },
                    },
                ],
            },
        },
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "string"}},
        {
            "name": "status",
            "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "SHIPPED"]},
        },
        {"name": "note", "type": ["null", "string"], "default": None},
    ]
    if with_channel:
        fields.append({"name": "channel", "type": ["null", "string"], "default": None})
    return {"type": "record", "name": "Order", "namespace": "shop", "fields": fields}


def avro_order(i: int, with_channel: bool = False) -> dict[str, Any]:
    order = {
        "id": str(uuid.UUID(int=i + 1)),
        "qty": i,
        "price": Decimal(f"{i}.{i % 100:02d}"),
        "created": T0 + timedelta(seconds=i),
        "shipped": None if i % 2 else T0 + timedelta(microseconds=i * 7 + 1),
        "day": date(2026, 3, 1) + timedelta(days=i % 30),
        "paid": i % 3 == 0,
        "ratio": i / 4,
        "customer": {
            "name": f"c{i}",
            "address": {"city": f"city{i % 5}", "zip": None if i % 4 == 0 else f"{10000 + i}"},
        },
        "tags": [f"t{i}", "x"],
        "attrs": {"k": str(i)},
        "status": "SHIPPED" if i % 2 else "NEW",
        "note": None if i % 5 else f"note {i}",
    }
    if with_channel:
        order["channel"] = f"web{i}"
    return order


def expected_avro_row(i: int, with_channel: bool | None = None) -> dict[str, Any]:
    """What the pipeline's fields hold for `avro_order(i)` (None: no channel field)."""
    o = avro_order(i, bool(with_channel))
    row = {
        "id": o["id"],
        "qty": i,
        "price": str(o["price"]),
        "created": o["created"],
        "shipped": o["shipped"],
        "day": o["day"].isoformat(),
        "paid": o["paid"],
        "ratio": o["ratio"],
        "customer.name": o["customer"]["name"],
        "customer.address.city": o["customer"]["address"]["city"],
        "customer.address.zip": o["customer"]["address"]["zip"],
        "tags": o["tags"],
        "attrs": [("k", str(i))],
        "status": o["status"],
        "note": o["note"],
    }
    if with_channel is not None:
        row["channel"] = o.get("channel")
    return row


def avro_serializer(registry_url: str, with_channel: bool = False) -> AvroSerializer:
    client = SchemaRegistryClient({"url": registry_url})
    return AvroSerializer(client, json.dumps(avro_order_schema(with_channel)))


def serialize(serializer: Any, topic: str, value: Any) -> bytes:
    return serializer(value, SerializationContext(topic, MessageField.VALUE))


# -------------------------------------------------------------------------- Protobuf


def _proto_file(with_channel: bool) -> descriptor_pb2.FileDescriptorProto:
    F = descriptor_pb2.FieldDescriptorProto
    name = "streamsift_test/order_v2.proto" if with_channel else "streamsift_test/order.proto"
    file = descriptor_pb2.FileDescriptorProto(
        name=name,
        package="streamsift.test" + ("2" if with_channel else ""),
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"],
    )
    pkg = "." + file.package
    address = file.message_type.add(name="Address")
    address.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    address.field.add(name="zip", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    order = file.message_type.add(name="Order")
    # Order is the file's second message: the serializer writes message index [1]
    status = order.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="SHIPPED", number=1)
    entry = order.nested_type.add(
        name="AttrsEntry", options=descriptor_pb2.MessageOptions(map_entry=True)
    )
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    opt = F.LABEL_OPTIONAL
    order.field.add(name="id", number=1, type=F.TYPE_STRING, label=opt)
    order.field.add(name="qty", number=2, type=F.TYPE_INT64, label=opt)
    order.field.add(name="price", number=3, type=F.TYPE_DOUBLE, label=opt)
    order.field.add(name="paid", number=4, type=F.TYPE_BOOL, label=opt)
    order.field.add(
        name="created",
        number=5,
        type=F.TYPE_MESSAGE,
        label=opt,
        type_name=".google.protobuf.Timestamp",
    )
    order.field.add(
        name="address", number=6, type=F.TYPE_MESSAGE, label=opt, type_name=f"{pkg}.Address"
    )
    order.field.add(name="tags", number=7, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    order.field.add(
        name="attrs", number=8, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
        type_name=f"{pkg}.Order.AttrsEntry",
    )  # fmt: skip
    order.field.add(
        name="status", number=9, type=F.TYPE_ENUM, label=opt, type_name=f"{pkg}.Order.Status"
    )
    order.field.add(
        name="note",
        number=10,
        type=F.TYPE_MESSAGE,
        label=opt,
        type_name=".google.protobuf.StringValue",
    )
    # proto3 `optional string coupon = 11;`: a synthetic oneof gives it presence
    order.oneof_decl.add(name="_coupon")
    order.field.add(
        name="coupon", number=11, type=F.TYPE_STRING, label=opt, oneof_index=0, proto3_optional=True
    )
    if with_channel:
        order.field.add(name="channel", number=12, type=F.TYPE_STRING, label=opt)
    return file


def proto_order_class(with_channel: bool = False) -> Any:
    """The generated-at-run-time class of the test's `Order` message (index [1])."""
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    file = _proto_file(with_channel)
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.Order"))


def proto_order(cls: Any, i: int, with_channel: bool = False) -> Any:
    msg = cls(id=f"o{i}", qty=i, price=i * 1.5, paid=i % 2 == 0, tags=[f"t{i}"], status=i % 2)
    msg.created.FromDatetime(T0 + timedelta(milliseconds=i))
    msg.address.city = f"city{i % 3}"
    msg.address.zip = 1000 + i
    msg.attrs["k"] = str(i)
    if i % 2:
        msg.note.value = f"note {i}"
        msg.coupon = f"C{i}"
    if with_channel:
        msg.channel = f"app{i}"
    return msg


def expected_proto_row(i: int, with_channel: bool | None = None) -> dict[str, Any]:
    row = {
        "id": f"o{i}",
        "qty": i,
        "price": i * 1.5,
        "paid": i % 2 == 0,
        "created": T0 + timedelta(milliseconds=i),
        "address.city": f"city{i % 3}",
        "address.zip": 1000 + i,
        "tags": [f"t{i}"],
        "attrs": [("k", str(i))],
        "status": "SHIPPED" if i % 2 else "NEW",
        "note": f"note {i}" if i % 2 else None,
        "coupon": f"C{i}" if i % 2 else None,
    }
    if with_channel is not None:
        row["channel"] = f"app{i}" if with_channel else None
    return row


def proto_serializer(registry_url: str, cls: Any) -> ProtobufSerializer:
    client = SchemaRegistryClient({"url": registry_url})
    return ProtobufSerializer(cls, client, {"use.deprecated.format": False})
