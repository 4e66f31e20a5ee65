"""Spark's progress reports, pushed by its listener bus once per micro-batch.

Polling `query.recentProgress` every second re-read (and parsed) every retained report, up to
`numRecentProgressUpdates` of them, each time; a listener hands over each report once, as Spark
posts it. The bus delivers a query's reports in order, and its termination after the last.

The JVM calls the listener through Py4J. PySpark's own bridge (`StreamingQueryListener.
_jlistener`) rebuilds each report in Python field by field, a few dozen calls back into the
JVM, some of which make Py4J resolve names by trying to load them as classes from every jar
(the JVM's largest cost in a live pipeline at low rates; docs/benchmarks.md, round three).
`_RawEvents` takes each report as its JSON text instead: two calls.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

# Reports held for the runner to take; more than a run makes between two polls, and a bound
# against a session whose other queries' reports nobody takes.
MAX_HELD = 1_000


class ProgressFeed(StreamingQueryListener):
    """Collects progress reports (as dicts) by run id until the runner takes them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held: deque[tuple[str, dict[str, Any]]] = deque(maxlen=MAX_HELD)
        self._ended: set[str] = set()
        self._bridge: Any = None

    @property
    def _jlistener(self) -> Any:
        """The JVM-side listener `spark.streams.addListener` registers (PySpark reads it)."""
        if self._bridge is None:
            from pyspark import SparkContext

            jvm: Any = SparkContext._jvm
            self._bridge = jvm.PythonStreamingQueryListenerWrapper(_RawEvents(self))
        return self._bridge

    # PySpark's listener interface; the JVM itself reaches the feed through `_RawEvents`.
    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        self.add(str(progress.runId), json.loads(progress.json))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        self.ended(str(event.runId))

    def ended(self, run_id: str) -> None:
        with self._changed:
            self._ended.add(run_id)
            self._changed.notify_all()

    def add(self, run_id: str, report: dict[str, Any]) -> None:
        with self._changed:
            self._held.append((run_id, report))

    def take(self, run_id: str) -> list[dict[str, Any]]:
        """The reports of `run_id` since the last take, oldest first (others are dropped)."""
        with self._changed:
            held, self._held = self._held, deque(maxlen=MAX_HELD)
        return [report for rid, report in held if rid == str(run_id)]

    def wait_terminated(self, run_id: str, timeout_s: float) -> bool:
        """True once the bus delivered the end of `run_id` (so all its reports before it)."""
        with self._changed:
            return self._changed.wait_for(lambda: str(run_id) in self._ended, timeout_s)


class _RawEvents:
    """Spark's `PythonStreamingQueryListener` interface, implemented for Py4J: each event's
    report read as JSON, handed to the feed."""

    def __init__(self, feed: ProgressFeed) -> None:
        self.feed = feed

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        report = json.loads(jevent.progress().json())
        self.feed.add(str(report["runId"]), report)

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        self.feed.ended(jevent.runId().toString())

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
