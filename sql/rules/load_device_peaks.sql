-- Loads a device peaks CSV ($path) into device_peaks as source $source, replacing that source.
-- CSV header: priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference

DELETE FROM device_peaks WHERE source = $source;

INSERT INTO device_peaks
SELECT $source, priority, regex, device, fp32, tf32, bf16, fp16, fp8, mem_tbps, nullif(reference, '')
FROM read_csv($path, header = true, auto_detect = false, quote = '"', escape = '"',
              columns = {'priority': 'INTEGER', 'regex': 'VARCHAR', 'device': 'VARCHAR', 'fp32': 'DOUBLE',
                         'tf32': 'DOUBLE', 'bf16': 'DOUBLE', 'fp16': 'DOUBLE', 'fp8': 'DOUBLE',
                         'mem_tbps': 'DOUBLE', 'reference': 'VARCHAR'});
