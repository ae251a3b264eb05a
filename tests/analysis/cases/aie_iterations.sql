-- The AIE fixtures' iterations per core tile (split at long LOCK_STALLs) and their cycles.
SELECT t.name AS trace, i.tile_name, count(*) AS iterations, sum(i.total_span_cycles) AS span_cycles
FROM aie_iterations i JOIN traces t USING (trace_id)
GROUP BY ALL ORDER BY ALL;
