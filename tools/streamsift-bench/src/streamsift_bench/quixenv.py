"""An interpreter with quixstreams for the quixstreams baseline, beside streamsift's own.

quixstreams 3.28 requires confluent-kafka < 2.13 and pydantic < 2.14, while streamsift pins
confluent-kafka 2.16.1 and pydantic 2.14.3, so both cannot live in one environment (pip
refuses the combination). The bench therefore builds, once, an overlay virtualenv holding
quixstreams and its own dependencies; a `.pth` file then appends streamsift's environment
to its path, so pyarrow, chdb, clickhouse-connect, psutil and streamsift_bench.common
come from there while quixstreams' pins win where the two overlap.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

QUIXSTREAMS = "quixstreams==3.28.1"
ENV_VAR = "STREAMSIFT_QUIX_ENV"


class QuixEnvError(RuntimeError):
    """The quixstreams interpreter could not be built."""


def default_location() -> Path:
    """Inside streamsift's venv when writable (removed with it), else the user cache."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    name = QUIXSTREAMS.replace("==", "-")
    if sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK):
        return Path(sys.prefix) / "streamsift-bench" / name
    return Path.home() / ".cache" / "streamsift" / name


def _python(env: Path) -> Path:
    return env / "bin" / "python"


def ensure_quix_python(location: Path | None = None, log: object = None) -> Path:
    """Return the overlay interpreter, building it first if needed (once per location)."""
    env = location or default_location()
    marker = env / ".streamsift-ready"
    if marker.exists():
        return _python(env)
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.parent / f".{env.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another bench building the same env: wait for it
        if marker.exists():
            return _python(env)
        if callable(log):
            log(f"building the quixstreams baseline's interpreter at {env} (once)")
        staging = Path(tempfile.mkdtemp(prefix=f".{env.name}-", dir=env.parent))
        try:
            _build(staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if env.exists():
            shutil.rmtree(env)
        # Only scripts in bin/ hard-code the venv's path; the interpreter finds its prefix
        # from pyvenv.cfg beside it and the worker runs it with -m, so a rename is safe.
        staging.rename(env)
        marker.write_text(QUIXSTREAMS + "\n")
    return _python(env)


def _build(staging: Path) -> None:
    _run([sys.executable, "-m", "venv", "--without-pip", str(staging)])
    # pip of streamsift's environment installs into the overlay (no ensurepip download).
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--prefix",
            str(staging),
            "--ignore-installed",
            QUIXSTREAMS,
        ]
    )
    site = Path(sysconfig.get_path("purelib", vars={"base": str(staging)}))
    if not site.exists():
        raise QuixEnvError(f"no site-packages in {staging} after installing {QUIXSTREAMS}")
    main_site = sysconfig.get_paths()["purelib"]
    (site / "zz_streamsift_main_env.pth").write_text(
        f"import site; site.addsitedir({main_site!r})\n"
    )
    probe = subprocess.run(
        [str(_python(staging)), "-c", "import quixstreams, chdb, pyarrow, streamsift_bench.common"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise QuixEnvError(f"the quixstreams interpreter does not work: {probe.stderr[-2000:]}")


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-2000:]
        raise QuixEnvError(f"{' '.join(cmd[:4])} ... failed:\n{tail}")
