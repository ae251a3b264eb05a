-- A trace's run parameters, for the reports and macros that default to them.

-- A trace's parameter as given at load (scalar macro); NULL when it has none.
CREATE OR REPLACE MACRO trace_param(t_id, param_key) AS (
    SELECT value FROM trace_params WHERE trace_id = t_id AND key = param_key
    ORDER BY source = 'path' LIMIT 1
);
