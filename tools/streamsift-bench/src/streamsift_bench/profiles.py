"""Profiles of streamsift's bench runs (`streamsift bench --profile`): where the time goes.

Each streamsift run gets two samplers from outside its code: py-spy, attached to the worker's
process and the Python processes it starts (driver, Spark's Python workers), and the JVM's
Flight Recorder (JFR), started through `JDK_JAVA_OPTIONS` so that the JVM options, and with them
the class archive streamsift picks, stay as in an unprofiled run. After the run each recording
is summarised into `<run>-hot.md`: the functions and methods that most samples were in (self)
and passed through (total). The raw recordings stay beside it: `<run>-python.txt` (py-spy's
collapsed stacks, for speedscope or flamegraph.pl) and `<run>.jfr` (JDK Mission Control,
`jfr print`). Sampling costs CPU: a profiled run's rates are not comparable with an unprofiled
one's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PYSPY_RATE = 100  # samples per second per process
TOP = 25
JFR_DEPTH = 96  # frames kept per JVM sample (`jfr print` keeps 5 unless told)
# a JFR stack frame as `jfr print` writes it: "pkg.Class.method(args) line: N [...]"
_JFR_FRAME = re.compile(r"^\s+([\w$.<>]+)\(")
# py-spy's collapsed frame: "function (path/to/file.py:line)"
_PY_FRAME = re.compile(r"^(.*?) \((.*?)(?::\d+)?\)$")


@dataclass(frozen=True)
class Hot:
    """One function's share of the samples: in it (self) and anywhere on the stack (total)."""

    name: str
    self_share: float
    total_share: float


def hottest(stacks: Iterable[tuple[list[str], int]], top: int = TOP) -> tuple[int, list[Hot]]:
    """Samples in all, and the `top` functions by self samples, from (frames root-first, count)."""
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    samples = 0
    for frames, count in stacks:
        if not frames:
            continue
        samples += count
        if not frames[-1].startswith("process "):
            own[frames[-1]] += count
        for name in set(frames):
            anywhere[name] += count
    if not samples:
        return 0, []
    return samples, [
        Hot(name, round(n / samples, 4), round(anywhere[name] / samples, 4))
        for name, n in own.most_common(top)
    ]


def pyspy_stacks(text: str) -> list[tuple[list[str], int]]:
    """py-spy's raw (collapsed) output: one 'frame;frame;... count' line per distinct stack.

    Frames lose their line numbers (a function is one entry); the process frames that
    `--subprocesses` puts above each process's stack are kept, shortened to the command's
    module or script.
    """
    stacks = []
    for line in text.splitlines():
        path, _, count = line.rpartition(" ")
        if not path or not count.isdigit():
            continue
        frames = []
        for frame in path.split(";"):
            match = _PY_FRAME.match(frame)
            if frame.startswith("process "):
                frames.append(_process_name(frame))
            elif match:
                frames.append(f"{match.group(1)} ({Path(match.group(2)).name})")
            else:
                frames.append(frame)
        stacks.append((frames, int(count)))
    return stacks


def _process_name(frame: str) -> str:
    """'process 12:"python -m pyspark.daemon pyspark.worker"' -> 'process pyspark.daemon
    pyspark.worker'; a script by its file name (spark-class, the JVM's launcher)."""
    words = frame.split('"')[1].split() if '"' in frame else frame.split()[2:]
    if "-m" in words and words.index("-m") + 1 < len(words):
        module = words[words.index("-m") + 1 :][:2]
        if not module[-1].startswith("pyspark"):
            module = module[:1]
        return f"process {' '.join(module)}"
    scripts = [w for w in words if "/" in w or w.endswith(".py")]
    return f"process {Path(scripts[-1] if len(words) > 1 and scripts else words[0]).name}"


def jfr_stacks(text: str) -> list[tuple[list[str], int]]:
    """`jfr print --events jdk.ExecutionSample` output: one stack (leaf first) per sample."""
    stacks: list[tuple[list[str], int]] = []
    frames: list[str] | None = None
    for line in text.splitlines():
        if "stackTrace = [" in line:
            frames = []
        elif frames is not None:
            match = _JFR_FRAME.match(line)
            if match:
                frames.append(match.group(1))
            elif line.strip() == "]":
                stacks.append((frames[::-1], 1))
                frames = None
    return stacks


class Profiler:
    """Profiles the streamsift runs of one bench into `out`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.out.mkdir(parents=True, exist_ok=True)
        self._pyspy: dict[str, subprocess.Popen] = {}
        self.pyspy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which(
            "py-spy"
        )

    def java_env(self, run: str) -> dict[str, str]:
        """Environment for the run's worker: the JVM records itself until it exits."""
        jfr = self.out / f"{run}.jfr"
        return {
            "JDK_JAVA_OPTIONS": f"-XX:StartFlightRecording=filename={jfr},settings=profile,"
            "dumponexit=true"
        }

    def attach(self, run: str, pid: int) -> None:
        """Start py-spy on the run's worker and the processes it starts (until it exits)."""
        if self.pyspy is None:
            return
        cmd = [
            self.pyspy,
            "record",
            "--pid",
            str(pid),
            "--subprocesses",
            "--nonblocking",
            "--rate",
            str(PYSPY_RATE),
            "--format",
            "raw",
            "--output",
            str(self.out / f"{run}-python.txt"),
        ]
        log = (self.out / f"{run}-py-spy.log").open("w")
        self._pyspy[run] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)

    def finish(self, run: str) -> Path:
        """Wait for the samplers to write, then summarise both into `<run>-hot.md`."""
        spy = self._pyspy.pop(run, None)
        if spy is not None:
            try:
                spy.wait(30)
            except subprocess.TimeoutExpired:
                spy.terminate()
                spy.wait(10)
        sections = []
        python = self.out / f"{run}-python.txt"
        if python.exists():
            sections.append(("Python (py-spy, all processes)", pyspy_stacks(python.read_text())))
        jfr = self.out / f"{run}.jfr"
        jfr_tool = shutil.which("jfr")
        if jfr.exists() and jfr_tool is not None:
            printed = subprocess.run(
                [
                    jfr_tool,
                    "print",
                    "--stack-depth",
                    str(JFR_DEPTH),
                    "--events",
                    "jdk.ExecutionSample",
                ]
                + [str(jfr)],
                capture_output=True,
                text=True,
                check=False,
            )
            sections.append(("JVM (JFR execution samples)", jfr_stacks(printed.stdout)))
        summary = self.out / f"{run}-hot.md"
        summary.write_text(render(run, sections))
        return summary


def render(run: str, sections: list[tuple[str, list[tuple[list[str], int]]]]) -> str:
    lines = [f"# Where {run}'s time went", ""]
    for title, stacks in sections:
        samples, hot = hottest(stacks)
        lines += [f"## {title}: {samples:,} samples", ""]
        by_process: Counter[str] = Counter()
        for frames, count in stacks:
            processes = [f for f in frames if f.startswith("process ")]
            if processes:
                by_process[processes[-1]] += count
        if by_process:
            lines += ["| process | share |", "| --- | ---: |"]
            lines += [f"| {p} | {n / samples:.1%} |" for p, n in by_process.most_common()]
            lines.append("")
        lines += ["| function | self | total |", "| --- | ---: | ---: |"]
        lines += [f"| `{h.name}` | {h.self_share:.1%} | {h.total_share:.1%} |" for h in hot]
        lines.append("")
    return "\n".join(lines)
