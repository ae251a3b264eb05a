-- Loads a step frame patterns CSV ($path) into step_frame_patterns as source $source,
-- replacing that source.
-- CSV header: priority,framework,regex,phase

DELETE FROM step_frame_patterns WHERE source = $source;

INSERT INTO step_frame_patterns
SELECT $source, priority, framework, regex, nullif(phase, '')
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"',
              columns = {'priority': 'INTEGER', 'framework': 'VARCHAR', 'regex': 'VARCHAR',
                         'phase': 'VARCHAR'});
