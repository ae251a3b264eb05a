"""Errors a user can act on. The CLI prints them as one line and exits 1."""


class TracedbError(Exception):
    """A problem with the user's input or environment, reported without a traceback."""


class BadTraceFile(TracedbError):
    """A file that cannot be loaded at all; the database is left unchanged."""

    def __init__(self, path, problem: str):
        problem = " ".join(str(problem).split())  # one line, whatever a parser's message holds
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
