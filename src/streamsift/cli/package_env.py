"""`streamsift package-env`: pack streamsift and its dependencies for Spark executors.

`streamsift run --master spark://...` packs (and caches) this archive by itself; building it
ahead is for spark-submit, Kubernetes images or a shared location (`spark.archives` in
`runtime.spark_conf` then points at it).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from streamsift.spark_host.environment import EXECUTOR_PYTHON, archive_setting, pack_environment


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "package-env",
        help="pack streamsift and its Python dependencies for Spark executors (spark.archives)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("streamsift-env.tar.gz"),
        help="the archive to write (default streamsift-env.tar.gz)",
    )
    p.set_defaults(func=cmd_package_env, logs=False)


def cmd_package_env(args: argparse.Namespace) -> int:
    packed = pack_environment(args.output.parent, archive=args.output)
    print(
        f"wrote {packed.path} ({packed.size_bytes / 1e6:,.0f} MB in {packed.seconds:.1f} s); "
        f"use it with\n  spark.archives: {archive_setting(packed.path)}\n"
        f"  spark.pyspark.python: {EXECUTOR_PYTHON}"
    )
    return 0
