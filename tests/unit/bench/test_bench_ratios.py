"""The bench's honest figures: ratios from alternating pairs with their spread, unstable
marking, symmetric steady rates, start-up on its own line, and README figures from results."""

from __future__ import annotations

import pytest

from streamsift_bench.measures import combine_rounds, drain_rates
from streamsift_bench.readme import BEGIN, END, ReadmeError, readme_block, replace_block
from streamsift_bench.report import markdown
from streamsift_bench.verdicts import UNSTABLE_SPREAD, pair_ratio, ratios, targets


def test_a_pair_ratio_is_the_median_of_its_pairs_with_their_spread():
    r = pair_ratio([50.0, 60.0], [100.0, 100.0])
    assert r["pairs"] == [0.5, 0.6] and r["value"] == 0.55
    assert r["spread"] == pytest.approx(0.1 / 0.55, abs=1e-3) and r["unstable"] is False
    wide = pair_ratio([50.0, 80.0], [100.0, 100.0])  # 0.5 and 0.8: 46% apart
    assert wide["spread"] > UNSTABLE_SPREAD and wide["unstable"] is True


def test_one_pair_has_no_spread_and_a_missing_figure_no_ratio():
    assert pair_ratio([50.0], [100.0]) == {
        "value": 0.5,
        "pairs": [0.5],
        "spread": None,
        "unstable": None,
    }
    assert pair_ratio([50.0, None], [100.0, 100.0])["value"] is None
    assert pair_ratio([50.0], [100.0, 100.0])["value"] is None  # unpaired rounds
    assert pair_ratio([], [])["value"] is None


def _run(kind: str, rounds: list[tuple[float, float, float | None]]) -> dict:
    """A drain run with one result per round: (processing s, wall s, steady rate)."""
    results = []
    for busy, wall, steady in rounds:
        r = {"exact": True, "read": 100_000, "wall_seconds": wall, "startup_seconds": 1.5}
        r["busy_seconds" if kind == "streamsift" else "processing_seconds"] = busy
        r["after_first_batch_rate"] = steady
        r["rates"] = drain_rates(kind, r)
        results.append(r)
    return combine_rounds(results)


def _results(**drain: dict) -> dict:
    return {
        "started_at": "2026-11-28T08:00:00Z",
        "command": "streamsift bench --pairs 2",
        "options": {"payload_bytes": 1024, "partitions": 3, "duplicates": 0.2, "keys": 10},
        "machine": {"cores": 2, "cpu": "", "memory_gb": 1, "python": "3", "versions": {}},
        "drain": drain,
        "live": {},
    }


def test_steady_rates_are_symmetric_and_rounds_combine_into_medians():
    ours = _run("streamsift", [(2.0, 10.0, 60_000.0), (2.5, 12.5, 50_000.0)])
    base = _run("raw_vec", [(1.0, 2.0, 110_000.0), (1.25, 2.5, 90_000.0)])
    assert ours["rates"]["steady_rate"] == 55_000.0  # the median of its rounds
    assert base["rates"]["steady_rate"] == 100_000.0  # a baseline has one as well
    assert [r["processing_rate"] for r in base["rounds"]] == [100_000.0, 80_000.0]
    (row,) = ratios(_results(dedup=ours, raw_vec=base))
    assert row["processing_rate"] == 0.5 and row["wall_rate"] == 0.2  # both pairs agree
    # steady over steady (never streamsift's steady over a baseline's processing rate)
    assert row["pairs"]["steady_rate"] == [0.545, 0.556]
    assert row["spread"]["processing_rate"] == 0.0 and row["unstable"] is False
    text = markdown(_results(dedup=ours, raw_vec=base))
    assert "| 55,000 |" in text and "| 100,000 |" in text  # steady shown for every run
    del base["rates"]["steady_rate"]  # one run without: shown for none
    text = markdown(_results(dedup=ours, raw_vec=base))
    assert "Steady rates: not shown" in text and "| 55,000 |" not in text


def test_pairs_that_disagree_mark_the_ratio_unstable_and_never_meet_a_target():
    ours = _run("streamsift", [(2.0, 4.0, None), (2.0, 6.0, None)])
    base = _run("raw_vec", [(1.0, 2.0, None), (1.0, 2.0, None)])
    results = _results(dedup=ours, raw_vec=base)
    (row,) = ratios(results)
    assert row["wall_rate"] == pytest.approx(0.4165, abs=1e-3)  # 0.5 and 0.333
    assert row["spread"]["wall_rate"] > UNSTABLE_SPREAD and row["unstable"] is True
    target = next(t for t in targets(results) if "raw_vec" in t["target"])
    assert target["met"] is None and "unstable" in target["note"]
    assert target["processing"] == 0.5  # processing shown beside the wall ratio
    text = markdown({**results, "ratios": [row], "targets": targets(results)})
    assert "**unstable**" in text and "0.50 | 0.42 |" in text
    assert "**Start-up**" in text and "dedup 1.5 s" in text


def test_a_failed_round_leaves_the_run_failed_and_without_rates():
    good = _run("raw_vec", [(1.0, 2.0, None)])
    bad = {**good, "exact": False, "rates": {**good["rates"], "processing_rate": None}}
    combined = combine_rounds([good, bad])
    assert combined["exact"] is False and combined["rates"]["processing_rate"] is None
    ours = _run("streamsift", [(2.0, 4.0, None), (2.0, 4.0, None)])
    (row,) = ratios(_results(dedup=ours, raw_vec=combined))
    assert row["processing_rate"] is None and row["wall_rate"] is None


def test_the_readme_block_is_written_from_results_and_nothing_else_changes(tmp_path):
    ours = _run("streamsift", [(2.0, 10.0, None), (2.0, 10.0, None)])
    base = _run("raw_vec", [(1.0, 2.0, None), (1.0, 2.0, None)])
    results = {**_results(dedup=ours, raw_vec=base), "all_exact": True}
    results["options"]["pairs"] = 2
    results["ratios"] = ratios(results)
    block = readme_block(results)
    assert block.startswith(BEGIN) and block.endswith(END)
    assert "| dedup / vectorised raw consumer | 0.50x | 0.20x | 0% / 0% | stable |" in block
    assert "every run exact" in block and "2 alternating pair(s)" in block
    text = f"# title\n\nbefore\n{BEGIN}\nold figures 0.39x\n{END}\nafter\n"
    new = replace_block(text, block)
    assert "old figures" not in new and new.startswith("# title\n\nbefore\n")
    assert new.endswith(f"{END}\nafter\n")
    with pytest.raises(ReadmeError):
        replace_block("no markers", block)


def test_server_mode_ratios_separate_the_endpoint_from_streamsift():
    # --clickhouse server: dedup wrote to the endpoint, raw_vec_server too, raw_vec to chdb
    ours = _run("streamsift", [(4.0, 10.0, None), (4.0, 10.0, None)])
    served = _run("raw_vec", [(2.0, 4.0, None), (2.0, 4.0, None)])
    embedded = _run("raw_vec", [(1.0, 2.0, None), (1.0, 2.0, None)])
    nospark = _run("nospark", [(1.6, 3.0, None), (1.6, 3.0, None)])
    results = _results(dedup=ours, raw_vec_server=served, raw_vec=embedded, nospark=nospark)
    results["options"]["clickhouse"] = "server"
    by_pair = {(r["ours"], r["baseline"]): r for r in ratios(results)}
    assert set(by_pair) == {
        ("dedup", "raw_vec"),
        ("dedup", "nospark"),
        ("nospark", "raw_vec"),
        ("dedup", "raw_vec_server"),
        ("raw_vec_server", "raw_vec"),
    }
    server = by_pair[("dedup", "raw_vec_server")]
    assert server["processing_rate"] == 0.5 and server["wall_rate"] == 0.4
    endpoint = by_pair[("raw_vec_server", "raw_vec")]
    assert endpoint["processing_rate"] == 0.5 and endpoint["wall_rate"] == 0.5
    assert endpoint["pairs"]["wall_rate"] == [0.5, 0.5] and endpoint["unstable"] is False
    text = markdown({**results, "ratios": ratios(results)})
    assert "server mode: dedup / raw_vec into the same endpoint | 0.50 | 0.40 |" in text
    assert "raw_vec into the endpoint / into embedded chdb | 0.50 | 0.50 |" in text
    assert "but for `raw_vec_server`" in text
    embedded_run = _results(dedup=ours, raw_vec=embedded)  # raw_vec_server only in server mode
    assert {(r["ours"], r["baseline"]) for r in ratios(embedded_run)} == {("dedup", "raw_vec")}


def test_the_readme_block_shows_the_live_and_join_figures_and_the_targets_missed():
    results = {
        **_results(),
        "all_exact": True,
        "live": {
            "dedup": {
                "exact": True,
                "sustained_rate": 50_000,
                "steps": [{"phase": "latency", "rate": 5_000, "latency": {"p95": 0.81}}],
            }
        },
        "targets": [
            {"target": "dedup pipeline sustained", "met": False, "measured": 50_000},
            {"target": "dedup drain vs raw_vec", "met": None, "measured": 0.25},
            {"target": "memory flat", "met": None, "measured": None},
            {"target": "p95", "met": True, "measured": 0.81},
        ],
    }
    results["drain"]["dedup-join"] = {
        "exact": True,
        "rates": {"processing_rate": 14_178.2, "wall_rate": 9_315.0},
    }
    block = readme_block(results)
    assert (
        "- Live dedup: 50,000 events/s sustained; p95 end-to-end latency 0.81 s at 5,000" in block
    )
    assert "- Dedup + inner join: 14,178 left events/s processing, 9,315 wall." in block
    assert (
        "Targets missed in this run (causes in docs/benchmarks.md): dedup pipeline sustained."
        in block
    )
    assert "Not counted (unstable pairs): dedup drain vs raw_vec." in block
    results["drain"]["dedup-join"]["exact"] = False  # a failed run shows no figure
    assert "Dedup + inner join" not in readme_block(results)
