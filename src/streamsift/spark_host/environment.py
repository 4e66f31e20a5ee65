"""The packed Python environment that Spark executors run streamsift with.

PySpark's documented way to give executors their Python dependencies: a packed environment in
`spark.archives` (`env.tar.gz#environment`), unpacked by Spark in each executor's work
directory, with `./environment/bin/python` as the workers' interpreter. This module builds
such an archive from the running installation: streamsift's own package (also when installed
in editable mode, which venv-pack refuses) and its runtime dependencies as installed, found
through their package metadata. PySpark and py4j stay out: every Spark installation ships
them to its Python workers (`$SPARK_HOME/python/lib/pyspark.zip`), and they would add ~490 MB;
so does chdb (embedded ClickHouse, ~530 MB), which a cluster run refuses.

The archive is a virtual environment whose `bin/python` links to the same base interpreter as
here (as venv-pack's archives do): nodes need that Python version at that path, nothing else.
Archives are cached by a digest of what goes in them, so an unchanged installation is packed
once.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import os
import re
import sys
import sysconfig
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import streamsift
from streamsift.spark_host.user_cache import user_cache_dir

# Shipped with Spark itself, on every executor's PYTHONPATH.
PROVIDED_BY_SPARK = frozenset({"pyspark", "py4j"})
# Embedded ClickHouse (~530 MB), which a cluster run refuses: executors insert over HTTP.
NOT_ON_EXECUTORS = frozenset({"chdb", "chdb-core"})
ARCHIVE_ALIAS = "environment"
EXECUTOR_PYTHON = f"./{ARCHIVE_ALIAS}/bin/python"
KEEP_ARCHIVES = 3  # cached archives kept (a running app may still be shipping an older one)
# ... and none used within this long is deleted: another installation sharing the cache (a
# second checkout, CI beside a working tree) builds its own, and a running app still ships its
# archive to each executor it starts.
KEEP_USED_WITHIN_S = 24 * 3600
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class PackedEnvironment:
    path: Path
    size_bytes: int
    seconds: float  # time spent packing (0.0 when an archive was reused)
    reused: bool


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(root: str = "streamsift") -> list[md.Distribution]:
    """The installed distributions streamsift needs at run time (without extras), minus
    those Spark provides; `root` itself is not included."""
    seen: dict[str, md.Distribution] = {}
    todo = [root]
    while todo:
        name = _canonical(todo.pop())
        if name in seen or name in PROVIDED_BY_SPARK or name in NOT_ON_EXECUTORS:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # a dependency for another platform or Python version
        seen[name] = dist
        for req in dist.requires or ():
            requirement, _, marker = req.partition(";")
            if "extra" in marker:
                continue
            match = _NAME.match(requirement)
            if match:
                todo.append(match.group(1))
    seen.pop(_canonical(root), None)
    return sorted(seen.values(), key=lambda d: _canonical(d.metadata["Name"]))


def _distribution_files(dist: md.Distribution, site: Path) -> Iterator[tuple[Path, str]]:
    """(file on disk, path inside site-packages) for a distribution's installed files."""
    for entry in dist.files or ():
        if ".." in entry.parts:
            continue  # console scripts and data outside site-packages
        src = Path(str(dist.locate_file(entry)))
        if src.is_file():
            try:
                yield src, src.relative_to(site).as_posix()
            except ValueError:
                continue


def _streamsift_files() -> Iterator[tuple[Path, str]]:
    """streamsift's own modules and data, wherever it is installed (editable or not)."""
    package = Path(streamsift.__file__).parent
    for src in sorted(package.rglob("*")):
        if src.is_file() and "__pycache__" not in src.parts:
            yield src, ("streamsift" / src.relative_to(package)).as_posix()


def _contents() -> list[tuple[Path, str]]:
    site = Path(sysconfig.get_paths()["purelib"])
    files = list(_streamsift_files())
    for dist in runtime_distributions():
        files.extend(_distribution_files(dist, site))
    return files


def _digest(files: list[tuple[Path, str]]) -> str:
    h = hashlib.sha256(sys.version.encode())
    h.update(str(_base_python()).encode())
    for src, name in files:
        st = src.stat()
        h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _base_python() -> Path:
    return Path(getattr(sys, "_base_executable", sys.executable)).resolve()


def pack_environment(out_dir: Path, archive: Path | None = None) -> PackedEnvironment:
    """Build (or reuse) the archive. Without `archive`, it is named by the digest of its
    contents in `out_dir`, and an existing one is reused."""
    started = time.monotonic()
    files = _contents()
    digest = _digest(files)
    target = archive or out_dir / f"streamsift-env-{digest}.tar.gz"
    if archive is None and target.exists():
        try:
            os.utime(target)  # used now: pruning goes by last use
            return PackedEnvironment(target, target.stat().st_size, 0.0, reused=True)
        except FileNotFoundError:  # pruned by another process just now: build it again
            pass
    target.parent.mkdir(parents=True, exist_ok=True)
    base = _base_python()
    pyver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = f"lib/{pyver}/site-packages"
    partial = target.with_name(target.name + f".{os.getpid()}.partial")
    with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
        _add_text(
            tar,
            "pyvenv.cfg",
            f"home = {base.parent}\ninclude-system-site-packages = false\n"
            f"version = {'.'.join(map(str, sys.version_info[:3]))}\n",
        )
        for name in ("python", "python3", pyver):
            link = tarfile.TarInfo(f"bin/{name}")
            link.type = tarfile.SYMTYPE
            link.linkname = str(base)
            tar.addfile(link)
        for src, name in files:
            tar.add(str(src), arcname=f"{site}/{name}", recursive=False)
    partial.replace(target)
    if archive is None:
        _prune(out_dir, keep=KEEP_ARCHIVES)
    return PackedEnvironment(
        target, target.stat().st_size, time.monotonic() - started, reused=False
    )


def _prune(out_dir: Path, keep: int, used_within_s: float = KEEP_USED_WITHIN_S) -> None:
    """Delete cached archives (each install or edit makes one) beyond the `keep` most recently
    used, unless one was used within `used_within_s`."""
    used: list[tuple[float, Path]] = []
    for path in out_dir.glob("streamsift-env-*.tar.gz"):
        with contextlib.suppress(FileNotFoundError):  # another process may prune too
            used.append((path.stat().st_mtime, path))
    stale_before = time.time() - used_within_s
    for mtime, old in sorted(used)[:-keep]:
        if mtime < stale_before:
            old.unlink(missing_ok=True)


def _add_text(tar: tarfile.TarFile, name: str, text: str) -> None:
    import io

    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def default_cache_dir() -> Path:
    """Where packed archives are kept between runs: the user's cache (archives are named by
    their contents, so every data dir and pipeline shares them)."""
    return user_cache_dir("environments")


def archive_setting(path: Path) -> str:
    """The `spark.archives` value for an archive: unpacked as ./environment on executors."""
    return f"{path.resolve()}#{ARCHIVE_ALIAS}"
