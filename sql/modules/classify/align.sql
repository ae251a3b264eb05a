-- The operation two traces are compared by, and what a guessed fusion stands for: shared by the
-- load-time derivation (the order of each kernel's operation in its layer) and the comparisons.

-- The operations a fused operation name stands for (scalar macro): 'RMSNorm+GEMM' gives
-- ['RMSNorm', 'Dense GEMM']. Parts named as kernel rules name operations map to themselves; the
-- parts the fusion heuristic writes (GEMM, SwiGLU, SiLU, GELU, ReLU, Norm) map to the operations
-- that run them unfused. A name without '+' gives itself.
CREATE OR REPLACE MACRO fused_part_ops(fused) AS
flatten(list_transform(string_split(fused, '+'), lambda part:
    CASE trim(part)
        WHEN 'GEMM' THEN ['Dense GEMM']
        WHEN 'SwiGLU' THEN ['Activation']
        WHEN 'SiLU' THEN ['Activation']
        WHEN 'GELU' THEN ['Activation']
        WHEN 'ReLU' THEN ['Activation']
        WHEN 'Norm' THEN ['RMSNorm', 'LayerNorm', 'Normalization']
        ELSE [trim(part)]
    END));

-- The operation two traces are compared by (scalar macro): the kernel's operation, or for a
-- 'Fused (Unknown)' kernel the parts it was guessed to hold (its pattern, e.g. 'RMSNorm+GEMM').
CREATE OR REPLACE MACRO align_op(op, pattern) AS CASE WHEN op = 'Fused (Unknown)' THEN pattern ELSE op END;
