-- Schema v10: steps found from the model's Python frames. A trace recorded without step
-- annotations still holds the frames that bound each model step (vLLM's execute_model, SGLang's
-- ModelRunner.forward_extend / forward_decode, the model class's forward); the patterns below say
-- which frames those are. Each kernel's stored facts say how its phase was decided.

-- Step frame patterns: which Python frames bound one model step. A trace without step annotations
-- takes as its steps the outermost frames on each thread that match a pattern. User rows are tried
-- before built-in ones; within a source, lower priority numbers first.
-- Columns:
--   source     'builtin' or the name of the user's file
--   priority   order of trial (lower first)
--   framework  who writes the frame: vllm, sglang, hf, any ...
--   regex      RE2 expression matched against the frame name ("path/file.py(line): function")
--   phase      fixed phase of a step bounded by (or holding) such a frame: prefill, decode, mixed or
--              none; NULL when the step's phase is told from what it processed
CREATE TABLE step_frame_patterns (
    source    VARCHAR NOT NULL,
    priority  INTEGER NOT NULL,
    framework VARCHAR NOT NULL,
    regex     VARCHAR NOT NULL,
    phase     VARCHAR
);

ALTER TABLE kernel_facts ADD COLUMN phase_source VARCHAR;

COMMENT ON COLUMN kernel_facts.phase_source IS 'how the phase was decided: annotation, frame (a step frame that names its phase), tokens (Input Dims of the step''s GEMMs), graph replay; NULL when nothing decided it (phase none)';
