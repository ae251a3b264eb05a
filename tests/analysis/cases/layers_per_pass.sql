-- BERT-small's four encoder layers in its one forward pass, on either vendor, from its module
-- frames: kernels and time per layer.
SELECT t.name AS trace, l.forward_pass, l.layer, count(*) AS kernels, sum(k.dur_ns) AS total_ns
FROM kernel_layers l JOIN kernels k USING (trace_id, kernel_id) JOIN traces t USING (trace_id)
WHERE t.name IN ('h100_bert-small', 'mi300_bert-small')
GROUP BY ALL ORDER BY ALL;
