"""runtime.processes on real processes: a kill takes down the whole tree, wherever its members
moved (own process group, like PySpark's daemons; own session, like a spawned endpoint)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamsift.spark_host import processes
from support.paths import REPO

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

# A parent that starts one grandchild (moved by `how`), prints its pid and sleeps.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen(
    [sys.executable, "-c", "import os, time; {how}; time.sleep(600)"], {popen}
)
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _start_tree(tmp_path: Path, how: str, popen: str, own_session: bool):
    script = PARENT.format(how=how, popen=popen)
    log = tmp_path / "tree.log"
    proc = processes.start([sys.executable, "-c", script], log, own_session=own_session)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not log.read_text().strip():
        time.sleep(0.05)
    return proc, int(log.read_text().split()[0])


def test_kill_tree_of_a_session_kills_a_member_that_left_the_group(tmp_path):
    proc, grandchild = _start_tree(tmp_path, "os.setpgid(0, 0)", "", own_session=True)
    time.sleep(0.3)  # let the grandchild move into its own group
    assert os.getpgid(grandchild) == grandchild != proc.pid
    assert processes.kill_tree(proc) == 1  # one process outside the run's group
    assert proc.returncode == -9
    assert not _alive(grandchild)


def test_kill_tree_without_a_session_kills_a_descendant_in_a_session_of_its_own(tmp_path):
    proc, grandchild = _start_tree(tmp_path, "pass", "start_new_session=True", own_session=False)
    assert os.getsid(grandchild) == grandchild
    processes.kill_tree(proc)
    assert proc.returncode == -9
    assert not _alive(grandchild)


def test_stop_waits_for_a_process_that_exits_on_sigterm(tmp_path):
    proc = processes.start([sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "x")
    assert processes.stop(proc, 10) == -15


def test_bench_common_imports_without_confluent_pydantic_or_pyspark():
    # the quixstreams worker's interpreter has other versions of these: bench.common must not
    # need them (nor anything of streamsift that does)
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("confluent_kafka", "pydantic", "pyspark"):
            raise ImportError("blocked " + name)
sys.meta_path.insert(0, Block())
import streamsift_bench.common
"""
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_product_module_imports_the_test_helpers():
    src = REPO / "src" / "streamsift"
    offenders = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(name == "support" or name.startswith("support.") for name in names):
                offenders.append(str(path.relative_to(src)))
    assert offenders == []
