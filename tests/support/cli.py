"""The `streamsift` command as a user runs it: a process of its own, from the checkout's root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from support.paths import REPO

STREAMSIFT = [sys.executable, "-m", "streamsift.cli.main"]


def streamsift(
    *args: str,
    timeout: float = 300,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
    stdin: Any = subprocess.DEVNULL,
) -> subprocess.CompletedProcess:
    """Run `streamsift ARGS` to its end; its output as text. `env` adds to this environment."""
    return subprocess.run(
        [*STREAMSIFT, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=stdin,
    )


def start_streamsift(*args: str, out: Path) -> subprocess.Popen:
    """`streamsift ARGS` in a process group of its own (as under a terminal, so a Ctrl-C, a
    SIGINT to the group, reaches each of its processes); stdout and stderr go to the files
    `out`/stdout and `out`/stderr."""
    return subprocess.Popen(
        [*STREAMSIFT, *args],
        stdout=(out / "stdout").open("w"),
        stderr=(out / "stderr").open("w"),
        cwd=REPO,
        start_new_session=True,
    )


def run_until_caught_up(
    doc: dict, tmp_path: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`streamsift run FILE --until-caught-up` of the pipeline document `doc`, written to
    `tmp_path`/pipeline.yaml; `env` adds to this environment."""
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return streamsift("run", str(path), "--until-caught-up", timeout=timeout, env=env)
