"""Spark's local Python processes start through a launcher that drops Spark's zipped pyspark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from streamsift.spark_host import python_interpreter as wp


def _path_seen_by(launcher: str, spark_home: str, pythonpath: str) -> list[str]:
    env = {**os.environ, "SPARK_HOME": spark_home, "PYTHONPATH": pythonpath}
    out = subprocess.run(
        [
            launcher,
            "-c",
            "import os, sys; print(os.environ['PYTHONPATH']); print(sys.argv[1:])",
            "an argument with spaces",
            "*",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert out[1] == "['an argument with spaces', '*']"  # arguments pass through untouched
    return out[0].split(":") if out[0] else []


def test_the_launcher_drops_only_sparks_own_zips(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    launcher = wp.worker_python(sys.executable)
    assert Path(launcher).parent == tmp_path / "cache" / "streamsift" / "python"
    home = "/opt/spark 4"
    spark_entries = [
        f"{home}/python/lib/pyspark.zip",
        f"{home}/python/lib/py4j-0.10.9.9-src.zip",
        f"{home}/jars/spark-core_2.13-4.3.0.jar",
    ]
    user_entries = [
        "/tmp/userFiles-1",
        "/deps/my lib.zip",
        "/opt/spark/python/lib/other.zip",
        "/p/*",
    ]
    seen = _path_seen_by(
        launcher, home, ":".join(spark_entries[:2] + user_entries + spark_entries[2:])
    )
    assert seen == user_entries
    assert _path_seen_by(launcher, home, "") == []
    assert wp.worker_python(sys.executable) == launcher  # written once, then reused


def test_an_unwritable_cache_means_this_interpreter(tmp_path, monkeypatch):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert wp.worker_python("/usr/bin/python3") == "/usr/bin/python3"
    assert list(tmp_path.iterdir()) == [blocked]  # nothing left behind
