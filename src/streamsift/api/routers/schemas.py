"""Sample a topic's messages and infer a pipeline schema from them.

A topic is read only at a destination the server's `--allow-connect` list allows (403
otherwise, before any connection: routers/connections.py); samples given inline need none.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from streamsift.api.deps import SettingsDep
from streamsift.api.routers.connections import require_kafka_allowed
from streamsift.service.authoring import probes
from streamsift.service.authoring.schema_inference import InferredSchema, infer_schema
from streamsift.wire.helpers import InferRequest, InferResult, SampleRequest, SampleResult

router = APIRouter(prefix="/api/v1/schemas", tags=["schemas"])


@router.post("/sample", summary="up to `count` messages from the start of a topic")
async def sample(body: SampleRequest, settings: SettingsDep) -> SampleResult:
    await require_kafka_allowed(settings, body.bootstrap_servers, body.security)
    messages = await run_in_threadpool(
        probes.sample_messages,
        body.bootstrap_servers,
        body.security,
        body.topic,
        body.count,
        settings.probe_timeout_s,
    )
    return SampleResult.model_validate(
        {"topic": body.topic, "messages": [asdict(m) for m in messages]}
    )


@router.post("/infer", summary="a schema for sample messages (given, or read from a topic)")
async def infer(body: InferRequest, settings: SettingsDep) -> InferResult:
    samples: list[Any]
    if body.samples is not None:
        samples = body.samples
    else:
        assert body.topic is not None and body.bootstrap_servers is not None
        await require_kafka_allowed(settings, body.bootstrap_servers, body.security)
        messages = await run_in_threadpool(
            probes.sample_messages,
            body.bootstrap_servers,
            body.security,
            body.topic,
            body.count,
            settings.probe_timeout_s,
        )
        samples = [m.value for m in messages if m.error is None]
    return _result(infer_schema(samples))


def _result(inferred: InferredSchema) -> InferResult:
    fields = [
        {"name": f.name, "type": f.type, "nullable": f.nullable, "examples": list(f.examples)}
        for f in inferred.fields
    ]
    event_time = next(
        (c.name for c in inferred.event_time_candidates if c.kind != "epoch_millis"), None
    )
    schema: dict[str, Any] = {
        "fields": [{"name": f.name, "type": f.type.value} for f in inferred.fields]
    }
    if event_time is not None:
        schema["event_time"] = event_time
    return InferResult.model_validate(
        {
            "fields": fields,
            "event_time_candidates": [asdict(c) for c in inferred.event_time_candidates],
            "dedup_key_candidates": list(inferred.dedup_key_candidates),
            "samples": inferred.samples,
            "skipped": inferred.skipped,
            "schema": schema,
        }
    )
