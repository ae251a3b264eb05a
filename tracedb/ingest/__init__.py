"""Input formats: each module turns one kind of trace file into rows of the event tables."""
