-- Sizes of the element types PyTorch records (collectives' messages, operators' inputs).

-- Bytes of one element of a PyTorch type, as record_param_comms (BFloat16, Float, Long) or an
-- op's Input type (c10::BFloat16, float, long int) names it; NULL for a type it does not know. FP4
-- (Float4_e2m1fn_x2) is packed two to a byte: 1 per packed element.
CREATE OR REPLACE MACRO dtype_bytes(t) AS
    CASE WHEN t IS NULL THEN NULL
         WHEN regexp_matches(lower(t), 'float8|fp8|e4m3|e5m2|float4_|fp4|e2m1|byte|char|bool|uint8|int8|quint8|qint8') THEN 1
         WHEN regexp_matches(lower(t), 'bfloat16|half|float16|short|int16') THEN 2
         WHEN regexp_matches(lower(t), 'double|long|int64|complexfloat') THEN 8
         WHEN regexp_matches(lower(t), 'float|int') THEN 4 END;
