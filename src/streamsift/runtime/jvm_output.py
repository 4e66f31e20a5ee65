"""The Spark JVM's standard error, passed on without the lines that say nothing to a user.

Spark's launcher always starts the JVM with `--add-modules=jdk.incubator.vector`, and the JVM
then prints `WARNING: Using incubator modules: jdk.incubator.vector` on every start; no JVM
flag turns it off. The JVM inherits this process's standard error when PySpark launches it,
so while it starts we point file descriptor 2 at a pipe: a thread copies what arrives to the
real standard error, dropping the known noise, and this process's own descriptor 2 is put
back as soon as the JVM is up. Everything else the JVM or its Python workers write (an
OutOfMemoryError, a worker's traceback) still reaches the user.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

NOISE = (b"WARNING: Using incubator modules:",)


def _copy_lines(source: int, target: int) -> None:
    with os.fdopen(source, "rb", buffering=0) as pipe:
        pending = b""
        while chunk := pipe.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = b"".join(line + b"\n" for line in lines if not line.startswith(NOISE))
            if kept:
                os.write(target, kept)
        if pending and not pending.startswith(NOISE):
            os.write(target, pending)


@contextlib.contextmanager
def filtered_stderr_for_children() -> Iterator[None]:
    """Processes started inside this block write their standard error through the filter."""
    read_end, write_end = os.pipe()
    real_stderr = os.dup(2)
    os.dup2(write_end, 2)
    os.close(write_end)
    threading.Thread(
        target=_copy_lines, args=(read_end, real_stderr), name="jvm-stderr", daemon=True
    ).start()
    try:
        yield
    finally:
        # this process writes to the real standard error again; the JVM keeps the pipe
        os.dup2(real_stderr, 2)
