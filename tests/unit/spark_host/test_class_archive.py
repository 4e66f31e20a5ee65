"""The JVM class archive is optional: used only when present and whole (sealed)."""

from __future__ import annotations

import os

from streamsift.spark_host import class_archive


def test_the_archive_is_used_only_when_sealed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(class_archive.ARCHIVE_ENV, raising=False)
    monkeypatch.delenv(class_archive.DUMP_ENV, raising=False)
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\n")
    path = class_archive.archive_path(str(java), "-Xfoo")
    assert class_archive.java_options(str(java), "-Xfoo") == []  # none built: start without

    path.parent.mkdir(parents=True)
    path.write_bytes(b"x" * 100)
    assert class_archive.java_options(str(java), "-Xfoo") == []  # no seal: never checked
    class_archive.seal_of(path).write_text("100")
    options = class_archive.java_options(str(java), "-Xfoo")
    assert f"-XX:SharedArchiveFile={path}" in options and "-Xshare:auto" in options

    path.write_bytes(b"x" * 60)  # truncated (it would crash the JVM): not used
    assert class_archive.java_options(str(java), "-Xfoo") == []
    assert class_archive.archive_path(str(java), "-Xbar") != path  # other options, other archive
    import pyspark

    here = pyspark.__file__
    monkeypatch.setattr(
        pyspark, "__file__", str(tmp_path / "other-venv" / "pyspark" / "__init__.py")
    )
    assert class_archive.archive_path(str(java), "-Xfoo") != path  # other jars, other archive
    monkeypatch.setattr(pyspark, "__file__", here)
    monkeypatch.setattr(class_archive, "EXERCISE_VERSION", class_archive.EXERCISE_VERSION + 1)
    assert class_archive.archive_path(str(java), "-Xfoo") != path  # built from other work
    monkeypatch.setattr(class_archive, "EXERCISE_VERSION", class_archive.EXERCISE_VERSION - 1)

    path.write_bytes(b"x" * 100)
    monkeypatch.setenv(class_archive.ARCHIVE_ENV, "off")
    assert class_archive.java_options(str(java), "-Xfoo") == []


def test_only_the_most_recently_built_archives_are_kept(tmp_path):
    for age in range(6):
        archive = tmp_path / f"spark-{age}.jsa"
        archive.write_bytes(b"x")
        class_archive.seal_of(archive).write_text("1")
        os.utime(archive, (1_000_000 - age, 1_000_000 - age))
    class_archive.prune(tmp_path, keep=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        n for age in range(4) for n in (f"spark-{age}.jsa", f"spark-{age}.jsa.size")
    )
