"""The suite's root conftest: it puts tests/ on sys.path (for the `support` package) and
registers the shared fixtures, `support.fixtures`, as a plugin."""

pytest_plugins = ["support.fixtures"]
