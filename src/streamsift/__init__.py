"""streamsift: exactly-once streaming ETL from Kafka to ClickHouse on PySpark."""

__version__ = "0.1.0"
