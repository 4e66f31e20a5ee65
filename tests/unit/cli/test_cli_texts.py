"""What the command line says: help for every argument, ranges that match the checks, summaries."""

from __future__ import annotations

import argparse

import pytest

from streamsift.cli.main import DUPLICATES_RANGE, build_parser, done_line, main
from support.paths import REPO


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {k}": v for k, v in _commands(sub).items()})
    return found


def test_every_argument_of_every_command_has_help() -> None:
    missing = [
        f"{name}: {action.dest}"
        for name, sub in _commands(build_parser()).items()
        for action in sub._actions
        if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction)
        and not action.help
    ]
    assert missing == []


def test_demo_duplicates_range_is_the_one_the_check_uses(capsys: pytest.CaptureFixture) -> None:
    demo = _commands(build_parser())["demo"]
    [duplicates] = [a for a in demo._actions if a.dest == "duplicates"]
    assert DUPLICATES_RANGE in duplicates.help
    assert main(["demo", "--duplicates", "1"]) == 2
    assert DUPLICATES_RANGE in capsys.readouterr().err


def test_validate_names_both_sides_of_a_join(capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", str(REPO / "examples/pipelines/orders-users-join.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: orders-users-join: orders (dedup on order_id within 1h) left join ")
    assert "users (dedup on event_id within" in out
    assert " on user_id = user.id -> " in out


def test_the_done_line_names_filtered_and_join_late_rows_only_when_there_are_some():
    counts = {"read": 1200, "written": 900, "duplicates": 200, "dlq": 3, "late": 0}
    plain = "done: read 1,200, written 900, duplicates dropped 200, DLQ 3, late 0"
    assert done_line({**counts, "filtered": 0, "late_dropped": 0}) == plain
    assert done_line({**counts, "filtered": 97, "late_dropped": 2}) == (
        plain + ", filtered 97, behind the join watermark 2"
    )
