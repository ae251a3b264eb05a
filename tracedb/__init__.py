"""tracedb: a SQL database for accelerator profiler traces."""

__version__ = "0.1.0"
