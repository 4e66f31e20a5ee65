"""The OTLP receiver: OTLP/HTTP and OTLP/gRPC export requests into a pipeline's Kafka topic."""
