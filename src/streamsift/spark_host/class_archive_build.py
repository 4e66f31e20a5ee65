"""Building the JVM class archive (spark_host/class_archive.py): the Spark work whose classes
it holds, and the entry point `make setup` runs (`python -m streamsift.spark_host.class_archive_build`).

Apart from class_archive.py, which session.py reads at every start: building needs a Spark
session, so this module sits above session.py while class_archive.py sits below it.
"""

from __future__ import annotations

import argparse

from streamsift.config.models import StateStore
from streamsift.spark_host.class_archive import BUILD_TIMEOUT_S
from streamsift.spark_host.query_conf import settings_for
from streamsift.spark_host.session import build_class_archive, spark_session


def _exercise() -> None:
    """Spark work that loads what a pipeline loads: a session, a Python data source, a
    stateful streaming query with foreachBatch, and a stream-stream join as streamsift builds
    one (watermarks, a time-range condition, its state format, inner and left outer); then the
    JVM exits (and dumps)."""
    import tempfile

    from pyspark import SparkContext

    spark = spark_session("streamsift-class-archive")
    spark.dataSource.register(_exercise_source())
    with tempfile.TemporaryDirectory() as checkpoint:
        frame = spark.readStream.format("streamsift_class_archive").load().dropDuplicates(["k"])
        _run_once(frame, f"{checkpoint}/dedup")
        for how in ("inner", "leftouter"):
            _run_once(_exercise_join(spark, how), f"{checkpoint}/join-{how}")
    gateway = SparkContext._gateway
    spark.stop()
    if gateway is not None:  # the JVM exits when its stdin closes, writing the archive
        proc = gateway.proc
        gateway.shutdown()
        proc.stdin.close()
        proc.wait(BUILD_TIMEOUT_S)


def _exercise_source() -> type:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class Reader(DataSourceStreamReader):
        def initialOffset(self) -> dict:
            return {"n": 0}

        def latestOffset(self) -> dict:
            return {"n": 10}

        def partitions(self, start: dict, end: dict) -> list:
            return [InputPartition(0)]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            from datetime import datetime, timedelta

            start = datetime(2026, 1, 1)
            yield from ((i % 3, str(i), start + timedelta(seconds=i)) for i in range(10))

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "streamsift_class_archive"

        def schema(self) -> str:
            return "k long, v string, t timestamp"

        def streamReader(self, schema: object) -> DataSourceStreamReader:
            return Reader()

    return Source


def _exercise_join(spark: object, how: str) -> object:
    from pyspark.sql import functions as F

    def side(alias: str) -> object:
        frame = spark.readStream.format("streamsift_class_archive").load()  # type: ignore[attr-defined]
        frame = frame.withWatermark("t", "10 seconds").repartition(F.col("k"))
        return frame.filter(F.col("v").isNotNull()).alias(alias)

    condition = F.expr(
        "r.t >= l.t - INTERVAL 5 SECONDS AND r.t <= l.t + INTERVAL 5 SECONDS AND l.k = r.k"
    )
    return side("l").join(side("r"), condition, how).select("l.k", "l.v", "r.v")


def _run_once(frame: object, checkpoint: str) -> None:
    """Drain `frame` once with the settings streamsift's queries get (spark_host/query_conf.py)."""
    spark = frame.sparkSession  # type: ignore[attr-defined]
    for key, value in settings_for(StateStore.ROCKSDB).items():
        spark.conf.set(key, value)
    query = (
        frame.writeStream.foreachBatch(lambda df, _: df.toArrow())  # type: ignore[attr-defined]
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--exercise", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.exercise:
        _exercise()
        return
    path = build_class_archive()
    print(f"JVM class archive: {path or 'not built (runs start without it)'}")


if __name__ == "__main__":
    main()
