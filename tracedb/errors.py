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


# What DuckDB says of a file it opened but cannot read (a corrupt block, a truncated file).
_DAMAGE = ("Corrupt database file", "does not match stored checksum", "Could not read enough bytes",
           "Could not read all bytes")


def is_damage(exc: BaseException) -> bool:
    """A DuckDB error saying the database file itself is damaged (not the query that met it).
    Code that turns DuckDB errors into lines of its own lets these through, so that the line
    names the file (tracedb.db opening it, the command line after)."""
    return isinstance(exc, duckdb.Error) and any(sign in str(exc) for sign in _DAMAGE)


def damaged(path, exc: BaseException) -> str:
    """The line for a damaged database: the file and DuckDB's reason."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return f"{path}: the database cannot be read: {reason[:300]}"

