"""The Spark host: the SparkSession and everything around the JVM and Spark's Python workers.

The packed environment executors run with, the driver's class-data archive, the bytecode of
Spark's zips, the interpreter and heap tuning of the Python workers, the JVM's output, scratch
space, the per-user cache, and the process-tree helpers. It knows nothing of pipelines'
stages: the engine builds its queries on it.
"""
