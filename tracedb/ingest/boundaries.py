"""Where one event of a Chrome trace's list ends and the next begins, found without parsing.

The bulk reader cuts the list into segments at these boundaries, and the salvage of a segment
DuckDB refuses (tracedb.ingest.salvage) finds where a bad event ends with them. A boundary is
"}" "," "{" followed by one of an event's keys, with the whitespace the list puts before its first
event. It can be fooled only by a nested object that starts with an event key and is laid out
like an event (a compact trace, "}, {\"name\"" inside args): a cut there breaks its segment,
which DuckDB then refuses.
"""

from __future__ import annotations

import re

# The list's "[" and the whitespace before its first event (pretty-printed Kineto: a newline and
# two spaces).
LEAD = re.compile(rb"\[([ \t\r\n]*)\{")

# The keys a Chrome event starts with; a nested object (an args value) rarely starts with one.
_EVENT_KEY = rb'(?=[ \t\r\n]*"(?:ph|cat|name|pid|tid|ts|dur|args|id|s|bp|cname|tts)")'


def boundary_pattern(lead: bytes) -> re.Pattern:
    """Between two events: "}" "," "{" before one of an event's keys, with the whitespace the list
    puts before its first event (pretty-printed Kineto: a newline and two spaces, which nested
    objects do not have). A list written with none ("[{") separates its events by a comma with any
    whitespace around it."""
    if lead:
        return re.compile(rb"\}\s*(,)" + re.escape(lead) + rb"\{" + _EVENT_KEY)
    return re.compile(rb"\}\s*(,)\s*\{" + _EVENT_KEY)


def last_boundary(boundary: re.Pattern, data: bytearray, before: int) -> int | None:
    """Offset of the comma of the last event boundary that starts before `before`."""
    window = 1 << 16
    start = before
    while start > 0:
        start = max(0, start - window)
        found = None
        for m in boundary.finditer(data, start, before + 256):
            if m.start() < before:
                found = m.start(1)
        if found is not None:
            return found
        window *= 2
    return None
