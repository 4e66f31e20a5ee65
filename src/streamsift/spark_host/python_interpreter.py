"""The interpreter a local Spark starts its Python processes with: this one, minus Spark's zips.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip`, py4j's zip and the spark-core jar first on
the path of every Python process it starts (workers, the data source's planners, the
streaming source's runner). With PySpark installed by pip those copies are redundant, and
they cost each new process its start: modules are read from the zip, and PySpark's
`setup_spark_files` calls `importlib.invalidate_caches()`, which makes every zip importer
re-read its archive's directory, about two thousand entries (measured in docs/benchmarks.md).

For a local master, Spark starts them through a small launcher instead, which drops exactly
those entries from `PYTHONPATH` and execs this interpreter; they import pyspark from the
installation, as the driver does. Entries of the user's own (e.g. `--py-files` zips) stay.
Executors on a cluster keep Spark's zips: their interpreter may have no PySpark of its own.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import sys
import tempfile

from streamsift.spark_host.user_cache import user_cache_dir

log = logging.getLogger(__name__)

# Spark's JVM sets SPARK_HOME in the environment of every Python process it starts.
_LAUNCHER = """#!/bin/sh
# Written by streamsift (spark_host/python_interpreter.py): Spark's Python processes without the
# zipped copies of pyspark and py4j that Spark puts on their path; then this interpreter.
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case $entry in
    "$SPARK_HOME"/python/lib/*|"$SPARK_HOME"/jars/*) ;;
    *) kept=${{kept:+$kept:}}$entry ;;
  esac
done
unset IFS
PYTHONPATH=$kept
export PYTHONPATH
exec {python} "$@"
"""


def launcher_text(python: str) -> str:
    return _LAUNCHER.format(python=shlex.quote(python))


def worker_python(python: str = sys.executable) -> str:
    """The launcher's path (written once into the user's cache), or `python` itself when the
    cache cannot be written."""
    text = launcher_text(python)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = user_cache_dir("python") / f"worker-python-{digest}"
    if path.is_file() and os.access(path, os.X_OK):
        return str(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)  # atomic: processes starting meanwhile see all of it or none
    except OSError as exc:
        log.debug("Python workers start with Spark's zips on their path: %s", exc)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        return python
    return str(path)
