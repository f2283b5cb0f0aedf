-- Settings and the device/diagnostic functions (output independent of the machine)
-- The settings exist once the library is loaded (by LOAD or the first call).
LOAD 'terra_gpu';
SHOW terra_gpu.backend;
SHOW terra_gpu.min_cells_for_gpu;
SHOW terra_gpu.device;
SHOW terra_gpu.max_device_memory_mb;
SHOW terra_gpu.threads;

-- the backend setting accepts only its three values
SET terra_gpu.backend = 'gpu';
SET terra_gpu.backend = 'CPU';
SHOW terra_gpu.backend;
SET terra_gpu.backend = 'tpu';
RESET terra_gpu.backend;

-- names in the terra_gpu prefix are reserved: a misspelt setting is an error
SET terra_gpu.bakend = 'cpu';

-- tg_gpu_info always answers: either a device or the reason there is none
SELECT available = (reason IS NULL) AS consistent,
       available = (name IS NOT NULL AND compute_capability IS NOT NULL AND total_memory_mb > 0) AS described
FROM tg_gpu_info();

-- tg_last_run reports the backend that ran and the cells it processed
SELECT tg_slope(ST_AddBand(ST_MakeEmptyRaster(20, 10, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 1, NULL), backend => 'cpu') IS NOT NULL;
SELECT function, backend, cells, kernel_ms, transfer_ms, core_ms >= 0 AS timed, chunks FROM tg_last_run();

-- auto keeps inputs under terra_gpu.min_cells_for_gpu on the CPU and says why
SET terra_gpu.backend = 'auto';
SELECT tg_slope(ST_AddBand(ST_MakeEmptyRaster(20, 10, 0, 0, 1, -1, 0, 0, 0), '16BSI'::text, 1, NULL)) IS NOT NULL;
SELECT backend, note FROM tg_last_run();

-- terra_gpu.threads caps the threads of a call (0, the default, is every core); what ran is reported,
-- and the result does not depend on it
SHOW terra_gpu.threads;
SET terra_gpu.threads = -1;
CREATE TEMP TABLE slopes AS
SELECT t, md5(ST_AsBinary(tg_slope(ST_SetValues(ST_AddBand(ST_MakeEmptyRaster(600, 400, 0, 0, 10, -10, 0, 0, 0), '32BF'::text, 0, NULL),
                                                1, 1, 1, (SELECT array_agg(r ORDER BY y) FROM
                                                           (SELECT y, array_agg(sin(x / 17.0) * 50 + y ORDER BY x) AS r
                                                            FROM generate_series(1, 600) x, generate_series(1, 400) y GROUP BY y) rows)),
                                   backend => 'cpu'))) AS digest,
       (tg_last_run()).threads
FROM (SELECT set_config('terra_gpu.threads', t::text, false), t FROM generate_series(1, 3) t) s;
SELECT t, threads, digest = first_value(digest) OVER (ORDER BY t) AS same_as_one_thread FROM slopes ORDER BY t;
RESET terra_gpu.threads;

SELECT tg_version() = (SELECT extversion FROM pg_extension WHERE extname = 'terra_gpu') AS version_matches;
