"""The service's SQLite store: records, versions, history, and secrets at rest."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from streamsift.config import parse_pipeline
from streamsift.errors import ConflictError, NotFoundError
from streamsift.service.database import ServiceDatabase
from streamsift.service.errors import SecretKeyError
from streamsift.service.lifecycle import DesiredState, State
from streamsift.service.secret_box import KEY_ENV
from streamsift.sources.schema_registry import RegistryClient

CH_PASSWORD = "ch-pass-Zq81"
KAFKA_PASSWORD = "kafka-pass-Wm42"
PROP_SECRET = "prop-secret-Hx07"


def document(name: str = "orders") -> dict[str, Any]:
    return {
        "name": name,
        "source": {
            "bootstrap_servers": "127.0.0.1:9092",
            "topic": "orders",
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "mechanism": "PLAIN",
                "username": "u",
                "password": KAFKA_PASSWORD,
            },
            "properties": {"ssl.key.password": PROP_SECRET, "client.id": "x"},
            "schema": {"fields": [{"name": "id", "type": "string"}]},
        },
        "sink": {
            "clickhouse": {"host": "localhost", "port": 8123, "password": CH_PASSWORD},
            "table": "orders",
            "mapping": [{"field": "id", "column": "id", "type": "String"}],
        },
    }


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ServiceDatabase:
    monkeypatch.delenv(KEY_ENV, raising=False)
    s = ServiceDatabase(tmp_path)
    yield s
    s.close()


def add(store: ServiceDatabase, name: str = "orders") -> None:
    doc = document(name)
    store.add(name, doc, parse_pipeline(doc))


def test_a_new_pipeline_is_created_with_version_1_and_a_history(store: ServiceDatabase) -> None:
    add(store)
    record = store.get("orders")
    assert (record.state, record.desired_state, record.version) == (
        State.CREATED,
        DesiredState.RUNNING,
        1,
    )
    store.set_state("orders", State.RUNNING)
    store.set_state("orders", State.FAILED, error="boom")
    record = store.get("orders")
    assert record.state is State.FAILED and record.error == "boom" and record.error_at
    changes = [(c.from_state, c.to_state, c.error) for c in store.history("orders")]
    assert changes == [
        (None, State.CREATED, None),
        (State.CREATED, State.RUNNING, None),
        (State.RUNNING, State.FAILED, "boom"),
    ]


def test_every_edit_is_a_new_version(store: ServiceDatabase) -> None:
    add(store)
    doc = document()
    doc["sink"]["table"] = "orders2"
    assert store.add_version("orders", doc, parse_pipeline(doc)) == 2
    assert store.get("orders").version == 2
    assert store.document("orders")["sink"]["table"] == "orders2"
    assert store.document("orders", version=1)["sink"]["table"] == "orders"


def test_a_second_pipeline_of_the_same_name_is_a_conflict(store: ServiceDatabase) -> None:
    add(store)
    with pytest.raises(ConflictError):
        add(store)


def test_unknown_pipelines_are_not_found(store: ServiceDatabase) -> None:
    for call in (store.get, store.history, store.delete, store.document):
        with pytest.raises(NotFoundError):
            call("nope")


def test_delete_forgets_everything(store: ServiceDatabase) -> None:
    add(store)
    store.delete("orders")
    assert store.list() == []
    add(store)  # the name is free again
    assert store.get("orders").version == 1


def test_secrets_are_encrypted_at_rest_masked_when_shown_and_open_for_the_worker(
    store: ServiceDatabase, tmp_path: Path
) -> None:
    add(store)
    shown = store.document("orders")
    assert shown["sink"]["clickhouse"]["password"] == "***"
    assert shown["source"]["security"]["password"] == "***"
    assert shown["source"]["properties"] == {"ssl.key.password": "***", "client.id": "x"}
    opened = store.document("orders", reveal_secrets=True)
    assert opened == document()
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("service.db*"))
    for secret in (CH_PASSWORD, KAFKA_PASSWORD, PROP_SECRET):
        assert secret.encode() not in raw
    key = tmp_path / "secret.key"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600


def test_the_key_file_is_kept_across_restarts(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    first = ServiceDatabase(tmp_path)
    add(first)
    first.close()
    again = ServiceDatabase(tmp_path)
    assert again.document("orders", reveal_secrets=True) == document()
    again.close()


def test_a_key_from_the_environment_and_a_wrong_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    s = ServiceDatabase(tmp_path)
    add(s)
    s.close()
    assert not (tmp_path / "secret.key").exists()
    monkeypatch.setenv(KEY_ENV, Fernet.generate_key().decode())
    other = ServiceDatabase(tmp_path)
    assert other.document("orders")["sink"]["clickhouse"]["password"] == "***"
    with pytest.raises(SecretKeyError, match="cannot be decrypted") as caught:
        other.document("orders", reveal_secrets=True)
    assert caught.value.hint is not None and "another key" in caught.value.hint
    other.close()
    monkeypatch.setenv(KEY_ENV, "not-a-key")
    with pytest.raises(SecretKeyError, match=KEY_ENV):
        ServiceDatabase(tmp_path)


REGISTRY_PASSWORD = "sr-pass-Tt55"


def test_the_schema_registry_password_is_a_secret_like_the_others(store: ServiceDatabase) -> None:
    doc = document("avro-orders")
    doc["source"]["format"] = "avro"
    doc["source"]["schema_registry"] = {
        "url": "http://127.0.0.1:8081",
        "username": "reader",
        "password": REGISTRY_PASSWORD,
    }
    store.add("avro-orders", doc, parse_pipeline(doc))
    shown = store.document("avro-orders")
    assert shown["source"]["schema_registry"] == {
        "url": "http://127.0.0.1:8081",
        "username": "reader",
        "password": "***",
    }
    assert store.document("avro-orders", reveal_secrets=True) == doc
    assert REGISTRY_PASSWORD not in repr(parse_pipeline(doc))
    registry = parse_pipeline(doc).primary_source.schema_registry
    assert REGISTRY_PASSWORD not in repr(RegistryClient.of(registry))
