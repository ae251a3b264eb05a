-- Schema v2: reference data for the analysis views, as tables a user can read and extend.
--
-- The built-in rows (source = 'builtin') are reloaded from sql/rules/*.csv whenever those files
-- change; rows of any other source are the user's own (tracedb rules add FILE, or INSERT from
-- any DuckDB client) and are never touched by an upgrade.

-- Kernel classification rules: the first rule that matches a kernel name gives its operation.
-- User rules (source other than 'builtin') are tried before the built-in ones; within each group
-- lower priority numbers are tried first.
-- Columns:
--   source    'builtin' for the packaged rules, else the name of the user's rules file
--   priority  order of trial within the source group (lower first)
--   platform  NVIDIA, AMD or any
--   match     prefix, contains (both case-insensitive) or regex (RE2, case-sensitive unless (?i))
--   pattern   the text or expression matched against the kernel name
--   op        operation family given to matching kernels (Attention, Dense GEMM, ...)
--   label     the rule's name, shown as kernel_ops.pattern
CREATE TABLE kernel_rules (
    source   VARCHAR NOT NULL,
    priority INTEGER NOT NULL,
    platform VARCHAR NOT NULL,
    match    VARCHAR NOT NULL,
    pattern  VARCHAR NOT NULL,
    op       VARCHAR NOT NULL,
    label    VARCHAR NOT NULL
);

-- Annotation patterns: which user annotations mark a step of the model and what phase it runs.
-- The first matching pattern (lowest priority) decides; user rows are tried before built-in ones.
-- Columns:
--   source            'builtin' or the name of the user's file
--   priority          order of trial (lower first)
--   role              phase (a model step: prefill, decode or mixed) or step (ProfilerStep-like
--                     iteration that carries no phase)
--   format            name of the annotation format, e.g. vllm_context_generation
--   regex             RE2 expression matched against the annotation name
--   phase             fixed phase for every match (NULL: decided by the groups below)
--   context_group     capture group holding the amount of prefill work (tokens or requests)
--   generation_group  capture group holding the amount of decode work
--   number_group      capture group holding the step number (ProfilerStep#N), if any
CREATE TABLE annotation_patterns (
    source           VARCHAR NOT NULL,
    priority         INTEGER NOT NULL,
    role             VARCHAR NOT NULL,
    format           VARCHAR NOT NULL,
    regex            VARCHAR NOT NULL,
    phase            VARCHAR,
    context_group    INTEGER,
    generation_group INTEGER,
    number_group     INTEGER
);
