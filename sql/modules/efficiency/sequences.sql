-- include: core.events

-- Serving attention's sequence lengths, from the step annotations vLLM, SGLang and ATOM write
-- when their detailed roofline annotations are on. A serving attention op (vLLM's
-- unified_attention, SGLang's paged attention) takes its queries and its KV cache as flat token
-- buffers: its shapes say the heads and head sizes, never how many KV tokens each query attends
-- to. The step does, per phase: for the context (prefill) requests the sums over requests of the
-- query tokens sq, the KV tokens sk, sq·sq and sq·sk; for the generation (decode) requests the
-- same sums. The formats read (each carries the sums; the native ones, counts only, do not):
--   vLLM    execute_64_context_0(sq0sk0sqsq0sqsk0)_generation_64(sq64sk131072sqsq64sqsk131072)
--   SGLang  step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]
--           (DECODE gives g_sqsq, g_sqsk, g_sk: its requests have sq = 1, so g_sq = g_sqsq;
--           EXTEND gives c_sqsq, c_sqsk, c_sk and toks = c_sq)
--   ATOM    prefill[bs=2 tok=14721 ... sqsq=108745533 sqsk=108745533 sk=14721] (context),
--           decode[bs=32 tok=128 ... sqsq=512 sqsk=262144 sk=65536] (generation)

-- One step annotation's sequence sums.
-- Columns:
--   trace_id   trace of the annotation
--   event_id   the annotation's event
--   name       the annotation as written
--   ts_ns      its start, nanoseconds
--   end_ns     its end, nanoseconds
--   c_sq       context requests: query tokens summed
--   c_sk       context requests: KV tokens summed (cached and new)
--   c_sqsq     context requests: sq·sq summed (the causal part)
--   c_sqsk     context requests: sq·sk summed
--   g_sq       generation requests: query tokens summed
--   g_sk       generation requests: KV tokens summed
--   g_sqsq     generation requests: sq·sq summed
--   g_sqsk     generation requests: sq·sk summed
CREATE OR REPLACE VIEW step_sequence_sums AS
WITH a AS (
    SELECT trace_id, event_id, name, ts_ns, ts_ns + dur_ns AS end_ns
    FROM annotations
    WHERE NOT on_gpu AND dur_ns IS NOT NULL AND contains(name, 'sqsk') AND _in_scope(trace_id)
), parsed AS (
    SELECT *,
           regexp_extract(name, 'context_\d+\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)', ['sq', 'sk', 'sqsq', 'sqsk']) AS vc,
           regexp_extract(name, 'generation_\d+\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)', ['sq', 'sk', 'sqsq', 'sqsk']) AS vg,
           regexp_extract(name, '^(prefill|decode)\[', 1) AS atom,
           -- a key=value of the SGLang and ATOM forms, '' when absent
           list_transform(['c_sq', 'c_sk', 'c_sqsq', 'c_sqsk', 'g_sq', 'g_sk', 'g_sqsq', 'g_sqsk', 'toks', 'tok', 'sk',
                           'sqsq', 'sqsk'],
                          lambda k: regexp_extract(name, '[\[ ]' || k || '=(\d+)', 1)) AS kv
    FROM a
), typed AS (
    SELECT trace_id, event_id, name, ts_ns, end_ns,
           TRY_CAST(nullif(vc.sq, '') AS BIGINT) AS v_c_sq, TRY_CAST(nullif(vc.sk, '') AS BIGINT) AS v_c_sk,
           TRY_CAST(nullif(vc.sqsq, '') AS BIGINT) AS v_c_sqsq, TRY_CAST(nullif(vc.sqsk, '') AS BIGINT) AS v_c_sqsk,
           TRY_CAST(nullif(vg.sq, '') AS BIGINT) AS v_g_sq, TRY_CAST(nullif(vg.sk, '') AS BIGINT) AS v_g_sk,
           TRY_CAST(nullif(vg.sqsq, '') AS BIGINT) AS v_g_sqsq, TRY_CAST(nullif(vg.sqsk, '') AS BIGINT) AS v_g_sqsk,
           nullif(atom, '') AS atom,
           list_transform(kv, lambda v: TRY_CAST(nullif(v, '') AS BIGINT)) AS n
    FROM parsed
)
SELECT trace_id, event_id, name, ts_ns, end_ns,
       coalesce(v_c_sq, n[1], n[9], CASE WHEN atom = 'prefill' THEN n[10] END, 0) AS c_sq,
       coalesce(v_c_sk, n[2], CASE WHEN atom = 'prefill' THEN n[11] END, 0) AS c_sk,
       coalesce(v_c_sqsq, n[3], CASE WHEN atom = 'prefill' THEN n[12] END, 0) AS c_sqsq,
       coalesce(v_c_sqsk, n[4], CASE WHEN atom = 'prefill' THEN n[13] END, 0) AS c_sqsk,
       coalesce(v_g_sq, n[5], n[7], CASE WHEN atom = 'decode' THEN n[10] END, 0) AS g_sq,
       coalesce(v_g_sk, n[6], CASE WHEN atom = 'decode' THEN n[11] END, 0) AS g_sk,
       coalesce(v_g_sqsq, n[7], CASE WHEN atom = 'decode' THEN n[12] END, 0) AS g_sqsq,
       coalesce(v_g_sqsk, n[8], CASE WHEN atom = 'decode' THEN n[13] END, 0) AS g_sqsk
FROM typed
WHERE coalesce(v_c_sqsk, v_g_sqsk, n[4], n[8], n[13]) IS NOT NULL;

-- FLOPs of one serving attention call (scalar macro), TraceLens's InferenceAttention: per query
-- head, QKᵀ and PV over every (query, KV) pair, the context requests causal within their new
-- chunk: h_q·(d_qk + d_v)·(2·(c_sqsk + g_sqsk) − c_sqsq).
CREATE OR REPLACE MACRO inference_attention_flops(h_q, d_qk, d_v, c_sqsk, c_sqsq, g_sqsk) AS
    -- in DOUBLE throughout: recorded sizes and sums may reach 2^63
    1::DOUBLE * h_q * (d_qk::DOUBLE + d_v) * (2::DOUBLE * (c_sqsk::DOUBLE + g_sqsk) - c_sqsq);

-- Bytes of one serving attention call (scalar macro): the queries read and the output written
-- (h_q heads per query token), and the keys and values of every KV token read once (h_kv heads),
-- at bpe bytes an element: ((c_sq + g_sq)·h_q + (c_sk + g_sk)·h_kv)·(d_qk + d_v)·bpe.
CREATE OR REPLACE MACRO inference_attention_bytes(h_q, h_kv, d_qk, d_v, c_sq, c_sk, g_sq, g_sk, bpe) AS
    ((c_sq::DOUBLE + g_sq) * h_q + (c_sk::DOUBLE + g_sk) * h_kv) * (d_qk::DOUBLE + d_v) * bpe;

-- The shape of one serving attention call (scalar macro): its heads and head sizes, and the step's
-- query and KV tokens with Σsq·sk (calls of different steps do different work):
-- '64×64 q, 8×64 kv · 32 q / 55086 kv tokens, Σsq·sk 55086'.
CREATE OR REPLACE MACRO serving_attention_shape(heads, c_sq, c_sk, c_sqsk, g_sq, g_sk, g_sqsk) AS
    heads.h_q || '×' || heads.d_qk || ' q, ' || heads.h_kv || '×' || heads.d_v || ' kv'
    || coalesce(' · ' || (c_sq::HUGEINT + g_sq) || ' q / ' || (c_sk::HUGEINT + g_sk) || ' kv tokens, Σsq·sk '
                || (c_sqsk::HUGEINT + g_sqsk), '');

-- Why a serving attention call has no work (scalar macro): its heads unread, or no step annotation
-- with its sequence sums around it (annotated: one was found); NULL when it has its work.
CREATE OR REPLACE MACRO serving_attention_why(heads, annotated) AS CASE
    WHEN heads IS NULL THEN 'serving attention: queries or KV not in a form read here'
    WHEN NOT annotated THEN 'serving attention: no step annotation with its sequence lengths '
         || '(vLLM, SGLang: the detailed roofline step annotations)' END;
