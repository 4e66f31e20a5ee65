"""Building the JVM class archive (runtime/class_archive.py): the Spark work whose classes
it holds, and the entry point `make setup` runs (`python -m streamsift.runtime.class_archive_build`).

Apart from class_archive.py, which session.py reads at every start: building needs a Spark
session, so this module sits above session.py while class_archive.py sits below it.
"""

from __future__ import annotations

import argparse

from streamsift.runtime.class_archive import BUILD_TIMEOUT_S
from streamsift.runtime.session import build_class_archive, spark_session


def _exercise() -> None:
    """Spark work that loads what a pipeline's start loads: a session, a Python data
    source, a stateful streaming query with foreachBatch; then the JVM exits (and dumps)."""
    import tempfile

    from pyspark import SparkContext
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    class Reader(DataSourceStreamReader):
        def initialOffset(self) -> dict:
            return {"n": 0}

        def latestOffset(self) -> dict:
            return {"n": 10}

        def partitions(self, start: dict, end: dict) -> list:
            return [InputPartition(0)]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            yield from ((i % 3, str(i)) for i in range(10))

    class Source(DataSource):
        @classmethod
        def name(cls) -> str:
            return "streamsift_class_archive"

        def schema(self) -> str:
            return "k long, v string"

        def streamReader(self, schema: object) -> DataSourceStreamReader:
            return Reader()

    spark = spark_session("streamsift-class-archive")
    spark.dataSource.register(Source)
    with tempfile.TemporaryDirectory() as checkpoint:
        frame = spark.readStream.format("streamsift_class_archive").load().dropDuplicates(["k"])
        query = (
            frame.writeStream.foreachBatch(lambda df, _: df.toArrow())
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
    gateway = SparkContext._gateway
    spark.stop()
    if gateway is not None:  # the JVM exits when its stdin closes, writing the archive
        proc = gateway.proc
        gateway.shutdown()
        proc.stdin.close()
        proc.wait(BUILD_TIMEOUT_S)


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
