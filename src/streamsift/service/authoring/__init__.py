"""Helpers for writing a pipeline before it exists: connection probes, schema inference,
expression checks and previews, and the table preview of the UI's pipeline page."""
