"""The Spark JVM's standard error, passed on without the lines that say nothing to a user.

Spark's launcher always starts the JVM with `--add-modules=jdk.incubator.vector`, and the JVM
then prints `WARNING: Using incubator modules: jdk.incubator.vector` on every start; no JVM
flag turns it off. The JVM inherits this process's standard error when PySpark launches it,
so while it starts we point file descriptor 2 at a pipe: a thread copies what arrives to the
real standard error, dropping the known noise, and this process's own descriptor 2 is put
back as soon as the JVM is up. Everything else the JVM or its Python workers write (an
OutOfMemoryError, a worker's traceback) still reaches the user.

The JVM may start on a background thread while this process goes on (engine/runner.py),
so this process may write its own last words (a start-up error) into the pipe and exit
before the JVM is up: at exit, the pipe is flushed through the copying thread first.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Iterator

NOISE = (b"WARNING: Using incubator modules:",)
FLUSH_MARK = b"\x00streamsift: stderr flushed\x00"  # never copied; says all before it was
FLUSH_WAIT_S = 2.0


def _copy_lines(source: int, target: int, flushed: threading.Event) -> None:
    with os.fdopen(source, "rb", buffering=0) as pipe:
        pending = b""
        while chunk := pipe.read(65536):
            pending += chunk
            marked = FLUSH_MARK in pending
            *lines, pending = pending.replace(FLUSH_MARK, b"").split(b"\n")
            kept = b"".join(line + b"\n" for line in lines if not line.startswith(NOISE))
            if marked:  # all before the mark goes out now, a line cut short too
                kept, pending = kept + pending, b""
            if kept:
                os.write(target, kept)
            if marked:
                flushed.set()
        if pending and not pending.startswith(NOISE):
            os.write(target, pending)


@contextlib.contextmanager
def filtered_stderr_for_children() -> Iterator[None]:
    """Processes started inside this block write their standard error through the filter."""
    read_end, write_end = os.pipe()
    real_stderr = os.dup(2)
    os.dup2(write_end, 2)
    os.close(write_end)
    flushed = threading.Event()
    threading.Thread(
        target=_copy_lines, args=(read_end, real_stderr, flushed), name="jvm-stderr", daemon=True
    ).start()

    def flush_at_exit() -> None:
        """Exiting while the JVM still starts: let the copier pass on what this process wrote."""
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
            os.write(2, FLUSH_MARK)
            flushed.wait(FLUSH_WAIT_S)
            os.dup2(real_stderr, 2)

    atexit.register(flush_at_exit)
    try:
        yield
    finally:
        # this process writes to the real standard error again; the JVM keeps the pipe
        atexit.unregister(flush_at_exit)
        os.dup2(real_stderr, 2)
