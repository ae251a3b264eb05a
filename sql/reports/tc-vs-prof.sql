-- Report: tc-vs-prof
-- TensorCast model against an Ascend profile, per kernel type: modelled time and calls, measured
-- time and kernels per forward pass, latency and count error, share of the measured time, and
-- whether the model found the type in its profiling data (HIT), fell back to analytic (MISS),
-- both (PARTIAL) or lacks it (unmodelled). --format json gives the rows of TensorCast's
-- op_comparison.json.
-- Chart: kernel_type -> tc_total_us,prof_per_fwd_us  Modelled and measured time per kernel type, µs
-- Example: tracedb report tc-vs-prof --trace tc --vs kernel_details_cann8
-- Parameters:
--   trace = NULL           the TensorCast trace (name or #id)
--   vs = NULL              the profile: kernel_details.csv, op_summary or a forward-pass CSV (name or #id)
--   forward_passes = NULL option  forward passes the profile holds; its time and kernels are divided by it (default: the profile's --meta forward_passes, else 1)
--   mapping = NULL option         op mapping for MISS operators and zero-cost ones (default: the one loaded with --op-mapping, else the only one loaded)
-- Columns:
--   kernel_type      text              kernel type
--   tc_funcs         text              first three TensorCast operators contributing (without torch.ops.)
--   tc_total_us      count     total   modelled time, µs
--   tc_count         count     total   modelled calls
--   prof_per_fwd_us  count     total   measured time per forward pass, µs
--   prof_count       count     total   measured kernels per forward pass
--   error_pct        percent           latency error: (TC - profile) / profile
--   count_error_pct  percent           count error: (TC calls - profile kernels) / profile kernels
--   prof_share_pct   percent   total   share of the measured time per forward pass
--   status           text              HIT, MISS, PARTIAL or unmodelled
SELECT kernel_type, tc_funcs, tc_total_us, tc_count, prof_per_fwd_us, prof_count, error_pct, count_error_pct,
       prof_share_pct, status
FROM tc_vs_prof($trace, $vs, want_forward_passes := $forward_passes, want_mapping := $mapping)
ORDER BY greatest(tc_total_us, prof_per_fwd_us) DESC, kernel_type;

-- Section: totals
-- The whole forward pass: modelled and measured time, their error, and what the measured side
-- folded or left out.
-- Columns:
--   kernel_types     count             kernel types compared
--   unmodelled       count             kernel types TensorCast lacks
--   tc_total_us      count             modelled time, µs (sum of the rounded rows)
--   prof_per_fwd_us  count             measured time per forward pass, µs (sum of the rounded rows)
--   error_pct        percent           (TC - profile) / profile of those sums
--   hcom_merged      count             measured hcom kernels per pass folded into a parallel one (same start and type)
--   aicpu_skipped    count             measured *AicpuKernel kernels per pass left out
SELECT count(*) AS kernel_types, count(*) FILTER (WHERE status = 'unmodelled') AS unmodelled,
       sum(tc_total_us) AS tc_total_us, sum(prof_per_fwd_us) AS prof_per_fwd_us,
       CASE WHEN sum(prof_per_fwd_us) > 0
            THEN _tenths((sum(tc_total_us) - sum(prof_per_fwd_us)) / sum(prof_per_fwd_us) * 100) END AS error_pct,
       sum(hcom_merged) AS hcom_merged, max(aicpu_skipped) AS aicpu_skipped
FROM tc_vs_prof($trace, $vs, want_forward_passes := $forward_passes, want_mapping := $mapping);
