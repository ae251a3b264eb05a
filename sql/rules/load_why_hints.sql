-- Loads a why hints CSV ($path) into why_hints as source $source, replacing that source.
-- CSV header: priority,kind,hint

DELETE FROM why_hints WHERE source = $source;

INSERT INTO why_hints
SELECT $source, priority, kind, hint
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"',
              columns = {'priority': 'INTEGER', 'kind': 'VARCHAR', 'hint': 'VARCHAR'});
