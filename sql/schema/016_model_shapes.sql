-- Schema v16: a model's shapes where the trace does not record them (a MoE op without its expert
-- weights among its inputs), as data. Like the device peaks: the packaged rows (source 'builtin',
-- sql/rules/model_shapes.csv, none) and a user's own (tracedb rules add my_model.csv), tried first.

-- What a user knows of a model that a MoE op's recorded inputs leave out.
-- Columns:
--   source        'builtin' or the name of the user's file
--   priority      order of trial within a source (lower first); the first row that applies wins
--   regex         RE2 expression searched in the operation's name (cpu_op) and in the trace's name
--   model         the model it describes (a label)
--   hidden        hidden size (NULL: as recorded)
--   intermediate  an expert's intermediate size (NULL: as recorded, else the hidden size)
--   experts       experts per MoE layer (NULL: as recorded)
--   top_k         experts per token (NULL: as recorded)
--   reference     where the figures come from (the model's config)
CREATE TABLE IF NOT EXISTS model_shapes (
    source       VARCHAR NOT NULL,
    priority     INTEGER NOT NULL,
    regex        VARCHAR NOT NULL,
    model        VARCHAR,
    hidden       BIGINT,
    intermediate BIGINT,
    experts      BIGINT,
    top_k        BIGINT,
    reference    VARCHAR
);
