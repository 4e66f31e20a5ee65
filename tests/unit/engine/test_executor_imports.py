"""What Spark's Python processes import when they unpickle the source: the data path only.

Each new worker, planner and source runner unpickles the pipeline's data source before its
first task, importing the modules its classes live in. The config models (pydantic), the SQL
parser and the ClickHouse client belong to the driver: a process that imported them paid for
it at start-up.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pyspark import cloudpickle

from streamsift.config import load_pipeline
from streamsift.engine.query import pass_through_processor, read_spec
from streamsift.sources.kafka import make_data_source
from support.paths import EXAMPLES

DRIVER_ONLY = ("pydantic", "sqlglot", "clickhouse_connect", "chdb", "streamsift.config.models")


def test_the_pickled_source_leaves_the_driver_libraries_out(tmp_path: Path) -> None:
    pipeline = load_pipeline(EXAMPLES / "users-dedup.yaml")
    (src,) = pipeline.inputs
    source = make_data_source(
        "users", read_spec(pipeline, src), pass_through_processor(pipeline, tmp_path, None)
    )
    pickled = tmp_path / "source.pickle"
    pickled.write_bytes(cloudpickle.dumps(source))
    code = (
        f"import pickle, sys\npickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        f"print(','.join(m for m in {DRIVER_ONLY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == ""


def test_the_batch_planner_leaves_the_processor_packed(tmp_path: Path) -> None:
    """Spark's source runner (one process per query) unpickles the source and makes its
    stream reader, but processes no record: the processor's modules stay out of it; a task
    that reads records unpacks the same processor."""
    pipeline = load_pipeline(EXAMPLES / "users-dedup.yaml")
    (src,) = pipeline.inputs
    processor = pass_through_processor(pipeline, tmp_path, None)
    source = make_data_source("users", read_spec(pipeline, src), processor)
    pickled = tmp_path / "source.pickle"
    pickled.write_bytes(cloudpickle.dumps(source))
    processor_modules = (type(processor).__module__, "streamsift.engine.processor", "rocksdict")
    code = (
        f"import pickle, sys\nsource = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        "reader = source({}).streamReader(None)\n"
        f"print(','.join(m for m in {processor_modules!r} if m in sys.modules))\n"
        "print(type(reader.processor.unpack()).__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    planner_imports, unpacked = out.stdout.splitlines()
    assert planner_imports == ""
    assert unpacked == type(processor).__name__
