"""tracedb: a SQL database for accelerator profiler traces.

    import tracedb
    db = tracedb.connect("runs.duckdb")        # read-only unless read_only=False
    db.report("compare", trace="h100", vs="mi300").df()

See tracedb.api for the whole API.
"""

__version__ = "0.1.0"

from .api import Database, Loaded, connect, reports_available, state  # noqa: E402
from .results import ReportResult, Result  # noqa: E402
from .errors import TracedbError  # noqa: E402

__all__ = ["connect", "Database", "Loaded", "Result", "ReportResult", "reports_available", "state", "TracedbError", "__version__"]
