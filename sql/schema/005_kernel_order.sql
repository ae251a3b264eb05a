-- Schema v5: two more derived facts per kernel, for comparing traces without re-sorting them:
-- the place of a kernel among its layer's kernels of the same operation (the alignment's pairing
-- key) and the operation of the kernel before it (the fusion analysis's sequence patterns).
ALTER TABLE kernel_facts ADD COLUMN occurrence INTEGER;

ALTER TABLE kernel_facts ADD COLUMN prev_op VARCHAR;

COMMENT ON COLUMN kernel_facts.occurrence IS '0-based occurrence of the kernel''s operation within its layer (a fused kernel counting for each operation it holds); NULL outside layers';

COMMENT ON COLUMN kernel_facts.prev_op IS 'operation of the kernel started just before this one in the trace (start order; a Fused (Unknown) kernel by its parts); NULL for the first';
