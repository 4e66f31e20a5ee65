"""A class-data-sharing (CDS) archive of the classes Spark's driver JVM loads, built once.

A JVM starting Spark loads and verifies thousands of classes from jars; a dynamic CDS archive
(Java 13+) holds them parsed and verified, and maps them at the next start. The archive is
built once per installation (`make setup` runs `python -m streamsift.spark_host.class_archive_build`)
into the user's cache, named by what it depends on (the PySpark version, the java binary,
the JVM options that shape it). Optional all the way: no archive, a stale one or a failed
build only means a start without it (the JVM checks an archive's header and ignores one that
does not match; `-Xshare:auto`). But a truncated archive crashes Java 17 (SIGBUS, checked),
so an archive is used only beside its seal: a file holding its size, written once a JVM
started with it. STREAMSIFT_CLASS_ARCHIVE=off turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from pathlib import Path

from streamsift.spark_host.user_cache import user_cache_dir

ARCHIVE_ENV = "STREAMSIFT_CLASS_ARCHIVE"
DUMP_ENV = "STREAMSIFT_CLASS_ARCHIVE_DUMP"  # set for the JVM that writes the archive
BUILD_TIMEOUT_S = 300
# the JVM's own messages about an archive it cannot use are not the user's business
QUIET = "-Xlog:cds=off,cds+dynamic=off"
# Raised when the Spark work the archive is built from (class_archive_build._exercise) changes,
# so that `make setup` builds a new archive instead of keeping the old one. 2: the join;
# 3: checkpoint files through the FileSystem API (query_conf.py).
EXERCISE_VERSION = 3
# Archives kept in the cache: one per PySpark installation (each checkout's venv has its own).
KEEP_ARCHIVES = 4


def archive_dir() -> Path:
    return user_cache_dir("jvm")


def archive_path(java: str, shaping_options: str) -> Path:
    """Where the archive for this java, PySpark installation and JVM options lives.

    The installation's place is part of the key: the JVM records the jars' paths in the
    archive and ignores an archive made from jars elsewhere (another checkout's venv).
    """
    import pyspark

    real = Path(java).resolve()
    stat = real.stat()
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    key = (
        f"{pyspark.__version__}|{jars}|{real}|{stat.st_size}|{stat.st_mtime_ns}"
        f"|{shaping_options}|{EXERCISE_VERSION}"
    )
    return archive_dir() / f"spark-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def java_options(java: str, shaping_options: str) -> list[str]:
    """The JVM options that use the archive (or, for the build, write it); none without."""
    if os.environ.get(ARCHIVE_ENV, "").lower() == "off":
        return []
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return [f"-XX:ArchiveClassesAtExit={dump}", QUIET]
    try:
        path = archive_path(java, shaping_options)
    except OSError:
        return []
    if not is_sealed(path):
        return []
    return [f"-XX:SharedArchiveFile={path}", "-Xshare:auto", QUIET]


def prune(directory: Path, keep: int = KEEP_ARCHIVES) -> None:
    """Remove all but the `keep` most recently built archives (each ~175 MB)."""
    built = sorted(directory.glob("spark-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in built[keep:]:
        with contextlib.suppress(OSError):
            seal_of(old).unlink(missing_ok=True)
            old.unlink()


def seal_of(path: Path) -> Path:
    return path.with_name(path.name + ".size")


def is_sealed(path: Path) -> bool:
    """The archive is there, whole: its size is the one recorded when it was checked."""
    try:
        return seal_of(path).read_text().strip() == str(path.stat().st_size)
    except (OSError, ValueError):
        return False


def starts_with(java: str, archive: Path) -> bool:
    """Does a JVM start (and end) cleanly with this archive?"""
    try:
        done = subprocess.run(
            [java, f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", QUIET, "-version"],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def build(java: str, shaping_options: str, force: bool = False) -> Path | None:
    """Build the archive unless it exists: a child process runs a little Spark work with the
    dump option, and the file is moved into place only when its JVM wrote it whole."""
    path = archive_path(java, shaping_options)
    if is_sealed(path) and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    env = {**os.environ, DUMP_ENV: str(part)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    try:
        subprocess.run(
            [sys.executable, "-m", "streamsift.spark_host.class_archive_build", "--exercise"],
            env=env,
            timeout=BUILD_TIMEOUT_S,
            check=True,
            capture_output=True,
        )
        if not part.is_file() or not starts_with(java, part):
            return None
        seal_of(path).unlink(missing_ok=True)
        os.replace(part, path)
        seal_of(path).write_text(str(path.stat().st_size))
        prune(path.parent)
        return path
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        with contextlib.suppress(OSError):
            part.unlink()
