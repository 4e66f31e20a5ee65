"""`Client`: typed calls of `streamsift serve`'s native API, on httpx.

Every error answer becomes a typed exception (sdk/errors.py) carrying the server's status,
code, message and details; a server that cannot be reached is a `ServiceUnavailable` with
status 0. Pipeline documents may be given as `streamsift.config.Pipeline` or as mappings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from streamsift.config.models import ClickHouseConnection, KafkaSecurity, Pipeline
from streamsift.config.types import FieldType
from streamsift.sdk import models as m
from streamsift.sdk.documents import pipeline_document, plain
from streamsift.sdk.errors import ApiError, ServiceUnavailable, error_from_response

T = TypeVar("T", bound=BaseModel)
PIPELINES = "/api/v1/pipelines"
Document = Pipeline | Mapping[str, Any]


class Client:
    """A client of one streamsift server. Use as a context manager, or call `close()`."""

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def __repr__(self) -> str:  # the token stays out of reprs and logs
        return f"Client({str(self._http.base_url)!r})"

    # -------------------------------------------------------------------- plumbing

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._response(method, path, **kwargs)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _response(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The server's answer; its error (or not answering) as a typed exception."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise ServiceUnavailable(
                0, "unreachable", f"{self._http.base_url} did not answer: {exc}", {}
            ) from None
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = response.text
            raise error_from_response(response.status_code, body)
        return response

    def _typed(self, model: type[T], method: str, path: str, **kwargs: Any) -> T:
        return model.model_validate(self._call(method, path, **kwargs))

    def _typed_list(self, model: type[T], method: str, path: str, **kwargs: Any) -> list[T]:
        return [model.model_validate(item) for item in self._call(method, path, **kwargs)]

    # -------------------------------------------------------------------- health

    def healthy(self) -> bool:
        """Whether the server answers /healthz."""
        try:
            self._call("GET", "/healthz")
        except ApiError:
            return False
        return True

    def ready(self) -> bool:
        """Whether the pipeline service is up (/readyz answers 200)."""
        try:
            self._call("GET", "/readyz")
        except ApiError:
            return False
        return True

    # -------------------------------------------------------------------- pipelines

    def validate(self, document: Document) -> m.ValidateResult:
        """Check a document; ValidationFailed (with .problems) when it has problems."""
        return self._typed(
            m.ValidateResult, "POST", f"{PIPELINES}/validate", json=pipeline_document(document)
        )

    def create(self, document: Document) -> m.PipelineRecord:
        """Create a pipeline (its id is the document's name) and start it."""
        return self._typed(m.PipelineRecord, "POST", PIPELINES, json=pipeline_document(document))

    def pipelines(self) -> list[m.PipelineRecord]:
        return self._typed_list(m.PipelineRecord, "GET", PIPELINES)

    def get(self, pipeline_id: str) -> m.PipelineRecord:
        return self._typed(m.PipelineRecord, "GET", f"{PIPELINES}/{pipeline_id}")

    def document(self, pipeline_id: str) -> dict[str, Any]:
        """The pipeline's current document (secrets shown as '***')."""
        return self._call("GET", f"{PIPELINES}/{pipeline_id}/document")

    def edit(
        self, pipeline_id: str, document: Document, reset_state: bool = False
    ) -> m.PipelineRecord:
        """Replace a stopped pipeline's document (a new version)."""
        return self._typed(
            m.PipelineRecord,
            "PUT",
            f"{PIPELINES}/{pipeline_id}",
            json=pipeline_document(document),
            params={"reset_state": "true"} if reset_state else None,
        )

    def stop(self, pipeline_id: str) -> m.PipelineRecord:
        """Stop gracefully: the micro-batch in flight is finished."""
        return self._typed(m.PipelineRecord, "POST", f"{PIPELINES}/{pipeline_id}/stop")

    def terminate(self, pipeline_id: str) -> m.PipelineRecord:
        """Stop at once (the checkpoint keeps exactly-once)."""
        return self._typed(m.PipelineRecord, "POST", f"{PIPELINES}/{pipeline_id}/terminate")

    def resume(self, pipeline_id: str) -> m.PipelineRecord:
        return self._typed(m.PipelineRecord, "POST", f"{PIPELINES}/{pipeline_id}/resume")

    def delete(self, pipeline_id: str) -> None:
        self._call("DELETE", f"{PIPELINES}/{pipeline_id}")

    def status(self, pipeline_id: str) -> m.PipelineStatus:
        return self._typed(m.PipelineStatus, "GET", f"{PIPELINES}/{pipeline_id}/status")

    def history(self, pipeline_id: str) -> list[m.StatusChange]:
        return self._typed_list(m.StatusChange, "GET", f"{PIPELINES}/{pipeline_id}/history")

    # -------------------------------------------------------------------- dead letters

    def alerts(self, pipeline_id: str, limit: int = 100) -> list[m.AlertEpisode]:
        """The pipeline's alert episodes, newest first (open ones have no `resolved_at`)."""
        return self._typed_list(
            m.AlertEpisode, "GET", f"{PIPELINES}/{pipeline_id}/alerts", params={"limit": limit}
        )

    def metrics(self) -> str:
        """The server's Prometheus metrics, as text (docs/operations.md lists them)."""
        return self._response("GET", "/metrics").text

    def dlq_stats(self, pipeline_id: str) -> m.DlqStats:
        return self._typed(m.DlqStats, "GET", f"{PIPELINES}/{pipeline_id}/dlq/stats")

    def dlq_messages(self, pipeline_id: str, limit: int = 100, offset: int = 0) -> m.DeadLetterPage:
        """A page of pending dead letters, oldest position first."""
        return self._typed(
            m.DeadLetterPage,
            "GET",
            f"{PIPELINES}/{pipeline_id}/dlq/messages",
            params={"limit": limit, "offset": offset},
        )

    def dlq_consume(self, pipeline_id: str, limit: int = 100) -> m.ConsumedLetters:
        """Take the oldest pending dead letters and mark them consumed."""
        return self._typed(
            m.ConsumedLetters,
            "POST",
            f"{PIPELINES}/{pipeline_id}/dlq/consume",
            params={"limit": limit},
        )

    def dlq_purge(self, pipeline_id: str) -> m.PurgeResult:
        return self._typed(m.PurgeResult, "POST", f"{PIPELINES}/{pipeline_id}/dlq/purge")

    def dlq_replay(
        self, pipeline_id: str, limit: int | None = None, dry_run: bool = False
    ) -> m.ReplayResult:
        body: dict[str, Any] = {"dry_run": dry_run}
        if limit is not None:
            body["limit"] = limit
        return self._typed(
            m.ReplayResult, "POST", f"{PIPELINES}/{pipeline_id}/dlq/replay", json=body
        )

    # -------------------------------------------------------------------- connection probes

    def kafka_test(
        self, bootstrap_servers: str, security: KafkaSecurity | Mapping[str, Any] | None = None
    ) -> m.KafkaTestResult:
        return self._typed(
            m.KafkaTestResult,
            "POST",
            "/api/v1/connections/kafka/test",
            json=_kafka(bootstrap_servers, security),
        )

    def kafka_topics(
        self, bootstrap_servers: str, security: KafkaSecurity | Mapping[str, Any] | None = None
    ) -> list[m.Topic]:
        return self._typed_list(
            m.Topic,
            "POST",
            "/api/v1/connections/kafka/topics",
            json=_kafka(bootstrap_servers, security),
        )

    def clickhouse_test(
        self, connection: ClickHouseConnection | Mapping[str, Any]
    ) -> m.ClickHouseTestResult:
        return self._typed(
            m.ClickHouseTestResult,
            "POST",
            "/api/v1/connections/clickhouse/test",
            json=plain(connection),
        )

    def clickhouse_columns(
        self, connection: ClickHouseConnection | Mapping[str, Any], table: str
    ) -> list[m.Column]:
        return self._typed_list(
            m.Column,
            "POST",
            "/api/v1/connections/clickhouse/columns",
            json={**plain(connection), "table": table},
        )

    # -------------------------------------------------------------------- schemas

    def sample(
        self,
        bootstrap_servers: str,
        topic: str,
        count: int = 10,
        security: KafkaSecurity | Mapping[str, Any] | None = None,
    ) -> m.SampleResult:
        body = {**_kafka(bootstrap_servers, security), "topic": topic, "count": count}
        return self._typed(m.SampleResult, "POST", "/api/v1/schemas/sample", json=body)

    def infer(
        self,
        samples: list[Any] | None = None,
        *,
        bootstrap_servers: str | None = None,
        topic: str | None = None,
        count: int = 100,
        security: KafkaSecurity | Mapping[str, Any] | None = None,
    ) -> m.InferResult:
        """Infer a schema from `samples`, or from messages of `topic`."""
        body: dict[str, Any]
        if samples is not None:
            body = {"samples": samples}
        else:
            body = {**_kafka(bootstrap_servers or "", security), "topic": topic, "count": count}
        return self._typed(m.InferResult, "POST", "/api/v1/schemas/infer", json=body)

    # -------------------------------------------------------------------- expressions

    def validate_expression(
        self,
        expression: str,
        fields: Mapping[str, FieldType | str],
        type: FieldType | str | None = None,  # noqa: A002 - the document's word
    ) -> m.ExpressionCheck:
        """Check a filter (no `type`) or a computed field of `type` over `fields`."""
        return self._typed(
            m.ExpressionCheck,
            "POST",
            "/api/v1/expressions/validate",
            json=_expression(expression, fields, type),
        )

    def evaluate_expression(
        self,
        expression: str,
        fields: Mapping[str, FieldType | str],
        event: Mapping[str, Any],
        type: FieldType | str | None = None,  # noqa: A002
    ) -> m.ExpressionValue:
        body = {**_expression(expression, fields, type), "event": dict(event)}
        return self._typed(m.ExpressionValue, "POST", "/api/v1/expressions/evaluate", json=body)


def _kafka(
    bootstrap_servers: str, security: KafkaSecurity | Mapping[str, Any] | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"bootstrap_servers": bootstrap_servers}
    if security is not None:
        body["security"] = plain(security)
    return body


def _expression(
    expression: str, fields: Mapping[str, FieldType | str], type_: FieldType | str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "expression": expression,
        "fields": [
            {"name": name, "type": t.value if isinstance(t, FieldType) else t}
            for name, t in fields.items()
        ],
    }
    if type_ is not None:
        body["type"] = type_.value if isinstance(type_, FieldType) else type_
    return body
