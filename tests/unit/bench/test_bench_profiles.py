"""`streamsift bench --profile`: reading py-spy's and JFR's samples into where the time went."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from streamsift_bench.profiles import Profiler, hottest, jfr_stacks, pyspy_stacks, render

PYSPY_RAW = textwrap.dedent(
    """\
    process 11:"python -m streamsift_bench.isolated_run spec.json";main (worker.py:10);parse (parse.py:5) 6
    process 11:"python -m streamsift_bench.isolated_run spec.json";main (worker.py:12);insert (sink.py:7) 3
    process 12:"python -m pyspark.daemon pyspark.worker";main (worker.py:99);parse (parse.py:9) 1
    """
)

JFR_PRINT = textwrap.dedent(
    """\
    jdk.ExecutionSample {
      startTime = 23:30:02.023
      stackTrace = [
        a.B.leaf(int) line: 1
        a.B.middle() line: 2
        a.Main.main(String[]) line: 3
      ]
    }

    jdk.ExecutionSample {
      stackTrace = [
        a.B.middle() line: 2
        a.Main.main(String[]) line: 3
        ...
      ]
    }
    """
)


def test_pyspy_stacks_group_by_function_and_process():
    stacks = pyspy_stacks(PYSPY_RAW)
    assert stacks[0] == (
        ["process streamsift_bench.isolated_run", "main (worker.py)", "parse (parse.py)"],
        6,
    )
    samples, hot = hottest(stacks)
    assert samples == 10
    assert (hot[0].name, hot[0].self_share, hot[0].total_share) == ("parse (parse.py)", 0.7, 0.7)
    assert (hot[1].name, hot[1].self_share) == ("insert (sink.py)", 0.3)
    summary = render("r", [("Python", stacks)])
    assert "| process streamsift_bench.isolated_run | 90.0% |" in summary
    assert "| process pyspark.daemon pyspark.worker | 10.0% |" in summary


def test_jfr_stacks_are_leaf_last_one_per_sample():
    stacks = jfr_stacks(JFR_PRINT)
    assert stacks == [
        (["a.Main.main", "a.B.middle", "a.B.leaf"], 1),
        (["a.Main.main", "a.B.middle"], 1),
    ]
    _, hot = hottest(stacks)
    assert {h.name: (h.self_share, h.total_share) for h in hot} == {
        "a.B.leaf": (0.5, 0.5),
        "a.B.middle": (0.5, 1.0),
    }


@pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("jfr") is None, reason="needs a JDK"
)
def test_a_real_jvm_and_python_process_are_sampled(tmp_path):
    """The samplers themselves: py-spy attached to a Python process that starts a JVM under
    the profiler's JDK_JAVA_OPTIONS; both spin in a named function."""
    spin = tmp_path / "Spin.java"
    spin.write_text(
        "public class Spin { public static void main(String[] a) { long s = 0;"
        " long end = System.currentTimeMillis() + 1500;"
        " while (System.currentTimeMillis() < end) s += busy(s); System.out.println(s); }"
        " static long busy(long s) { long r = 0; for (int i = 0; i < 1000; i++)"
        " r += Long.hashCode(s + i); return r; } }"
    )
    script = (
        "import subprocess, sys, time\n"
        "def spin_in_python(t):\n"
        "    end = time.time() + t\n"
        "    while time.time() < end: pass\n"
        "spin_in_python(1.0)\n"
        f"subprocess.run(['java', {str(spin)!r}], check=True, stdout=subprocess.DEVNULL)\n"
    )
    profiler = Profiler(tmp_path / "profiles")
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env={**os.environ, **profiler.java_env("r")}
    )
    profiler.attach("r", proc.pid)
    assert proc.wait(60) == 0
    summary = profiler.finish("r").read_text()
    assert "## Python (py-spy, all processes)" in summary
    assert "spin_in_python" in summary
    assert "## JVM (JFR execution samples)" in summary
    assert "Spin.busy" in summary or "Spin.main" in summary
