"""Each import contract in pyproject.toml catches what it is there to catch.

A copy of the source trees gets one forbidden import per contract, in a module of its own;
`lint-imports` on the copy must then report every contract broken, each by its own probe.
(`make test` runs `lint-imports` on the real tree, where all are kept.)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

from support.paths import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# contract name -> (module the probe is written as, the import it makes)
PROBES = {
    "the layers: faces, service, engine, stages, Spark host, config, errors": (
        "streamsift.engine._probe_layers",
        "import streamsift.service.core",
    ),
    "config does no network I/O: no HTTP or Kafka client": (
        "streamsift.config._probe_network",
        "import httpx",
    ),
    "faces go through the engine or the service, never to a stage directly": (
        "streamsift.cli._probe_stage",
        "import streamsift.sources.kafka",
    ),
    "the SDK imports only config and the error hierarchy": (
        "streamsift.sdk._probe_sdk",
        "import streamsift.engine.runner",
    ),
    "the wire models import only pydantic, config and the error hierarchy": (
        "streamsift.wire._probe_wire",
        "import fastapi",
    ),
    "the product never imports the bench and load tools": (
        "streamsift.service._probe_tools",
        "import streamsift_bench.chaos",
    ),
    "the tools use the product's rooms, not the service or the API": (
        "streamsift_bench._probe_service",
        "import streamsift.service.core",
    ),
    "the tools borrow only the CLI's output helpers": (
        "streamsift_bench._probe_cli",
        "import streamsift.cli.main",
    ),
}


def contract_names() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def test_every_contract_has_a_probe() -> None:
    assert sorted(contract_names()) == sorted(PROBES)


def test_a_forbidden_import_breaks_each_contract(tmp_path: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", tmp_path / "src", ignore=ignore)
    tools = REPO / "tools" / "streamsift-bench" / "src"
    shutil.copytree(tools, tmp_path / "tools", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, statement in PROBES.values():
        top = "tools" if module.startswith("streamsift_bench") else "src"
        path = tmp_path / top / Path(*module.split(".")).with_suffix(".py")
        path.write_text(f'"""A forbidden import, for the contract test."""\n\n{statement}\n')

    env = dict(os.environ, PYTHONPATH=f"{tmp_path / 'src'}{os.pathsep}{tmp_path / 'tools'}")
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode != 0, out
    broken_report = out.split("Broken contracts", 1)[1]
    for name, (module, _) in PROBES.items():
        assert re.search(rf"^{re.escape(name)} BROKEN$", out, re.M), (name, out)
        # the contract's own section names its probe
        section = broken_report.split(name, 1)[1]
        following = [n for n in PROBES if n != name and n in section]
        if following:
            section = section[: min(section.index(n) for n in following)]
        assert module in section, (name, section)
