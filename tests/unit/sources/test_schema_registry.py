"""The test registry (support.schema_registry) answers confluent-kafka's own
SchemaRegistryClient and serializers, and streamsift's registry client, the same way."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from streamsift.sources.schema_registry import RegistryClient, RegistryError, clear_cache
from support.schema_registry import build_registry_app
from support.servers import ServerThread

AVRO_V1 = '{"type":"record","name":"A","fields":[{"name":"x","type":"long"}]}'
AVRO_V2 = (
    '{"type":"record","name":"A","fields":[{"name":"x","type":"long"},'
    '{"name":"y","type":["null","string"],"default":null}]}'
)


def test_register_get_by_id_latest_and_versions(schema_registry) -> None:
    client = SchemaRegistryClient({"url": schema_registry.url})
    first = client.register_schema("sr-unit-a-value", Schema(AVRO_V1, "AVRO"))
    again = client.register_schema("sr-unit-a-value", Schema(AVRO_V1, "AVRO"))
    second = client.register_schema("sr-unit-a-value", Schema(AVRO_V2, "AVRO"))
    other = SchemaRegistryClient({"url": schema_registry.url}).register_schema(
        "sr-unit-b-value", Schema(AVRO_V1, "AVRO")
    )
    assert first == again == other  # one id per schema, across subjects
    assert second != first
    fresh = SchemaRegistryClient({"url": schema_registry.url})  # no client-side cache
    assert fresh.get_schema(second).schema_str == AVRO_V2
    latest = fresh.get_latest_version("sr-unit-a-value")
    assert (latest.schema_id, latest.version) == (second, 2)
    assert fresh.get_version("sr-unit-a-value", 1).schema_id == first
    assert fresh.get_versions("sr-unit-a-value") == [1, 2]
    assert fresh.lookup_schema("sr-unit-a-value", Schema(AVRO_V1, "AVRO")).version == 1
    assert "sr-unit-a-value" in fresh.get_subjects()

    ours = RegistryClient(schema_registry.url)
    clear_cache()
    assert ours.schema_by_id(second).schema == AVRO_V2
    assert ours.subject_version("sr-unit-a-value").schema_id == second
    assert ours.subject_version("sr-unit-a-value", 1).schema_id == first


def test_unknown_ids_and_subjects_are_404_with_confluent_codes(schema_registry) -> None:
    client = SchemaRegistryClient({"url": schema_registry.url})
    with pytest.raises(SchemaRegistryError) as err:
        client.get_schema(99_999)
    assert (err.value.http_status_code, err.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as err:
        client.get_latest_version("no-such-subject")
    assert (err.value.http_status_code, err.value.error_code) == (404, 40401)
    with pytest.raises(RegistryError) as ours:
        RegistryClient(schema_registry.url).schema_by_id(99_999)
    assert ours.value.status == 404 and "99999" in str(ours.value)


def test_basic_auth_is_required_when_set_and_password_stays_out_of_errors() -> None:
    with ServerThread(build_registry_app(username="reader", password="s3cret-pw")) as server:
        ok = SchemaRegistryClient(
            {"url": server.url, "basic.auth.user.info": "reader:s3cret-pw"}
        ).register_schema("auth-value", Schema(AVRO_V1, "AVRO"))
        clear_cache()
        assert RegistryClient(server.url, "reader", "s3cret-pw").schema_by_id(ok).schema
        with pytest.raises(RegistryError) as err:
            RegistryClient(server.url, "reader", "wrong-pw").schema_by_id(ok)
        assert err.value.status == 401
        assert "wrong-pw" not in str(err.value) and "username/password" in str(err.value)
        assert "wrong-pw" not in repr(RegistryClient(server.url, "reader", "wrong-pw"))
