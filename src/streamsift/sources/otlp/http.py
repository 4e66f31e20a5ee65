"""OTLP/HTTP (`POST /v1/logs`, `/v1/traces`, `/v1/metrics`): protobuf or JSON bodies,
optionally gzip-compressed, answered with the signal's export response in the same encoding.

Statuses: 200 once the records are durable; 400 for a body that cannot be read; 401 without
the token; 404 for an unknown pipeline; 413 above the size limit; 415 for another content
type; 429 (with Retry-After) when the pipeline or Kafka cannot keep up; 503 when Kafka did
not confirm. OTel exporters retry 429 and 503, and give up on the others.
"""

from __future__ import annotations

import zlib

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from streamsift.config.otlp import OtlpSignal
from streamsift.sources.otlp.decode import REQUEST_TYPES, MalformedOtlp
from streamsift.sources.otlp.ingest import Busy, Ingest, Rejected, TooLarge

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# The largest body read before the routes' own limits apply (which are per pipeline).
HARD_LIMIT_BYTES = 64 * 1024 * 1024


def _response_type(signal: OtlpSignal):  # the Export*ServiceResponse class
    name = REQUEST_TYPES[signal].__name__.replace("Request", "Response")
    module = __import__(REQUEST_TYPES[signal].__module__, fromlist=[name])
    return getattr(module, name)


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise TooLarge(f"the request has {int(declared):,} bytes, more than the {limit:,} allowed")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"the request is larger than the {limit:,} bytes allowed")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "").strip().lower()
    if encoding == "gzip":
        inflater = zlib.decompressobj(wbits=31)
        try:
            body = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise MalformedOtlp(f"the gzip body cannot be decompressed: {exc}") from None
        if len(body) > limit:
            raise TooLarge(f"the decompressed request is larger than the {limit:,} bytes allowed")
    elif encoding not in ("", "identity"):
        raise MalformedOtlp(f"Content-Encoding {encoding!r} is not supported (use gzip or none)")
    return body


def _limit(ingest: Ingest) -> int:
    routes = ingest.routes()
    return min(HARD_LIMIT_BYTES, max((r.max_request_bytes for r in routes), default=4 << 20))


def otlp_http_app(ingest: Ingest) -> Starlette:
    """The OTLP/HTTP endpoints over `ingest`."""

    def endpoint(signal: OtlpSignal):
        response_type = _response_type(signal)

        async def export(request: Request) -> Response:
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype not in (PROTOBUF, JSON):
                return Response(
                    f"Content-Type must be {PROTOBUF} or {JSON}, not {ctype or 'missing'!r}",
                    status_code=415,
                    media_type="text/plain",
                )
            as_json = ctype == JSON
            try:
                body = await _read_body(request, _limit(ingest))
                await run_in_threadpool(ingest.export, signal, dict(request.headers), body, as_json)
            except (Rejected, MalformedOtlp) as exc:
                status = exc.status if isinstance(exc, Rejected) else 400
                headers = {"Retry-After": "1"} if isinstance(exc, Busy) else None
                return Response(
                    str(exc), status_code=status, media_type="text/plain", headers=headers
                )
            if as_json:
                return Response("{}", media_type=JSON)
            return Response(response_type().SerializeToString(), media_type=PROTOBUF)

        return export

    return Starlette(
        routes=[Route(f"/v1/{s.short}", endpoint(s), methods=["POST"]) for s in OtlpSignal]
    )
