-- Loads a kernel rules CSV ($path) into kernel_rules as source $source, replacing that source.
-- CSV header: priority,platform,match,pattern,op,label,covers (a file without the covers column,
-- written before context rules existed, loads with covers NULL).

DELETE FROM kernel_rules WHERE source = $source;

INSERT INTO kernel_rules (source, priority, platform, match, pattern, op, label, covers)
SELECT $source, priority, platform, match, pattern, op, label, nullif(covers, '')
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"', null_padding = true,
              columns = {'priority': 'INTEGER', 'platform': 'VARCHAR', 'match': 'VARCHAR',
                         'pattern': 'VARCHAR', 'op': 'VARCHAR', 'label': 'VARCHAR', 'covers': 'VARCHAR'});
