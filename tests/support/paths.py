"""Where things are in the checkout, for tests that read the repository's own files or run
the CLI from its root."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "pipelines"  # the shipped example pipelines
DEMOS = REPO / "tests" / "data" / "glassflow_demos"  # GlassFlow's demo files, as published
ARTIFACTS = REPO / "test-artifacts"  # screenshots and the like (not in git)
