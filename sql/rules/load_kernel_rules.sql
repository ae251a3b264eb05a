-- Loads a kernel rules CSV ($path) into kernel_rules as source $source, replacing that source.
-- CSV header: priority,platform,match,pattern,op,label

DELETE FROM kernel_rules WHERE source = $source;

INSERT INTO kernel_rules
SELECT $source, priority, platform, match, pattern, op, label
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"',
              columns = {'priority': 'INTEGER', 'platform': 'VARCHAR', 'match': 'VARCHAR',
                         'pattern': 'VARCHAR', 'op': 'VARCHAR', 'label': 'VARCHAR'});
