"""Sources: where records come from. Today: Kafka, as a PySpark Python data source."""
