-- Schema v9: classification by the launching context. A kernel rule may match what a kernel was
-- launched for instead of its name (match cpu_op, collective or annotation); it refines the
-- kernels the name rules put in the family it covers (a generic RCCL kernel, Communication by its
-- name, is an All-Reduce when launched for an allreduce). A rule of match inductor reads the
-- operations an Inductor kernel's name lists. Each kernel's stored facts say what decided its
-- operation.
ALTER TABLE kernel_rules ADD COLUMN covers VARCHAR;

ALTER TABLE kernel_facts ADD COLUMN decided_by VARCHAR;

COMMENT ON COLUMN kernel_rules.match IS 'name rules: prefix, contains (both case-insensitive), regex (RE2) or fusion on the kernel name, inductor (RE2 on the operations an Inductor kernel name lists); context rules: cpu_op (RE2 on the launching cpu_op), collective (RE2 on the Collective name of the launching record_param_comms), annotation (RE2 on an annotation enclosing the kernel or its launch)';

COMMENT ON COLUMN kernel_rules.pattern IS 'the text or RE2 expression matched (against the kernel name, the Inductor operation list, or the context the match names)';

COMMENT ON COLUMN kernel_rules.covers IS 'context rules: the operation family given by the name rules that the rule refines (* for every kernel); NULL for name rules';

COMMENT ON COLUMN kernel_facts.decided_by IS 'what gave the operation: cpu_op, collective or annotation (a context rule), inductor (the operations an Inductor name lists), name (a name rule), fusion (the fused-name heuristic), none (no rule: Other)';
