-- Facts about a Chrome trace derived once its events and metadata are in, inside the load's
-- transaction, with the parameter $trace_id: its devices, platform and device name.

INSERT INTO devices
SELECT $trace_id,
       TRY_CAST(d->>'id' AS BIGINT),
       nullif(d->>'name', ''),
       TRY_CAST(d->>'totalGlobalMem' AS BIGINT),
       TRY_CAST(d->>'computeMajor' AS INTEGER),
       TRY_CAST(d->>'computeMinor' AS INTEGER),
       TRY_CAST(d->>'numSms' AS INTEGER),
       TRY_CAST(d->>'warpSize' AS INTEGER),
       TRY_CAST(d->>'maxThreadsPerBlock' AS INTEGER),
       TRY_CAST(d->>'maxThreadsPerMultiprocessor' AS INTEGER),
       TRY_CAST(d->>'regsPerBlock' AS INTEGER),
       TRY_CAST(d->>'regsPerMultiprocessor' AS INTEGER),
       TRY_CAST(d->>'sharedMemPerBlock' AS BIGINT),
       TRY_CAST(d->>'sharedMemPerMultiprocessor' AS BIGINT),
       d
FROM (
    SELECT unnest(json_extract(value, '$[*]')) AS d
    FROM trace_metadata
    WHERE trace_id = $trace_id AND key = 'deviceProperties' AND json_type(value) = 'ARRAY'
);

-- Platform: the runtime the profiler recorded (roctracer/HIP versions, hip* calls or a warp size of
-- 64 mean AMD; CUPTI/CUDA versions, cuda*/cu* calls mean NVIDIA; mtia_runtime calls or an MTIA
-- device mean MTIA; xpu_runtime/xpu_driver calls or an Intel device mean Intel); CPU when there is
-- no device activity.
UPDATE traces SET
    platform = CASE
        WHEN EXISTS (SELECT 1 FROM trace_metadata m WHERE m.trace_id = $trace_id
                     AND m.key IN ('roctracer_version', 'hip_runtime_version', 'hip_driver_version'))
          OR EXISTS (SELECT 1 FROM devices d WHERE d.trace_id = $trace_id
                     AND (d.warp_size = 64 OR d.name ILIKE '%AMD%' OR d.name ILIKE '%Instinct%' OR d.name ILIKE '%Radeon%'))
          OR EXISTS (SELECT 1 FROM runtime_calls r WHERE r.trace_id = $trace_id AND r.name LIKE 'hip%')
            THEN 'AMD'
        WHEN EXISTS (SELECT 1 FROM trace_metadata m WHERE m.trace_id = $trace_id
                     AND m.key IN ('cupti_version', 'cuda_runtime_version', 'cuda_driver_version'))
          OR EXISTS (SELECT 1 FROM devices d WHERE d.trace_id = $trace_id AND d.name ILIKE '%NVIDIA%')
          OR EXISTS (SELECT 1 FROM runtime_calls r WHERE r.trace_id = $trace_id
                     AND (r.name LIKE 'cuda%' OR r.name LIKE 'cu%'))
            THEN 'NVIDIA'
        WHEN EXISTS (SELECT 1 FROM runtime_calls r WHERE r.trace_id = $trace_id AND r.cat = 'mtia_runtime')
          OR EXISTS (SELECT 1 FROM devices d WHERE d.trace_id = $trace_id AND d.name ILIKE '%MTIA%')
            THEN 'MTIA'
        WHEN EXISTS (SELECT 1 FROM runtime_calls r WHERE r.trace_id = $trace_id AND r.cat IN ('xpu_runtime', 'xpu_driver'))
          OR EXISTS (SELECT 1 FROM devices d WHERE d.trace_id = $trace_id AND d.name ILIKE '%Intel%')
            THEN 'Intel'
        WHEN NOT EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = $trace_id)
         AND NOT EXISTS (SELECT 1 FROM memory_ops o WHERE o.trace_id = $trace_id)
            THEN 'CPU'
        ELSE 'unknown'
    END,
    device_name = (SELECT d.name FROM devices d WHERE d.trace_id = $trace_id AND d.name IS NOT NULL
                   ORDER BY d.device NULLS LAST LIMIT 1)
WHERE trace_id = $trace_id;
