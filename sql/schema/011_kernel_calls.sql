-- Schema v11: the operation call each kernel belongs to. One call of an operation may run several
-- kernels: a GEMM split over K runs the GEMM and a reduction kernel (cuBLASLt's splitKreduce_kernel,
-- hipBLASLt's ..._PostGSU... kernel); comparisons count calls, so that such a helper neither
-- shifts the alignment's pairing nor makes a side's GEMMs look twice as many and half as long.
ALTER TABLE kernel_facts ADD COLUMN call_id BIGINT;

COMMENT ON COLUMN kernel_facts.call_id IS 'kernel_id of the first kernel of the operation call this kernel belongs to: the kernels of one cpu_op call (launched directly, not replayed from a graph) with the same operation; a GEMM helper kernel (gemm_helper) joins the GEMM before it on its stream; else the kernel itself';
