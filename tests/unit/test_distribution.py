"""What each distribution ships: streamsift's wheel holds the product alone (no bench, load or
test tools) but all that `streamsift demo` needs; the tools' wheel (tools/streamsift-bench)
declares its three commands, and an installed copy adds them to `streamsift --help`.

Both wheels are built from copies of their sources in a temp dir, so no build/ or *.egg-info
lands in the repo; they are built without build isolation, with the setuptools the dev
extras pin (nothing is fetched while the test runs).
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support.paths import REPO

TOOLS = REPO / "tools" / "streamsift-bench"
STREAMSIFT = Path(sys.executable).with_name("streamsift")
TOOL_COMMANDS = {"bench", "loadgen", "chaos"}
JUNK = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")


def _copy_project(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (src / name).exists():
            shutil.copy2(src / name, dst / name)
    shutil.copytree(src / "src", dst / "src", ignore=JUNK)
    return dst


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """distribution name -> its wheel (both built by one pip call)."""
    tmp = tmp_path_factory.mktemp("wheels")
    product = _copy_project(REPO, tmp / "streamsift")
    tools = _copy_project(TOOLS, tmp / "streamsift-bench")
    out = tmp / "out"
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    command += ["-q", "-w", str(out)]
    done = subprocess.run(
        [*command, str(product), str(tools)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    built = {wheel.name.split("-")[0]: wheel for wheel in out.glob("*.whl")}
    assert set(built) == {"streamsift", "streamsift_bench"}, sorted(built)
    return built


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def _entry_points(wheel: Path) -> dict[str, dict[str, str]]:
    """group -> {name: target} from the wheel's dist-info/entry_points.txt."""
    with zipfile.ZipFile(wheel) as zf:
        (path,) = [n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt")]
        text = zf.read(path).decode()
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return {group: dict(parser[group]) for group in parser.sections()}


def test_product_wheel_holds_no_tools(wheels: dict[str, Path]) -> None:
    names = _members(wheels["streamsift"])
    tops = {n.split("/")[0] for n in names}
    assert tops == {"streamsift", "streamsift-0.1.0.dist-info"}, sorted(tops)
    forbidden = ("streamsift/bench/", "streamsift/loadtest/", "streamsift/testing/")
    assert [n for n in names if n.startswith(forbidden)] == []
    assert [n for n in names if "streamsift_bench" in n] == []
    assert [n for n in names if "decode_bench" in n or "quix" in n] == []
    assert [n for n in names if "__pycache__" in n or ".egg-info" in n] == []


def test_product_wheel_declares_no_tool_commands(wheels: dict[str, Path]) -> None:
    assert _entry_points(wheels["streamsift"]) == {
        "console_scripts": {"streamsift": "streamsift.cli.main:entry"}
    }


def test_product_wheel_holds_what_the_demo_needs(wheels: dict[str, Path]) -> None:
    names = set(_members(wheels["streamsift"]))
    sample_data = sorted(
        f"streamsift/sample_data/{p.name}"
        for p in (REPO / "src/streamsift/sample_data").glob("*.py")
    )
    assert "streamsift/sample_data/__init__.py" in sample_data
    needed = [
        *sample_data,
        "streamsift/spark_host/log4j2.properties",
        "streamsift/cli/demo.py",
        "streamsift/cli/demo_join.py",
        "streamsift/embedded/broker.py",
    ]
    assert [n for n in needed if n not in names] == []


def test_tools_wheel_declares_the_three_commands(wheels: dict[str, Path]) -> None:
    names = _members(wheels["streamsift_bench"])
    tops = {n.split("/")[0] for n in names}
    assert tops == {"streamsift_bench", "streamsift_bench-0.1.0.dist-info"}, sorted(tops)
    assert _entry_points(wheels["streamsift_bench"]) == {
        "streamsift.commands": {c: f"streamsift_bench.commands.{c}" for c in TOOL_COMMANDS}
    }
    for command in TOOL_COMMANDS:
        assert f"streamsift_bench/commands/{command}.py" in names


def test_installed_tools_add_their_commands_to_the_cli() -> None:
    done = subprocess.run([str(STREAMSIFT), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("{", 1)[1].split("}", 1)[0].split(",")
    assert set(listed) >= TOOL_COMMANDS, listed
    for command in TOOL_COMMANDS:
        done = subprocess.run(
            [str(STREAMSIFT), command, "--help"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"usage: streamsift {command}"), done.stdout[:200]
