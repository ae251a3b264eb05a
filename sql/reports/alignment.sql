-- Report: alignment
-- Two traces layer by layer, the largest gaps first: the seed analyzer's layer-wise breakdown
-- (A slower / A faster / similar by 0.1 ms and 1.2x), then kernel pairs aligned by operation and
-- its occurrence within each layer over every forward pass, with same-kernel flags and fusion
-- notes.
-- Chart: layer -> a_total_ns,b_total_ns,gap_ns  Time per layer, and the gap
-- Example: tracedb report alignment --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   rows of the layers and pairs tables (NULL: all)
-- Columns:
--   layer       id                0-based layer within the forward pass
--   status      text              A slower, A faster, similar, only A or only B
--   a_passes    count     wide    forward passes of A that reach the layer
--   b_passes    count     wide    forward passes of B that reach the layer
--   a_kernels   count     total   A's kernels in the layer, over every pass
--   b_kernels   count     total   B's kernels in the layer, over every pass
--   a_total_ns  duration  total   A's time in the layer
--   b_total_ns  duration  total   B's time in the layer
--   ratio       ratio             a_total_ns / b_total_ns
--   gap_ns      duration  total   a_total_ns - b_total_ns
SELECT layer, status, a_passes, b_passes, a_kernels, b_kernels, a_total_ns, b_total_ns, ratio, gap_ns
FROM alignment_layers($trace, $vs, $phase)
ORDER BY abs(gap_ns) DESC NULLS LAST, layer
LIMIT $limit;

-- Section: summary
-- Layers per group (the seed analyzer's counts).
-- Columns:
--   status      text             A slower, A faster, similar, only A or only B
--   layers      count     total  layers in the group
--   a_total_ns  duration  total  A's time in those layers
--   b_total_ns  duration  total  B's time in those layers
--   gap_ns      duration  total  a_total_ns - b_total_ns
SELECT status, count(*) AS layers, sum(a_total_ns) AS a_total_ns, sum(b_total_ns) AS b_total_ns,
       sum(gap_ns) AS gap_ns
FROM alignment_layers($trace, $vs, $phase)
GROUP BY status
ORDER BY list_position(['A slower', 'A faster', 'similar', 'only A', 'only B'], status);

-- Section: pairs
-- Kernel pairs, the largest difference in total time first: kernels pair by operation and
-- occurrence of the operation's call within the layer (a fused kernel counting once for each
-- operation it holds; a GEMM's split-K reduction kernel belonging to its GEMM's call).
-- Columns:
--   layer        id                0-based layer
--   position     id                0-based place within the layer (A's, else B's)
--   op           text              operation at that place
--   occurrence   id        wide    0-based occurrence of the operation in the layer (the pairing key)
--   detail       text      wide    QKV, O, FFN_up or FFN_down for a dense GEMM that names its role
--   a_kernel     kernel            A's most frequent kernel name there
--   b_kernel     kernel            B's most frequent kernel name there
--   a_calls      count     total wide  A's operation calls there, over every pass
--   b_calls      count     total wide  B's operation calls there, over every pass
--   a_kernels    count     total wide  A's kernels there, over every pass (helper kernels such as a split-K reduction included)
--   b_kernels    count     total wide  B's kernels there, over every pass
--   a_avg_ns     duration  wide    mean time of a call in A
--   b_avg_ns     duration  wide    mean time of a call in B
--   ratio        ratio     wide    a_avg_ns / b_avg_ns
--   gap_ns       duration  wide    a_avg_ns - b_avg_ns (per call)
--   a_total_ns   duration  total   total duration in A
--   b_total_ns   duration  total   total duration in B
--   same_kernel  text      wide    yes when both sides run the same kernel
--   fusion_note  text      wide    what the counts say about fusion
SELECT layer, position, op, occurrence, detail, a_kernel, b_kernel,
       a_calls, b_calls, a_kernels, b_kernels, a_avg_ns, b_avg_ns, ratio, gap_ns, a_total_ns, b_total_ns, same_kernel, fusion_note
FROM alignment_pairs($trace, $vs, $phase)
ORDER BY abs(coalesce(a_total_ns, 0) - coalesce(b_total_ns, 0)) DESC, layer, position, op, occurrence
LIMIT $limit;
