-- Loads an annotation patterns CSV ($path) into annotation_patterns as source $source,
-- replacing that source.
-- CSV header: priority,role,format,regex,phase,context_group,generation_group,number_group

DELETE FROM annotation_patterns WHERE source = $source;

INSERT INTO annotation_patterns
SELECT $source, priority, role, format, regex, phase, context_group, generation_group, number_group
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"',
              columns = {'priority': 'INTEGER', 'role': 'VARCHAR', 'format': 'VARCHAR',
                         'regex': 'VARCHAR', 'phase': 'VARCHAR', 'context_group': 'INTEGER',
                         'generation_group': 'INTEGER', 'number_group': 'INTEGER'});
