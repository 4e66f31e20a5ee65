"""Where the stages meet: the Spark session, the query that runs source -> parse -> dedup ->
join -> sink, checkpoints and progress, and the service layer every face calls.

Faces use: `pipeline.PipelineRunner` (run until caught up or until stopped; its `stats`),
`signals` (stop handlers), `dead_letters.open_dead_letters` (DLQ stats, listing, consuming,
purging, replaying). Nothing here imports a face.
"""
