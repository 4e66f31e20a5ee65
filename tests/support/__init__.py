"""Test support: fixtures and helpers the suite shares (a pytest plugin, registered in
tests/conftest.py), and the test-only servers (a schema registry, a Spark standalone
cluster). Nothing in streamsift imports this package."""
