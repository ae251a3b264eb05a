-- Schema v4: kernel rules gain the match kind 'fusion' (the seed's fusion heuristic as an ordered
-- rule, see kernel_name_ops); only the documentation of kernel_rules.match changes.
COMMENT ON COLUMN kernel_rules.match IS 'prefix, contains (both case-insensitive), regex (RE2, case-sensitive unless (?i)) or fusion (the name contains the pattern and names two or more operations by keyword; labelled with them joined by +)';
