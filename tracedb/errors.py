"""Errors a user can act on. The CLI prints them as one line and exits 1."""

import duckdb


class TracedbError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""


class BadTraceFile(TracedbError):
    """A file that cannot be loaded at all; the database is left unchanged."""

    def __init__(self, path, problem: str):
        problem = " ".join(str(problem).split())  # one line, whatever a parser's message holds
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class Interrupted(Exception):
    """Ctrl-C after some of a command's work was committed: the message says what is in the
    database (the CLI prints it and exits 130)."""


def is_interrupt(exc: BaseException) -> bool:
    """Ctrl-C, as Python or DuckDB reports it: DuckDB takes the signal during a query and raises
    InterruptException (a duckdb.Error) or a RuntimeError "Query interrupted"."""
    return (isinstance(exc, (KeyboardInterrupt, duckdb.InterruptException))
            or (isinstance(exc, RuntimeError) and str(exc).startswith("Query interrupted")))


def reraise_interrupt(exc: BaseException) -> None:
    """Code that handles DuckDB errors calls this first, so that an interrupt is never taken for a
    bad file (and a fallback that reads the whole file again)."""
    if is_interrupt(exc):
        raise KeyboardInterrupt from None
