-- Report: host-frames
-- Where each host spends its steps: time per step in each Python frame of two traces side by side,
-- frames matched by file and function, two functions of one name in one file told apart by their
-- order in it ('llama.py: forward #1', '#2': the line where each starts orders them; the line itself
-- differs between two builds of a library), also those one side never enters. A frame's time counts its callees. Largest difference first: the frame where
-- one host spends the time the other does not is the one to read.
-- Alone: the trace's own host time per frame and step
-- Shared: step_windows, device_activity  read by the frames' step windows, three times each
-- Example: tracedb report host-frames --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id; NULL: trace A alone)
--   phase = NULL   only the steps of this phase: prefill, decode, mixed or none (NULL: every step)
--   limit = 40     frames shown, largest difference first
-- Columns:
--   frame        text             file: function (#N: the Nth of that name in the file)
--   a_step_ns    duration         A's time in the frame per step (callees included)
--   b_step_ns    duration         B's time per step
--   gap_step_ns  duration         a_step_ns - b_step_ns
--   a_calls      count     wide   A's calls per step
--   b_calls      count     wide   B's calls per step
--   a_name       text      wide   the frame as A records it, with its line (empty: A never enters it)
--   b_name       text      wide   the frame as B records it
SELECT frame, a_step_ns, b_step_ns, gap_step_ns, a_calls, b_calls, a_name, b_name
FROM host_frames($trace, $vs, $phase)
ORDER BY abs(gap_step_ns) DESC, greatest(a_step_ns, b_step_ns) DESC, frame
LIMIT $limit;
