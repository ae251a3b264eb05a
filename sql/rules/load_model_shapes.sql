-- Loads a model shapes CSV ($path) into model_shapes as source $source, replacing that source.
-- CSV header: priority,regex,model,hidden,intermediate,experts,top_k,reference

DELETE FROM model_shapes WHERE source = $source;

INSERT INTO model_shapes
SELECT $source, priority, regex, nullif(model, ''), hidden, intermediate, experts, top_k, nullif(reference, '')
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"',
              columns = {'priority': 'INTEGER', 'regex': 'VARCHAR', 'model': 'VARCHAR', 'hidden': 'BIGINT',
                         'intermediate': 'BIGINT', 'experts': 'BIGINT', 'top_k': 'BIGINT', 'reference': 'VARCHAR'});
