"""`streamsift serve`: run the HTTP API (FastAPI under uvicorn) until Ctrl-C or SIGTERM.

Prints one line when it listens (`listening on http://HOST:PORT ...`, with the port actually
bound when `--port 0` picks a free one) and one when it has stopped. The token comes from
`--token` or STREAMSIFT_API_TOKEN and is never printed.

On an address other than loopback, a server without a token would let anyone who reaches the
port run pipelines: it refuses to start unless `--no-token` says that is meant. Bound to every
address (0.0.0.0, ::), it answers browsers only by loopback names and `--allowed-host` names
(a guard against DNS rebinding, api/http_guard.py), and says so when it starts.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

from streamsift.cli.output import fail

TOKEN_ENV = "STREAMSIFT_API_TOKEN"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the HTTP API: pipelines, their status and DLQ, connection probes",
        description="Serve the native API (/api/v1/...), OpenAPI at /openapi.json, docs at "
        "/docs, health at /healthz and /readyz. Ctrl-C or SIGTERM stop it.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: a free one)")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".streamsift"),
        help="where the service keeps pipelines and checkpoints (default .streamsift)",
    )
    p.add_argument(
        "--token",
        default=None,
        help=f"require 'Authorization: Bearer TOKEN' on every route but health (default: "
        f"${TOKEN_ENV}, which is better: a command line is visible to other users)",
    )
    p.add_argument(
        "--no-token",
        action="store_true",
        help="serve on a non-loopback address without a token (refused otherwise: anyone "
        "who reaches the port could run pipelines)",
    )
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host header name to answer besides the bound address and localhost, e.g. "
        "the name a reverse proxy forwards (repeatable)",
    )
    p.add_argument(
        "--allow-path",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="a directory a pipeline document may name paths in, besides the data dir (repeatable)",
    )
    p.add_argument(
        "--allow-connect",
        action="append",
        default=[],
        metavar="HOST|CIDR",
        help="where the connection helpers (probes, samples, schema inference) may connect, "
        "and where a document's alerts may be sent (repeatable; default: anywhere)",
    )
    p.add_argument(
        "--allow-spark-conf",
        action="append",
        default=[],
        metavar="KEY",
        help="a spark.* key (or prefix ending in *) documents may set beyond the tuning "
        "allow-list (repeatable)",
    )
    p.add_argument(
        "--token-provider",
        action="append",
        default=[],
        metavar="NAME=MODULE:FUNCTION",
        help="register an OAUTHBEARER token provider that documents may name (repeatable; "
        "also $STREAMSIFT_TOKEN_PROVIDERS and the streamsift.token_providers entry points)",
    )
    p.add_argument(
        "--otlp-http-port",
        type=int,
        default=4318,
        help="OTLP/HTTP port of the OTLP pipelines' receiver (default 4318; 0: a free one)",
    )
    p.add_argument(
        "--otlp-grpc-port",
        type=int,
        default=4317,
        help="OTLP/gRPC port of the OTLP pipelines' receiver (default 4317; 0: a free one)",
    )
    p.add_argument(
        "--no-otlp", action="store_true", help="run no OTLP receiver (OTLP pipelines get no data)"
    )
    p.add_argument(
        "--master",
        default=None,
        help="Spark master the service's pipelines run on, e.g. spark://host:7077 (default: "
        "$STREAMSIFT_SPARK_MASTER, else each pipeline's runtime.master, else local[2])",
    )
    p.add_argument(
        "--retry-attempts",
        type=int,
        default=None,
        metavar="N",
        help="retries of a transient fault (a broker or ClickHouse that does not answer, a "
        "worker that died) before a pipeline fails, for pipelines that set no "
        "runtime.retry.max_attempts (default: keep retrying, with capped back-off)",
    )
    p.add_argument(
        "--probe-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a connection probe, sample or schema inference waits for a Kafka or "
        "ClickHouse to answer (default 10)",
    )
    p.add_argument(
        "--isolation",
        choices=("host", "process"),
        default="host",
        help="where pipelines run: host (default) runs each as a query of one shared Spark "
        "application, the pipeline host, started with the server; a pipeline may still ask "
        "for a process of its own (runtime.isolation: process). process: every pipeline in a "
        "worker process of its own, as before",
    )
    p.add_argument(
        "--alerts",
        type=Path,
        default=None,
        metavar="FILE",
        help="alert rules and channels (YAML or JSON, the shape of a pipeline's alerts: "
        "section) for every pipeline; a pipeline's own rules replace these per condition, "
        "its channels add to these (docs/operations.md, Alerts)",
    )
    p.add_argument(
        "--alerts-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how often the alert conditions are judged (default 5)",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="also start the bundled Kafka broker, a generator of events with duplicates and "
        "a dedup pipeline into the embedded ClickHouse: open the web UI and watch it run",
    )
    p.add_argument("--verbose", action="store_true", help="debug logging, and uvicorn's access log")
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from streamsift.api.app import create_app
    from streamsift.api.settings import ServiceSettings
    from streamsift.config.models import Isolation

    if not 0 <= args.port <= 65535:
        return fail(f"--port must be 0..65535, not {args.port}", code=2)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    for flag, value in (
        ("--otlp-http-port", args.otlp_http_port),
        ("--otlp-grpc-port", args.otlp_grpc_port),
    ):
        if not 0 <= value <= 65535:
            return fail(f"{flag} must be 0..65535, not {value}", code=2)
    if args.retry_attempts is not None and args.retry_attempts < 0:
        return fail(f"--retry-attempts must be 0 or more, not {args.retry_attempts}", code=2)
    for entry in args.token_provider:
        name, _, target = entry.partition("=")
        if not name.strip() or target.count(":") != 1:
            return fail(f"--token-provider takes NAME=MODULE:FUNCTION, not {entry!r}", code=2)
    from streamsift.service.document_policy import serve_registered_providers_only

    serve_registered_providers_only(args.token_provider)
    from streamsift.api.http_guard import split_host

    for name in args.allowed_host:
        if name.strip() != "*" and split_host(name) is None:
            return fail(f"--allowed-host takes a host name (or *), not {name!r}", code=2)
    alerts = None
    if args.alerts is not None:
        from streamsift.config import ConfigError
        from streamsift.config.alerts import parse_alerts
        from streamsift.config.loader import read_document

        try:
            alerts = parse_alerts(read_document(args.alerts), source=str(args.alerts))
        except ConfigError as exc:
            return fail(f"--alerts: {exc}", code=2)
    for flag, seconds in (
        ("--alerts-interval", args.alerts_interval),
        ("--probe-timeout", args.probe_timeout),
    ):
        if not seconds > 0:
            return fail(f"{flag} must be above 0, not {seconds}", code=2)
    if token is None and not args.no_token and not is_loopback(args.host):
        return fail(
            f"refusing to serve on {args.host} without a token: anyone who reaches the port "
            "could run pipelines on this machine",
            f"set ${TOKEN_ENV} (or --token), or pass --no-token to serve it open anyway",
            code=2,
        )
    if args.master:
        from streamsift.spark_host.session import MASTER_ENV

        os.environ[MASTER_ENV] = args.master  # the pipeline workers it starts inherit it
    settings = ServiceSettings(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        token=token,
        otlp_http_port=None if args.no_otlp else args.otlp_http_port,
        otlp_grpc_port=None if args.no_otlp else args.otlp_grpc_port,
        allowed_hosts=tuple(args.allowed_host),
        allow_paths=tuple(p.resolve() for p in args.allow_path),
        allow_connect=tuple(args.allow_connect),
        allow_spark_conf=tuple(args.allow_spark_conf),
        alerts=alerts,
        alerts_interval_s=args.alerts_interval,
        probe_timeout_s=args.probe_timeout,
        retry_attempts=args.retry_attempts,
        isolation=Isolation(args.isolation),
        warm_host=args.isolation == "host",
    )
    try:
        sock = socket.create_server((settings.host, settings.port))
    except OSError as exc:
        return fail(
            f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}",
            "is another server on that port? pick another with --port",
            code=1,
        )
    try:
        if args.demo:
            from streamsift.cli.serve_demo import demo_backdrop

            with demo_backdrop(settings.data_dir, settings.document_policy()) as (service, what):
                print(what, file=sys.stderr, flush=True)
                _serve(create_app(settings, service), sock, settings, args.verbose)
        else:
            _serve(create_app(settings), sock, settings, args.verbose)
    finally:
        sock.close()
    print("streamsift serve: stopped", file=sys.stderr, flush=True)
    return 0


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or name to bind) is reachable only from this machine."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _serve(app: Any, sock: socket.socket, settings: Any, verbose: bool) -> None:
    """Run `app` under uvicorn on `sock` until Ctrl-C or SIGTERM."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="debug" if verbose else "warning",
        access_log=verbose,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal that stopped it once it is done; these handlers take it,
    # so the command ends with its own line and exit code 0 rather than a traceback.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)
    port = sock.getsockname()[1]
    token = "token required" if settings.token is not None else "no token"
    print(
        f"listening on http://{settings.host}:{port} (data dir {settings.data_dir}, {token})",
        file=sys.stderr,
        flush=True,
    )
    if settings.host.strip("[]") in ("0.0.0.0", "::", "") and not settings.allowed_hosts:
        print(
            "note: on every address, browsers are answered only by loopback names: give "
            "this machine's names with --allowed-host NAME",
            file=sys.stderr,
            flush=True,
        )
    server.run(sockets=[sock])
