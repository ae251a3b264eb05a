-- Bookkeeping of the database itself; applied before every migration (idempotent).

-- Schema migrations applied to this database, one row per sql/schema/NNN_*.sql file.
-- Columns:
--   version     number of the migration (NNN)
--   name        file name of the migration
--   applied_at  when it was applied
CREATE TABLE IF NOT EXISTS tracedb_schema (
    version    INTEGER PRIMARY KEY,
    name       VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
);

-- Fingerprint of the SQL modules, rules and derivation files last applied, so views are
-- re-created only when they change.
-- Columns:
--   file    the module (core.events), rules/<file> or derive/<file>; pending:derive/<file> where a
--           read-only open applied the views and left that derivation to the next writer
--   sha256  SHA-256 of its text when applied (pending for a pending:derive row)
CREATE TABLE IF NOT EXISTS tracedb_views (
    file   VARCHAR PRIMARY KEY,
    sha256 VARCHAR NOT NULL
);
