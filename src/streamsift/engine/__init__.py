"""The engine: where the stages meet in one Spark structured streaming query.

source -> parse -> dedup -> (join) -> sink, written into ClickHouse exactly once; its
checkpoints, progress, dead letters and their replay. Faces use `runner.PipelineRunner` (run
until caught up or until stopped; its `stats`), `signals` (stop handlers) and
`dead_letters.open_dead_letters`. The engine runs on the Spark host (`streamsift.spark_host`)
and imports nothing of the service or the faces.
"""
