"""Many pipelines in one pipeline host (service/pipeline_host.py), each a query of its own.

One service, warm from its start, runs five pipelines in its host and a sixth in a process
of its own (`runtime.isolation: process`). Judged by counting, each test in turn:

1. one pipeline fed malformed messages (they go to its DLQ) and one whose ClickHouse does
   not answer (it retries, then fails) beside three good ones: the others exact, the two
   alone in their troubles, all in one host process; the isolated one in its own;
2. one pipeline stopped, edited and resumed while the others write: no gap, no double;
3. kill -9 of the host mid-run: the service starts a new host, every pipeline resumes from
   its checkpoint, exact; the isolated pipeline's process is untouched;
4. kill -9 of the host's JVM alone (as an out-of-memory JVM ends itself): the host sees it
   gone and exits, and the same happens.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from streamsift.embedded.broker import Broker, free_port
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from streamsift.service.pipeline_host import EXIT_ON_OOM
from streamsift.spark_host.processes import kill_pid_tree
from support.service_pipeline import (
    START_TIMEOUT_S,
    all_exact,
    pipeline_doc,
    produce,
    running_service,
)
from support.waiting import wait_for

pytestmark = pytest.mark.integration

GOOD = ("host-a", "host-b", "host-c")
MALFORMED = "host-malformed"
REFUSED = "host-refused"
ISOLATED = "host-isolated"
EXACT = (*GOOD, MALFORMED, ISOLATED)  # the pipelines whose tables are checked
BAD_MESSAGES = (b"{not json", b"[1, 2]", b'{"event_id": "x", "n": "not a number"}')


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("host") / "data"


@pytest.fixture(scope="module")
def chdb(data_dir: Path) -> Path:
    return data_dir / "clickhouse"


@pytest.fixture(scope="module")
def service(data_dir: Path) -> Iterator[PipelineService]:
    with running_service(data_dir, warm_host=True) as svc:  # as `serve` starts it
        yield svc


def _wait_exact(service: PipelineService, chdb: Path, events: int, what: str) -> None:
    wait_for(
        lambda: all_exact(service, chdb, EXACT, events),
        START_TIMEOUT_S,
        what=f"every pipeline Running with {events} rows {what}",
        interval=0.5,
        ignoring=(OSError,),
    )


def _wait_counts(service: PipelineService, events: int) -> None:
    """Each pipeline's counts over all its runs equal its table: `events` written, each
    read twice (the re-send), and the malformed messages read too."""
    for name in EXACT:
        expected = (events, 2 * events + (len(BAD_MESSAGES) if name == MALFORMED else 0))
        wait_for(
            lambda name=name, expected=expected: (
                (service.status(name).written, service.status(name).read) == expected
            ),
            30,
            what=f"{name}'s counts {expected}",
        )


def produce_in_steps(broker: Broker, ids: range, step: int = 20) -> None:
    """Each pipeline's events in steps of `step` ids (each sent twice), all topics in turn."""
    for start in range(ids.start, ids.stop, step):
        for name in EXACT:
            produce(broker, name, range(start, min(start + step, ids.stop)))


def test_five_pipelines_share_a_host_and_fail_alone(
    service: PipelineService, broker: Broker, chdb: Path
) -> None:
    for name in (*EXACT, REFUSED):
        broker.create_topic(name, 2)
    for name in (*GOOD, ISOLATED, REFUSED):
        produce(broker, name, range(100))
    produce(broker, MALFORMED, range(100), extra=BAD_MESSAGES)
    embedded = {"path": str(chdb)}
    refused = pipeline_doc(
        REFUSED, broker, {"host": "127.0.0.1", "port": free_port()}, connect_timeout="2s"
    )
    refused["runtime"] = {"retry": {"max_attempts": 1, "first_backoff": "1s"}}
    weighted = pipeline_doc(GOOD[2], broker, embedded)
    weighted["runtime"] = {"weight": 3}  # its scheduler pool's share in the host
    isolated = pipeline_doc(ISOLATED, broker, embedded)
    isolated["runtime"] = {"isolation": "process"}
    for doc in (
        *(pipeline_doc(name, broker, embedded) for name in (*GOOD[:2], MALFORMED)),
        weighted,
        refused,
        isolated,
    ):
        service.create(doc)

    _wait_exact(service, chdb, 100, "from one host")
    wait_for(
        lambda: service.get(REFUSED).state is State.FAILED, START_TIMEOUT_S, what="refused Failed"
    )
    assert "gave up after 1 retries" in (service.get(REFUSED).error or "")
    wait_for(lambda: service.status(MALFORMED).dlq == len(BAD_MESSAGES), 30, what="3 in the DLQ")

    host_pid = service.supervisor.host.pid
    assert host_pid is not None
    hosted = {service.status(name).pid for name in (*GOOD, MALFORMED)}
    assert hosted == {host_pid}, "the five pipelines run in the one host process"
    assert service.status(ISOLATED).pid not in (None, host_pid)
    assert service.worker_report(GOOD[0])["isolation"] == "host"
    assert service.worker_report(ISOLATED)["isolation"] == "process"
    pools = service.supervisor.host.request("pools")["pools"]
    assert pools[GOOD[0]] == 1 and pools[GOOD[2]] == 3
    # the good ones went on while the refused one retried and failed
    assert all(service.history(name)[-1].to_state is State.RUNNING for name in GOOD)


def test_the_host_answers_only_requests_with_its_token(data_dir: Path) -> None:
    """Documents reach the host with secrets in clear: only the token's holder may talk."""
    record_file = data_dir / "host" / "host.json"
    assert record_file.stat().st_mode & 0o077 == 0, "host.json is readable by its owner only"
    record = json.loads(record_file.read_text())
    for request in ({"op": "ping"}, {"op": "ping", "token": "guess"}):
        with socket.create_connection(("127.0.0.1", record["port"]), 10) as conn:
            conn.sendall(json.dumps(request).encode() + b"\n")
            answer = json.loads(conn.makefile("rb").readline())
        assert answer == {"ok": False, "error": "refused: wrong token"}


def test_stop_edit_resume_of_one_while_the_others_write(
    service: PipelineService, broker: Broker, chdb: Path
) -> None:
    edited = GOOD[0]
    feeding = threading.Thread(target=produce_in_steps, args=(broker, range(100, 200)))
    feeding.start()
    service.stop(edited)
    wait_for(lambda: service.get(edited).state is State.STOPPED, 60, what=f"{edited} Stopped")
    doc = service.document(edited, reveal_secrets=True)
    doc["sink"]["max_delay_time"] = "200ms"  # a change the checkpoint does not depend on
    assert service.edit(edited, doc).version == 2
    service.resume(edited)
    feeding.join()
    _wait_exact(service, chdb, 200, "after one was stopped, edited and resumed")
    assert service.status(edited).written == 200  # its counts over both runs


def test_kill_9_of_the_host_resumes_every_pipeline_exactly(
    service: PipelineService, broker: Broker, chdb: Path
) -> None:
    old_host = service.supervisor.host.pid
    isolated_pid = service.status(ISOLATED).pid
    assert old_host is not None
    feeding = threading.Thread(target=produce_in_steps, args=(broker, range(200, 300)))
    feeding.start()
    kill_pid_tree(old_host)  # mid-run: the feed goes on
    feeding.join()
    _wait_exact(service, chdb, 300, "after the host was killed")
    new_host = service.supervisor.host.pid
    assert new_host not in (None, old_host)
    assert {service.status(name).pid for name in (*GOOD, MALFORMED)} == {new_host}
    assert service.status(ISOLATED).pid == isolated_pid, "its own process was untouched"
    notes = [c.note or "" for c in service.history(GOOD[1])]
    assert any("a new worker starts" in n for n in notes)
    assert service.status(MALFORMED).dlq == len(BAD_MESSAGES)  # not written twice
    _wait_counts(service, 300)


def test_the_hosts_jvm_dying_alone_restarts_the_host_exactly(
    service: PipelineService, broker: Broker, chdb: Path
) -> None:
    old_host = service.supervisor.host.pid
    assert old_host is not None
    (jvm,) = [child for child in psutil.Process(old_host).children() if child.name() == "java"]
    assert EXIT_ON_OOM in jvm.cmdline(), "an out-of-memory JVM ends itself"
    produce_in_steps(broker, range(300, 400))
    jvm.kill()
    _wait_exact(service, chdb, 400, "after the host's JVM was killed")
    assert service.supervisor.host.pid not in (None, old_host)
    _wait_counts(service, 400)
