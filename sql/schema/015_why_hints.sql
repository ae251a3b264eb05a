-- Schema v15: hints for the findings of `tracedb report why`, as data. Like the kernel rules: the
-- packaged rows (source 'builtin', sql/rules/why_hints.csv) and a user's own (tracedb rules add
-- my_hints.csv), tried first.

-- A short, factual hint for a kind of finding: what usually causes it and where to look.
-- Columns:
--   source    'builtin' or the name of the user's file
--   priority  order of trial within a source (lower first); the first row of a kind is its hint
--   kind      the finding's kind, as why_findings names it (host-bound idle, collective waiting, ...)
--   hint      the hint, one or two sentences
CREATE TABLE IF NOT EXISTS why_hints (
    source   VARCHAR NOT NULL,
    priority INTEGER NOT NULL,
    kind     VARCHAR NOT NULL,
    hint     VARCHAR NOT NULL
);
