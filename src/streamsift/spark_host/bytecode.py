"""Bytecode inside the zips Spark's Python workers import pyspark and py4j from.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on every Python worker's path (a local
master's workers start without it: spark_host/python_interpreter.py; executors on a cluster
keep it), and Python cannot cache bytecode for modules imported from a zip: each worker
process compiles pyspark from source again (what that cost is measured in docs/benchmarks.md,
"Fixed on 2026-11-23", item 2). zipimport does use `.pyc` entries stored next to the `.py`
ones, so we add them once, as unchecked hash-based pycs for this interpreter's magic number.
Another Python version finds a wrong magic number and falls back to the source, as before.

Run at setup (`python -m streamsift.spark_host.bytecode`) and checked at each session start;
a read-only installation is left as it is.
"""

from __future__ import annotations

import importlib.util
import logging
import marshal
import os
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

log = logging.getLogger(__name__)

# Flags word of a hash-based pyc that the import system does not check against its source.
_UNCHECKED_HASH = (0b01).to_bytes(4, "little")


def worker_zips() -> list[Path]:
    """The zips Spark puts on its Python workers' path, for the installed pyspark."""
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    return sorted(lib.glob("*.zip")) if lib.is_dir() else []


def has_bytecode(path: Path) -> bool:
    with zipfile.ZipFile(path) as zf:
        return any(n.endswith(".pyc") for n in zf.namelist())


def add_bytecode(path: Path) -> int:
    """Rewrite `path` with a compiled `.pyc` beside each `.py`; returns how many were added."""
    added = 0
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with (
            zipfile.ZipFile(path) as src,
            zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst,
        ):
            names = set(src.namelist())
            for info in src.infolist():
                data = src.read(info)
                dst.writestr(info, data)
                pyc = info.filename[:-3] + ".pyc"
                if not info.filename.endswith(".py") or pyc in names or "/tests/" in pyc:
                    continue
                # The file name zipimport itself would give the code, so tracebacks match.
                where = os.path.join(str(path), info.filename.replace("/", os.sep))
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # pyspark's own warnings, not ours
                        code = compile(data, where, "exec", dont_inherit=True)
                except SyntaxError:
                    continue  # left to the source path, which reports it when imported
                header = importlib.util.MAGIC_NUMBER + _UNCHECKED_HASH
                body = header + importlib.util.source_hash(data) + marshal.dumps(code)
                entry = zipfile.ZipInfo(pyc, info.date_time)
                entry.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(entry, body)
                added += 1
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return added


def ensure_worker_bytecode() -> None:
    """Add bytecode to the worker zips that lack it; quietly skip what cannot be written."""
    for path in worker_zips():
        try:
            if not has_bytecode(path) and os.access(path.parent, os.W_OK):
                n = add_bytecode(path)
                log.info("compiled %d modules into %s", n, path)
        except (OSError, zipfile.BadZipFile) as exc:
            log.debug("left %s without bytecode: %s", path, exc)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    ensure_worker_bytecode()
