-- Report: stacks
-- Where each operation comes from: per operation the most common cpu_op and Python path, and how
-- many different ones issue it.
-- Example: tracedb report stacks --trace h100_bert-small
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only this phase: prefill, decode, mixed or none (NULL: all)
--   limit = 30     rows per trace, largest total first
-- Columns:
--   trace           text            trace name
--   op              text            operation family
--   kernels         count     total  kernels run
--   total_ns        duration  total  sum of their durations
--   cpu_op          text            most common issuing cpu_op (NULL: graph replays or no CPU ops)
--   cpu_op_variants count           distinct cpu_ops issuing the operation
--   summary         text            most common one-line Python summary
--   stack_variants  count           distinct Python stacks launching the operation
--   python_path     text            innermost four frames of the most common stack, outermost first
WITH k AS (
    SELECT trace_id, trace, op, cpu_op, stack_id, s.summary, s.python_stack, dur_ns
    FROM selected_kernels($trace, $phase) k
    LEFT JOIN python_stacks s USING (trace_id, stack_id)
)
SELECT trace, op, count(*) AS kernels, sum(dur_ns) AS total_ns,
       -- each mode in one order, so that a tie goes the same way whatever the order of the rows
       mode(cpu_op ORDER BY cpu_op) AS cpu_op, count(DISTINCT cpu_op) AS cpu_op_variants,
       coalesce(mode(summary ORDER BY summary), mode(cpu_op ORDER BY cpu_op)) AS summary,
       count(DISTINCT stack_id) AS stack_variants,
       array_to_string(list_transform(mode(python_stack ORDER BY python_stack)[-4:], lambda f: _stack_shorten(f, 80)), ' > ')
           AS python_path
FROM k
GROUP BY trace_id, trace, op
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY sum(dur_ns) DESC, op) <= $limit
ORDER BY trace_id, total_ns DESC, op;
