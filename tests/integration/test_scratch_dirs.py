"""Spark keeps its temp files in this process's scratch directory (spark_host/scratch.py), which
the next streamsift process removes if this one is killed (tests/integration/test_chaos.py)."""

from __future__ import annotations

import pytest

from streamsift.spark_host import scratch
from streamsift.spark_host.session import spark_session

pytestmark = pytest.mark.integration


def test_spark_and_its_jvm_keep_their_temp_files_in_the_process_scratch_directory():
    spark = spark_session()
    mine = scratch.claim()
    assert spark.sparkContext.getConf().get("spark.local.dir") == str(mine)
    spark.range(10).repartition(2).count()  # a shuffle: block manager files
    assert any(mine.glob("blockmgr-*")) and any(mine.glob("spark-*"))
    jvm = spark.sparkContext._jvm
    assert jvm.java.lang.System.getProperty("java.io.tmpdir") == str(mine)
    assert not scratch.owner_is_gone(mine.name)
