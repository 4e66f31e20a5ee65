"""A real Spark standalone cluster on loopback, from the installed pyspark alone: one master
and N workers started with `spark-class`, each worker with its own work and local
directories, each process tree in a session of its own so a test can SIGKILL one worker (its
JVM, its executor and the executor's Python workers) like a lost machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from streamsift.spark_host import processes
from support.ports import free_port
from support.waiting import wait_for

# The master drops a worker it has not heard from for this long (Spark's default is 60 s).
WORKER_TIMEOUT_S = 8
# What a driver on this machine needs to reach the cluster over loopback only.
LOOPBACK_DRIVER_CONF = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class Worker:
    name: str
    work_dir: Path
    local_dir: Path
    proc: subprocess.Popen | None = None


@dataclass
class StandaloneCluster:
    root: Path
    workers_count: int = 2
    cores: int = 1
    memory: str = "1536m"
    port: int = 0
    webui_port: int = 0
    master_proc: subprocess.Popen | None = None
    workers: list[Worker] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self, local_dir: Path | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env["SPARK_HOME"] = str(spark_home())
        # both sides: a worker heartbeats every timeout/4 by its own setting
        env["SPARK_MASTER_OPTS"] = f"-Dspark.worker.timeout={WORKER_TIMEOUT_S}"
        env["SPARK_WORKER_OPTS"] = f"-Dspark.worker.timeout={WORKER_TIMEOUT_S}"
        env["PYSPARK_PYTHON"] = sys.executable  # only the fallback: apps ship their own
        if local_dir is not None:
            env["SPARK_LOCAL_DIRS"] = str(local_dir)
        return env

    def _spark_class(self, *args: str) -> list[str]:
        return [str(spark_home() / "bin" / "spark-class"), *args]

    def start(self, timeout: float = 120.0) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self.webui_port = self.webui_port or free_port()
        self.master_proc = processes.start(
            self._spark_class(
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(self.webui_port),
            ),
            self.root / "master.log",
            own_session=True,
            env=self._env(),
        )
        for i in range(self.workers_count):
            self.start_worker(f"worker{i + 1}")
        self.wait_for_workers(self.workers_count, timeout)
        return self

    def start_worker(self, name: str) -> Worker:
        work = self.root / name / "work"
        local = self.root / name / "local"
        work.mkdir(parents=True, exist_ok=True)
        local.mkdir(parents=True, exist_ok=True)
        worker = Worker(name, work, local)
        worker.proc = processes.start(
            self._spark_class(
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(work),
                "--webui-port",
                str(free_port()),
                self.url,
            ),
            self.root / f"{name}.log",
            own_session=True,
            env=self._env(local),
        )
        self.workers = [w for w in self.workers if w.name != name] + [worker]
        return worker

    def state(self) -> dict[str, Any]:
        """The master's view (its web UI's JSON): workers, applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as r:
            return json.loads(r.read())

    def alive_workers(self) -> int:
        try:
            return int(self.state().get("aliveworkers", 0))
        except OSError:
            return 0

    def wait_for_workers(self, n: int, timeout: float = 120.0) -> None:
        wait_for(lambda: self.alive_workers() == n, timeout, what=f"{n} Spark workers to register")

    def kill_worker(self, worker: Worker) -> int:
        """SIGKILL a worker's JVM, its executors and their Python workers at once."""
        assert worker.proc is not None
        return processes.kill_tree(worker.proc)

    def stop(self) -> None:
        for worker in self.workers:
            if worker.proc is not None:
                processes.kill_tree(worker.proc)
        if self.master_proc is not None:
            processes.kill_tree(self.master_proc)

    def __enter__(self) -> StandaloneCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
