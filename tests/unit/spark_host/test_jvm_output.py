"""The JVM's standard error filter: noise dropped, the rest passed on, and a flush mark that
hands on this process's own last line (written while the JVM starts) before it exits."""

from __future__ import annotations

import os
import threading

from streamsift.spark_host.jvm_output import FLUSH_MARK, _copy_lines


def test_noise_is_dropped_and_a_flush_mark_passes_on_a_line_cut_short() -> None:
    source_r, source_w = os.pipe()
    target_r, target_w = os.pipe()
    flushed = threading.Event()
    copier = threading.Thread(target=_copy_lines, args=(source_r, target_w, flushed))
    copier.start()
    os.write(source_w, b"WARNING: Using incubator modules: jdk.incubator.vector\nkept\n")
    os.write(source_w, b"error: ClickHouse did not answer" + FLUSH_MARK)
    assert flushed.wait(5)
    assert os.read(target_r, 4096) == b"kept\nerror: ClickHouse did not answer"
    os.close(source_w)
    copier.join(5)
    os.close(target_r)
    os.close(target_w)
