"""OTLP/gRPC: the Logs, Trace and Metrics services' `Export`, on one gRPC server.

Refusals map to gRPC codes as OTel exporters expect: RESOURCE_EXHAUSTED for too large or
busy (retried), UNAVAILABLE when Kafka did not confirm (retried), INVALID_ARGUMENT,
UNAUTHENTICATED and NOT_FOUND for the sender's mistakes (not retried).
"""

from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from streamsift.config.otlp import OtlpSignal
from streamsift.sources.otlp.decode import MalformedOtlp
from streamsift.sources.otlp.ingest import Ingest, Rejected

_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    404: grpc.StatusCode.NOT_FOUND,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


def _export(ingest: Ingest, signal: OtlpSignal, request: Any, context: Any) -> None:
    headers = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
    try:
        ingest.export(signal, headers, request.SerializeToString())
    except (Rejected, MalformedOtlp) as exc:
        status = exc.status if isinstance(exc, Rejected) else 400
        context.abort(_CODES.get(status, grpc.StatusCode.INVALID_ARGUMENT), str(exc))


def _servicer(base: type, signal: OtlpSignal, response: type) -> Any:
    """A servicer of one OTLP service: `Export` hands the request to the ingest."""

    class Servicer(base):  # type: ignore[misc, valid-type]
        def __init__(self, ingest: Ingest) -> None:
            self.ingest = ingest

        def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC's name)
            _export(self.ingest, signal, request, context)
            return response()

    return Servicer


_Logs = _servicer(
    logs_service_pb2_grpc.LogsServiceServicer,
    OtlpSignal.LOGS,
    logs_service_pb2.ExportLogsServiceResponse,
)
_Traces = _servicer(
    trace_service_pb2_grpc.TraceServiceServicer,
    OtlpSignal.TRACES,
    trace_service_pb2.ExportTraceServiceResponse,
)
_Metrics = _servicer(
    metrics_service_pb2_grpc.MetricsServiceServicer,
    OtlpSignal.METRICS,
    metrics_service_pb2.ExportMetricsServiceResponse,
)


def otlp_grpc_server(
    ingest: Ingest, address: str, max_request_bytes: int, workers: int = 8
) -> tuple[grpc.Server, int]:
    """A started gRPC server on `address` (`host:port`, port 0: a free one) and its port.
    Messages above `max_request_bytes` are refused by gRPC itself (RESOURCE_EXHAUSTED)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otlp-grpc"),
        options=[("grpc.max_receive_message_length", max_request_bytes)],
    )
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_Logs(ingest), server)
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(ingest), server)
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(ingest), server)
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address} for OTLP/gRPC")
    server.start()
    return server, port
