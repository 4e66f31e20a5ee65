"""Pipelines on a real Spark standalone cluster on loopback (one master, two workers with one
core each, started with `spark-class` from the installed pyspark), against the bundled broker
and a ClickHouse server (the chdb-backed HTTP endpoint in its own process).

Every run is `streamsift run FILE --master spark://...` as a user starts it; executors get
streamsift from the packed environment the run ships. Judged by counting: ClickHouse holds
each expected row once. Kills are real SIGKILLs of whole process trees: a worker (its JVM,
its executor and the executor's Python workers), or the driver.
"""

from __future__ import annotations

import os
import sys
import tarfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import clickhouse_connect
import pytest
import yaml

from streamsift.sample_data.generator import (
    EventSpec,
    JoinSpec,
    Truth,
    generate,
    generate_join_streams,
    produce,
)
from streamsift.sample_data.join_events import (
    ROW_COLUMNS,
    TABLE,
    join_pipeline_doc,
    reference_rows,
)
from streamsift.spark_host import processes
from streamsift.spark_host.environment import (
    default_cache_dir,
    pack_environment,
    runtime_distributions,
)
from support.cli import STREAMSIFT, streamsift
from support.clickhouse import assert_each_event_once, count
from support.pipeline_docs import event_doc
from support.ports import free_port
from support.spark_cluster import LOOPBACK_DRIVER_CONF, StandaloneCluster
from support.waiting import wait_for

pytestmark = pytest.mark.integration

SPARK_CONF = {**LOOPBACK_DRIVER_CONF, "spark.sql.shuffle.partitions": "2"}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as c:
        yield c


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One --data-dir for every cluster run (the packed environment is cached per user)."""
    return tmp_path_factory.mktemp("cluster-data")


def both_workers_up(cluster: StandaloneCluster) -> None:
    """A previous test may have killed a worker: bring it back."""
    for w in cluster.workers:
        if w.proc is None or w.proc.poll() is not None:
            cluster.start_worker(w.name)
    cluster.wait_for_workers(len(cluster.workers))


def write_doc(doc: dict, path: Path, **runtime: object) -> Path:
    doc["runtime"] = {**doc.get("runtime", {}), "spark_conf": SPARK_CONF, **runtime}
    path.write_text(yaml.safe_dump(doc))
    return path


def start_run(file: Path, cluster: StandaloneCluster, data_dir: Path, log: Path):
    command = [*STREAMSIFT, "run", str(file)]
    command += ["--until-caught-up", "--master", cluster.url, "--data-dir", str(data_dir)]
    return processes.start(command, log, own_session=True, env=dict(os.environ))


def run_to_end(file: Path, cluster: StandaloneCluster, data_dir: Path, log: Path, timeout=300):
    proc = start_run(file, cluster, data_dir, log)
    try:
        code = proc.wait(timeout)
    finally:
        processes.kill_tree(proc)
    assert code == 0, log.read_text()[-3000:]
    return log.read_text()


def commits(checkpoint: Path) -> int:
    folder = checkpoint / "spark" / "commits"
    return len([p for p in folder.glob("[0-9]*")]) if folder.exists() else 0


def executor_pythons(cluster: StandaloneCluster) -> dict[str, set[str]]:
    """Per worker: the interpreters its executors' Python workers were started with (as
    /proc shows them: argv[0] resolved against the process's working directory)."""
    found: dict[str, set[str]] = {}
    for w in cluster.workers:
        for stat in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = stat.read_bytes().split(b"\0")
                cwd = os.readlink(stat.parent / "cwd")
            except OSError:
                continue
            is_worker = b"pyspark.daemon" in argv or b"pyspark.worker" in argv
            if is_worker and cwd.startswith(str(w.work_dir)):
                found.setdefault(w.name, set()).add(os.path.normpath(Path(cwd, argv[0].decode())))
    return found


def events_doc(broker, topic: str, port: int, checkpoint: Path, rows_per_batch: int) -> dict:
    return event_doc(
        bootstrap_servers=broker.bootstrap_servers,
        topic=topic,
        table=topic,
        clickhouse={"host": "127.0.0.1", "port": port},
        checkpoint_dir=checkpoint,
        sink={"max_batch_size": 500},
        runtime={"max_rows_per_batch": rows_per_batch},
    )


def produce_events(broker, topic: str, events: int, seed: int) -> Truth:
    broker.create_topic(topic, 4)
    truth = Truth()
    produce(
        broker.bootstrap_servers, topic, generate(EventSpec(events, 0.25, 400, seed=seed), truth)
    )
    return truth


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local S3 server (moto) with one bucket; yields its endpoint host:port."""
    import pyarrow.fs as pafs

    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    proc = processes.start(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        log,
        own_session=True,
    )
    endpoint = f"127.0.0.1:{port}"
    fs = pafs.S3FileSystem(
        access_key="testing",
        secret_key="testing",
        endpoint_override=endpoint,
        scheme="http",
        region="us-east-1",
        allow_bucket_creation=True,
    )

    def bucket_made() -> bool:
        fs.create_dir("dedup-state")  # OSError until the server answers
        return True

    try:
        wait_for(bucket_made, 30, what="the S3 server", interval=0.3, ignoring=OSError)
        yield endpoint
    finally:
        processes.kill_tree(proc)


# 6,000 events in micro-batches of 1,000 rows: enough batches that a worker kill after the
# first commit and a driver kill after the next one both land mid-run.
EVENTS, ROWS_PER_BATCH = 6_000, 1_000


def test_dedup_with_state_on_s3_survives_a_worker_kill_then_a_driver_kill_exactly(
    broker, cluster, data_dir, clickhouse, s3, tmp_path, unique_name, monkeypatch
):
    """One run, dedup state on a local S3 (moto; Spark's own checkpoint stays on the shared
    directory: s3a:// needs Hadoop jars not installable here). Executors on both workers run
    Python from the shipped environment. Mid-run, worker 1 is SIGKILLed (JVM, executor and
    Python workers): the run goes on committing on worker 2 and lets nothing through twice.
    Then, still mid-run, the driver is SIGKILLed; started again, it resumes from the
    checkpoint (restoring dedup state from S3) and ClickHouse ends exact."""
    both_workers_up(cluster)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # for this test's own listing below
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    table = unique_name
    truth = produce_events(broker, table, EVENTS, seed=33)
    checkpoint = tmp_path / "ckpt"
    location = f"s3://dedup-state/{table}?endpoint_override={s3}&scheme=http&region=us-east-1"
    doc = events_doc(broker, table, clickhouse, checkpoint, ROWS_PER_BATCH)
    executors_creds = {
        "spark.executorEnv.AWS_ACCESS_KEY_ID": "testing",
        "spark.executorEnv.AWS_SECRET_ACCESS_KEY": "testing",
    }
    path = write_doc(
        doc,
        tmp_path / "p.yaml",
        state_location=location,
        spark_conf={**SPARK_CONF, **executors_creds},
    )

    log = tmp_path / "first.log"
    proc = start_run(path, cluster, data_dir, log)
    try:
        wait_for(lambda: commits(checkpoint) >= 1, 240, what="a commit", proc=proc, log=log)
        wait_for(
            lambda: len(executor_pythons(cluster)) == 2,
            60,
            what="executors on both workers",
            proc=proc,
            log=log,
        )
        pythons = executor_pythons(cluster)
        at_worker_kill = commits(checkpoint)
        assert count(clickhouse, table) < truth.expected_unique  # rows still to come
        assert cluster.kill_worker(cluster.workers[0]) >= 0
        # the killed executor's temp files (the environment archive it fetched) stay in its
        # work directory, which the cluster manages, instead of the host's temp directory
        left = cluster.workers[0].work_dir.glob("app-*/*/spark-*/streamsift-env-*.tar.gz")
        assert any(left)
        # the run goes on without worker 1: a later micro-batch commits, nothing doubled
        wait_for(
            lambda: commits(checkpoint) > at_worker_kill,
            240,
            what="a commit after the kill",
            proc=proc,
            log=log,
        )
        assert_each_event_once(clickhouse, table)
    finally:
        processes.kill_tree(proc)  # the driver: its JVM and Python, SIGKILL
    assert count(clickhouse, table) < truth.expected_unique  # killed mid-run
    assert set(pythons) == {"worker1", "worker2"}  # executors ran on both workers
    for worker, interpreters in pythons.items():
        for python in interpreters:  # e.g. .../work/app-.../0/environment/bin/python
            assert python.endswith("/environment/bin/python"), (worker, python)

    cluster.start_worker("worker1")  # registers while the driver starts again
    run_to_end(path, cluster, data_dir, tmp_path / "second.log")
    assert_each_event_once(clickhouse, table, truth.expected_unique)
    assert not (checkpoint / "state").exists()  # no dedup state on the shared directory
    import pyarrow.fs as pafs

    fs, root = pafs.FileSystem.from_uri(location)
    found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    assert any(i.base_name.startswith("log-") for i in found)


def test_dedup_and_join_on_the_cluster_is_exact(
    broker, cluster, data_dir, clickhouse, tmp_path, unique_name
):
    """Dedup on each side, then the join, on both workers; the dedup state on the shared
    directory (the checkpoint)."""
    both_workers_up(cluster)
    streams = generate_join_streams(JoinSpec(orders=1_500, users=100, seed=11))
    expected = reference_rows(streams.orders, streams.users, "inner")
    topics = {"orders": f"{unique_name}_o", "users": f"{unique_name}_u"}
    for side, events, key in (
        ("orders", streams.orders, "order_id"),
        ("users", streams.users, "event_id"),
    ):
        broker.create_topic(topics[side], 2)
        produce(broker.bootstrap_servers, topics[side], events, key_field=key)
    checkpoint = tmp_path / "ckpt"
    doc = join_pipeline_doc(
        broker.bootstrap_servers,
        tmp_path,
        "inner",
        10_000,  # one micro-batch: see cli/demo_join.py on the join's watermark
        clickhouse={"host": "127.0.0.1", "port": clickhouse},
        checkpoint_dir=checkpoint,
        name=f"join-{unique_name[-8:]}",
    )
    for src in doc["sources"]:
        src["topic"] = topics[src["name"]]
    table = f"{unique_name}_joined"
    doc["sink"]["table"] = table
    # runtime.spark_conf overrides streamsift's default of 2 shuffle partitions
    path = write_doc(
        doc, tmp_path / "p.yaml", spark_conf={**SPARK_CONF, "spark.sql.shuffle.partitions": "3"}
    )
    run_to_end(path, cluster, data_dir, tmp_path / "run.log")
    client = clickhouse_connect.get_client(host="127.0.0.1", port=clickhouse)
    actual = Counter(
        (o, e, float(a), n, p)
        for o, e, a, n, p in client.query(f"SELECT {ROW_COLUMNS} FROM {table}").result_rows
    )
    assert table != TABLE and sum(expected.rows.values()) > 500
    assert actual == expected.rows
    assert list((checkpoint / "state" / "dedup").rglob("log-*.arrow"))
    # the override took effect: the join's state stores hold 3 partitions each
    operators = [p for p in (checkpoint / "spark" / "state").iterdir() if p.is_dir()]
    assert operators
    for operator in operators:
        partitions = {p.name for p in operator.iterdir() if p.name.isdigit()}
        assert partitions == {"0", "1", "2"}, operator


def test_bench_on_the_cluster_reports_a_one_and_a_two_worker_run(broker, cluster, tmp_path):
    """`streamsift bench --master`: the dedup drain on one executor core, then on two; both
    exact, both reported (a functional check on this 2-core machine, not a speed-up). On the
    session's broker and a small backlog: each drain is one micro-batch either way."""
    both_workers_up(cluster)
    out = tmp_path / "bench"
    proc = streamsift(
        *["bench", "--master", cluster.url, "--events", "1000"],
        *["--bootstrap-servers", broker.bootstrap_servers, "--out", str(out), "--no-plots"],
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = yaml.safe_load((out / "results.json").read_text())
    assert set(results["drain"]) == {"dedup@1-worker", "dedup@2-workers"}
    for name, run in results["drain"].items():
        assert run["exact"] and run["read"] == 1000, (name, run)
    report = (out / "report.md").read_text()
    assert "dedup@1-worker" in report and "dedup@2-workers" in report


def test_packed_environment_holds_streamsift_and_its_dependencies_but_not_spark():
    names = {d.metadata["Name"].lower() for d in runtime_distributions()}
    assert {"pyarrow", "confluent-kafka", "rocksdict", "pydantic"} <= names
    assert not names & {"pyspark", "py4j", "chdb", "pytest"}
    # the cache the cluster runs use (packing ~160 MB afresh costs ~20 s on 2 cores)
    packed = pack_environment(default_cache_dir())
    again = pack_environment(default_cache_dir())
    assert again.reused and again.path == packed.path
    with tarfile.open(packed.path) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["bin/python"].issym()
    assert "pyvenv.cfg" in members
    site = next(Path(n).parent.parent for n in members if n.endswith("streamsift/__init__.py"))
    assert (site / "streamsift/transforms/dedup/shared_state.py").as_posix() in members
    assert not any("/pyspark/" in n for n in members)
