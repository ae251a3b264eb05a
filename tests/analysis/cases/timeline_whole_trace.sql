-- The wall-clock parts of each Kineto trace as a whole (gpu_timeline's row without a step): they
-- add up to the span.
SELECT t.name AS trace, g.span_ns, g.busy_ns, g.idle_ns, g.compute_ns, g.exposed_comm_ns, g.exposed_memcpy_ns,
       g.span_ns = g.busy_ns + g.idle_ns AS parts_add_up
FROM gpu_timeline g JOIN traces t USING (trace_id)
WHERE g.step IS NULL
ORDER BY ALL;
