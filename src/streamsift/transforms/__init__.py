"""Transforms: turning raw messages into typed rows (parse) and removing repeats (dedup)."""
