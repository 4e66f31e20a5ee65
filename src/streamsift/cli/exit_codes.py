"""The command line's one mapping from errors to what the user sees and the exit code.

Exit codes: 0 done; 1 the run failed or was declined (a broker or ClickHouse that does not
answer, a refused statement, a failed query: the checkpoint is intact); 2 the input is wrong
(a pipeline file, a command-line value, a machine without Java).
"""

from __future__ import annotations

import sys

from streamsift.cli.output import fail
from streamsift.config import ConfigError
from streamsift.errors import ErrorKind, StreamsiftError

EXIT_CODES = {ErrorKind.CONFIGURATION: 2, ErrorKind.TRANSIENT: 1, ErrorKind.PERMANENT: 1}


def report(exc: StreamsiftError) -> int:
    """Print the error (a line per problem of a pipeline document), return the exit code."""
    code = EXIT_CODES[exc.kind]
    if isinstance(exc, ConfigError):
        for problem in exc.problems:
            print(f"{exc.source + ': ' if exc.source else ''}{problem}", file=sys.stderr)
        return code
    return fail(exc.message, exc.hint, code=code)
