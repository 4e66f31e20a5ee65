"""The service behind `streamsift serve`: pipelines kept, supervised and brought back.

`core.PipelineService` is what every face of the server calls: its records in SQLite
(`database`), secrets sealed at rest (`secret_box`), a worker process per pipeline
(`supervisor`, `pipeline_process`), lifecycle and edits, ClickHouse endpoints, metrics, the
OTLP receiver and the document policy. `authoring` holds the helpers only the API and UI use
while a pipeline is being written. The service drives the engine; nothing below imports it.
"""
