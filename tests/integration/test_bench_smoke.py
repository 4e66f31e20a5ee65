"""`streamsift bench` and `streamsift loadgen` end to end, small: correctness only, no timings.

Every scenario and every baseline drains a 3,000-event backlog and must be exact (dedup-join
and its raw baseline also read 300 profile events and must write exactly the reference's
joined rows); the dedup scenario also runs live (one fixed-rate step, one ramp step). The
report, results.json and the plots must exist. The vectorised ceiling (raw_vec, with and
without dedup) and streamsift's stages without Spark (nospark) must be exact, their sampled
column values included; alternating pairs give each ratio with its spread. In server mode
raw_vec also writes into an endpoint of its own (raw_vec_server), exact too.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from support import cli

pytestmark = pytest.mark.integration


def streamsift(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return cli.streamsift(*args, timeout=timeout)  # a bench run takes its time


def test_bench_smoke_every_run_exact_and_report_written(tmp_path):
    out = tmp_path / "bench"
    proc = streamsift(
        "bench",
        "--scenario", "all",
        "--events", "3000",
        "--out", str(out),
        "--live-scenarios", "dedup",
        "--latency-rates", "1000",
        "--ramp", "2000",
        "--duration", "2",
        "--join-window", "5s,10s",
        "--pairs", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["all_exact"] is True
    expected_runs = {"raw_naive", "raw_naive_ingest", "quix", "ch_final", "ingest", "dedup"}
    expected_runs |= {"raw_vec", "raw_vec_ingest", "nospark"}
    assert set(results["drain"]) == expected_runs | {"dedup-join", "raw_join"}
    for name, run in results["drain"].items():
        assert run["exact"], (name, run)
        assert run["read"] == (3300 if "join" in name else 3000), name
    truth = results["dataset"]
    join_truth = truth["join"]
    assert join_truth["right_messages"] == 300 and join_truth["spec"]["right_window_s"] == 10
    assert 0 < join_truth["left_unmatched"] < join_truth["left_kept"]
    for name in ("dedup-join", "raw_join"):
        run = results["drain"][name]
        assert run["rows"] == join_truth["expected_rows"] > 0, name
        assert run["pair_checksum_ok"] and run["later_versions"] == 0, name
        assert run["late_dropped"] == 0 and run["rates"]["processing_rate"] > 0, name
    assert set(results["live"]) == {"dedup"}
    assert results["drain"]["dedup"]["rows"] == truth["expected_unique"]
    assert results["drain"]["ingest"]["rows"] == truth["produced"] == 3000
    for name in ("raw_vec", "nospark", "dedup", "raw_naive", "quix"):
        assert results["drain"][name]["rows"] == truth["expected_unique"], name
    for name in ("raw_vec_ingest", "raw_naive_ingest", "ingest"):
        assert results["drain"][name]["rows"] == truth["produced"], name
    for name, run in results["drain"].items():  # column values checked, not only ids
        if "join" not in name:
            assert run["values"]["ok"] and run["values"]["rows_checked"] > 0, name
    assert (
        results["drain"]["ch_final"]["read_cost"]["rows_without_final"] >= truth["expected_unique"]
    )
    live = results["live"]["dedup"]
    assert live["exact"] and live["produced"] == live["read"]
    assert [s["phase"] for s in live["steps"]] == ["latency", "ramp"]
    assert live["steps"][0]["latency"]["rows"] > 0
    report = (out / "report.md").read_text()
    assert "every run exact" in report and "FAILED" not in report
    assert "### Dedup + inner join" in report
    for name in ("drain-rates.png", "throughput-dedup.png", "latency-cdf.png"):
        assert (out / name).stat().st_size > 10_000, name
        assert f"]({name})" in report


def test_bench_server_mode_pairs_and_raw_vec_into_the_same_endpoint(tmp_path):
    # One bench run for server mode and the alternating pairs (they were two runs, and the
    # live run had two steps): the streamsift runs write to the endpoint, raw_vec_server to
    # an endpoint of its own making. nospark's exactness is checked by the run of everything
    # above, the ratio rows it adds in tests/unit/bench/test_bench_ratios.py.
    out = tmp_path / "bench"
    proc = streamsift(
        "bench",
        "--scenario", "dedup",
        "--events", "2000",
        "--out", str(out),
        "--baselines", "raw_vec,raw_vec_server",
        "--pairs", "2",
        "--clickhouse", "server",
        "--max-delay", "500ms",
        "--latency-rates", "1000",
        "--ramp", "",
        "--duration", "2",
        "--no-plots",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["all_exact"] is True and results["options"]["clickhouse"] == "server"
    assert results["options"]["pairs"] == 2
    drain = results["drain"]
    assert set(drain) == {"raw_vec", "raw_vec_server", "dedup"}
    for name, run in drain.items():
        assert len(run["rounds"]) == 2 and all(r["exact"] for r in run["rounds"]), name
        assert run["rows"] == results["dataset"]["expected_unique"], name
        assert run["values"]["ok"] and run["values"]["rows_checked"] > 0, name
    live = results["live"]["dedup"]
    assert live["exact"] and [s["phase"] for s in live["steps"]] == ["latency"]
    # the endpoints ran as their own processes inside the runs' trees and were measured
    for name in ("dedup", "raw_vec_server"):
        roles = drain[name]["resources"]["peak_rss_mb_by_role"]
        assert roles.get("clickhouse", 0) > 0, (name, roles)
    assert drain["raw_vec_server"]["clickhouse"] == "server"
    assert drain["raw_vec"]["clickhouse"] == "embedded"
    assert "clickhouse" not in drain["raw_vec"]["resources"]["peak_rss_mb_by_role"]
    ratios = {(r["ours"], r["baseline"]): r for r in results["ratios"]}
    for pair in (("dedup", "raw_vec_server"), ("raw_vec_server", "raw_vec"), ("dedup", "raw_vec")):
        row = ratios[pair]
        assert row["processing_rate"] and row["wall_rate"], pair
        assert len(row["pairs"]["wall_rate"]) == 2 and row["spread"]["wall_rate"] is not None
        assert row["unstable"] in (True, False), pair
    report = (out / "report.md").read_text()
    assert "a chdb-backed ClickHouse HTTP endpoint" in report
    assert "server mode: dedup / raw_vec into the same endpoint" in report
    assert "trigger every 500ms" in report
    assert "**Start-up**" in report and "spread (processing / wall)" in report


def test_bench_rejects_a_bad_trigger_interval(tmp_path):
    proc = streamsift("bench", "--max-delay", "soon", "--out", str(tmp_path), timeout=60)
    assert proc.returncode == 2 and "'soon' is not a duration" in proc.stderr


def test_loadgen_cli_reports_rate_and_writes_truth(tmp_path):
    truth_path = tmp_path / "truth.json"
    args = ["loadgen", "--bundled-broker", "--topic", "lg", "--events", "2000", "--rps", "1000"]
    proc = streamsift(*args, "--late", "0.01", "--truth", str(truth_path), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["acked"] == 2000 and summary["target_rps"] == 1000
    assert summary["achieved_rps"] > 0
    truth = json.loads(truth_path.read_text())
    assert truth["produced"] == 2000
    assert truth["expected_unique"] + truth["duplicates"] == 2000
    assert truth["spec"]["seed"] == 7
    again = tmp_path / "again.json"
    proc = streamsift(*args, "--late", "0.01", "--truth", str(again), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    second = json.loads(again.read_text())
    assert {k: second[k] for k in ("expected_unique", "duplicates", "late", "id_checksum")} == {
        k: truth[k] for k in ("expected_unique", "duplicates", "late", "id_checksum")
    }


def test_loadgen_cli_join_topic_writes_the_join_truth(tmp_path):
    truth_path = tmp_path / "truth.json"
    proc = streamsift(
        "loadgen", "--bundled-broker", "--topic", "orders", "--join-topic", "profiles",
        "--events", "2000", "--join-events", "300", "--join-window", "5s,20s",
        "--late", "0.02", "--truth", str(truth_path), "--json",
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["acked"] == 2000 and summary["join_acked"] == 300
    truth = json.loads(truth_path.read_text())
    join = truth["join"]
    assert join["topic"] == "profiles" and join["right_messages"] == 300
    assert join["left_messages"] == 2000 and join["left_kept"] == truth["expected_unique"]
    assert join["spec"]["left_window_s"] == 5 and join["spec"]["right_window_s"] == 20
    assert join["expected_rows"] == summary["join"]["expected_rows"] > 0
    assert join["left_matched"] + join["left_unmatched"] == join["left_kept"]


def test_bench_formats_scenario_writes_exact_decode_rates(tmp_path):
    out = tmp_path / "formats"
    proc = streamsift(
        "bench", "--scenario", "formats", "--events", "300", "--rounds", "1", "--out", str(out)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    formats = results["formats"]["formats"]
    assert sorted(formats) == ["avro", "json", "protobuf"]
    assert all(
        f["exact"] and f["rows_ok"] == 300 and f["events_per_s"] > 0 for f in formats.values()
    )
    assert "| avro | 300 |" in (out / "report.md").read_text()
