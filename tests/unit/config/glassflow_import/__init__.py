"""Tests of the GlassFlow importer (streamsift.config.glassflow), one file a concern."""
