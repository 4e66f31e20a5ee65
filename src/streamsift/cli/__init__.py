"""The `streamsift` command line."""
