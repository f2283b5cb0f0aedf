-- Settings and the device/diagnostic functions (output independent of the machine)
-- The settings exist once the library is loaded (by LOAD or the first call).
LOAD 'terra_gpu';
SHOW terra_gpu.backend;
SHOW terra_gpu.min_cells_for_gpu;
SHOW terra_gpu.device;
SHOW terra_gpu.max_device_memory_mb;

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

SELECT tg_version() = (SELECT extversion FROM pg_extension WHERE extname = 'terra_gpu') AS version_matches;
