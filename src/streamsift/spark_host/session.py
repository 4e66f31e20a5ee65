"""The SparkSession streamsift runs on, and the prerequisites it needs."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from streamsift.config.models import StateStore
from streamsift.spark_host import class_archive, scratch
from streamsift.spark_host.bytecode import ensure_worker_bytecode
from streamsift.spark_host.environment import (
    EXECUTOR_PYTHON,
    archive_setting,
    default_cache_dir,
    pack_environment,
)
from streamsift.spark_host.errors import RuntimeConfigError
from streamsift.spark_host.jvm_output import filtered_stderr_for_children
from streamsift.spark_host.python_interpreter import worker_python

MIN_JAVA = 17
MASTER_ENV = "STREAMSIFT_SPARK_MASTER"
DEFAULT_MASTER = "local[2]"
# C1 only: Spark's JIT warm-up costs as much CPU as the data at the start of a run (measured:
# the JVM's CPU before the first micro-batch halved, 16 -> 8 CPU-s, with the same steady-state
# CPU per event). STREAMSIFT_JAVA_OPTIONS is appended, so "-XX:TieredStopAtLevel=4" undoes it.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
STATE_STORE_CONF = "spark.sql.streaming.stateStore.providerClass"
# `runtime.state_store` -> Spark's provider. Spark writes the provider into the checkpoint's
# offset log and uses that one when a query resumes, so a checkpoint keeps its first choice.
STATE_STORE_PROVIDERS = {
    StateStore.ROCKSDB: "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    StateStore.MEMORY: "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
}


def check_prerequisites() -> None:
    """Fail early, with how to fix it, when Python or Java is missing or too old."""
    java = shutil.which("java", path=_java_path())
    if java is None:
        raise RuntimeConfigError(
            f"Java {MIN_JAVA}+ is needed by Spark and was not found; install it "
            "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    version = java_version(java)
    if version is not None and version < MIN_JAVA:
        raise RuntimeConfigError(
            f"Java {MIN_JAVA}+ is needed by Spark, found Java {version} at {java}; "
            "install openjdk-17-jre-headless or point JAVA_HOME at a newer JDK"
        )


def _java_path() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        return os.pathsep.join([str(Path(home) / "bin"), os.environ.get("PATH", "")])
    return None


def java_version(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def resolve_master(configured: str | None = None, override: str | None = None) -> str:
    """The Spark master a run uses: `--master`, else STREAMSIFT_SPARK_MASTER, else the
    pipeline's `runtime.master`, else local[2]."""
    return override or os.environ.get(MASTER_ENV) or configured or DEFAULT_MASTER


def is_local_master(master: str) -> bool:
    return master.startswith("local")


def spark_session(
    app_name: str = "streamsift",
    master: str | None = None,
    verbose: bool = False,
    spark_conf: Mapping[str, str] | None = None,
    env_dir: Path | None = None,
) -> Any:
    """One SparkSession per process, configured for small, stateful streaming jobs.

    `spark_conf` (the pipeline's `runtime.spark_conf`) overrides the defaults below. On a
    cluster master the executors get streamsift as a packed environment (spark_host/environment.py,
    cached in `env_dir`, by default the user's cache) unless `spark_conf` names its own `spark.archives` or
    `spark.pyspark.python` (executors whose image has streamsift installed).
    """
    check_prerequisites()
    ensure_worker_bytecode()
    master = resolve_master(override=master)
    conf = dict(spark_conf or {})
    scratch_dir = None  # Spark's temp files under a directory swept after a kill (scratch.py)
    if "spark.local.dir" not in conf and "SPARK_LOCAL_DIRS" not in os.environ:
        scratch_dir = scratch.claim()
        conf["spark.local.dir"] = str(scratch_dir)
    ships_own = "spark.archives" in conf or "spark.pyspark.python" in conf  # e.g. an image
    if not is_local_master(master) and not ships_own:
        packed = pack_environment(env_dir or default_cache_dir())
        conf["spark.archives"] = archive_setting(packed.path)
        conf.setdefault("spark.pyspark.python", EXECUTOR_PYTHON)
    if not is_local_master(master):
        # An executor's temp files (the archives it fetches: the packed environment, ~160 MB)
        # in its work directory, not the host's /tmp, where a killed executor left them.
        conf.setdefault("spark.executor.extraJavaOptions", "-Djava.io.tmpdir=.")
    if not is_local_master(master) and "spark.pyspark.python" in conf:
        # PYSPARK_PYTHON stays the driver's Python: the driver runs Python too (the Kafka
        # source's planning). Spark SQL's executor-side Python (the source's reads, the sink's
        # inserts) takes this setting; checked: without it, executors ran the driver's Python.
        conf.setdefault("spark.sql.execution.pyspark.python", conf["spark.pyspark.python"])
    # A local master's Python processes start without Spark's zipped pyspark (python_interpreter.py).
    local = is_local_master(master)
    os.environ.setdefault("PYSPARK_PYTHON", worker_python() if local else sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    # glibc gives every thread that allocates its own arena (up to 8 per core); RocksDB's and
    # the JVM's threads then leave freed memory scattered, and RSS creeps up over long runs.
    # Read at process start: applies to the JVM and the Python workers started from here.
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")
    from pyspark.sql import SparkSession

    log_conf = resources.files("streamsift.spark_host").joinpath("log4j2.properties")
    if "PYSPARK_SUBMIT_ARGS" not in os.environ:
        # Driver JVM options must be known before the JVM starts, hence spark-submit args.
        memory = os.environ.get("STREAMSIFT_DRIVER_MEMORY", "2g")
        options = [_shaping_java_options()]
        java = shutil.which("java", path=_java_path())
        if java is not None:  # the classes parsed once at setup (spark_host/class_archive.py)
            options += class_archive.java_options(java, _shaping_java_options())
        if not verbose:
            options.append(f"-Dlog4j2.configurationFile=file:{log_conf}")
        if scratch_dir is not None:  # the native libraries the JVM unpacks, artifacts-*
            options.append(f"-Djava.io.tmpdir={scratch_dir}")
        java_opts = " ".join(o for o in options if o)
        os.environ["PYSPARK_SUBMIT_ARGS"] = (
            f'--driver-memory {memory} --driver-java-options "{java_opts}" pyspark-shell'
        )
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # progress reaches the runner through a listener (engine/progress_feed.py); the
        # retained reports are only its fallback when a run's last reports come late
        .config("spark.sql.streaming.numRecentProgressUpdates", "100")
        .config(STATE_STORE_CONF, STATE_STORE_PROVIDERS[StateStore.ROCKSDB])
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.driver.maxResultSize", "2g")
        .config("spark.python.worker.reuse", "true")
        # a long-running query runs thousands of jobs: keep only the recent ones' status
        .config("spark.ui.retainedJobs", "100")
        .config("spark.ui.retainedStages", "100")
        .config("spark.sql.ui.retainedExecutions", "50")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    with _keeping_sigint_handler(), filtered_stderr_for_children():  # the JVM starts here
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("INFO" if verbose else "OFF")
    return spark


def jvm_alive() -> bool:
    """Whether this process's Spark JVM still answers (a failed query can start again in it)
    or is gone (the pipeline needs a new process)."""
    from py4j.protocol import Py4JError
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return False
    try:
        return not context._jsc.sc().isStopped()
    except (Py4JError, AttributeError, ConnectionError):
        return False


def _shaping_java_options() -> str:
    return " ".join(o for o in (JAVA_OPTIONS, os.environ.get("STREAMSIFT_JAVA_OPTIONS")) if o)


def build_class_archive() -> Path | None:
    """Build the driver JVM's class archive once (setup); None when it could not be."""
    java = shutil.which("java", path=_java_path())
    if java is None:
        return None
    return class_archive.build(java, _shaping_java_options())


@contextlib.contextmanager
def _keeping_sigint_handler() -> Iterator[None]:
    """Put back the SIGINT handler the caller installed (e.g. runtime.signals' stop
    handlers), which PySpark's SparkContext replaces with one that cancels all jobs and raises
    KeyboardInterrupt. Python's default handler is left to PySpark's."""
    on_main_thread = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if on_main_thread else None
    try:
        yield
    finally:
        if on_main_thread and before not in (None, signal.default_int_handler):
            signal.signal(signal.SIGINT, before)
