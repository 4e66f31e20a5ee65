"""A local master's Python workers import pyspark from the installation, not Spark's zips."""

from __future__ import annotations

import pytest

from streamsift.spark_host.session import spark_session

pytestmark = pytest.mark.integration


def test_local_python_workers_import_the_installed_pyspark() -> None:
    import pyspark

    def where_pyspark_comes_from(_: object) -> list[tuple[str, ...]]:  # runs in a worker
        import sys

        import pyspark

        zips = tuple(p for p in sys.path if p.endswith((".zip", ".jar")) and "pyspark" in p)
        return [(pyspark.__file__, *zips)]

    spark = spark_session()
    (seen,) = (
        spark.sparkContext.parallelize([0], 1).mapPartitions(where_pyspark_comes_from).collect()
    )
    assert seen == (pyspark.__file__,)  # the driver's own copy, and no zip of Spark's on the path
