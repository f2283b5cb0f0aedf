-- terra_gpu 0.1.0 -> 0.2.0, catalog changes: run before the functions are
-- replaced (tools/gen_upgrade.py puts this file first in the upgrade script).

-- BMMQ indexes have owners; those built before 0.2.0 belong to the role that
-- upgrades (only superusers could use them: terra_gpu had no USAGE for PUBLIC).
ALTER TABLE terra_gpu.bmmq_index ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole;
COMMENT ON TABLE terra_gpu.bmmq_index IS
'One row per BMMQ-tree index (tg_bmmq_build): its source coverage, bin boundaries, state (stale once the source changed) and owner (the role that built it)';

-- The role that may run the protocol between servers (granted on the
-- functions below).
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'terra_gpu_parts') THEN
		CREATE ROLE terra_gpu_parts NOLOGIN;
	END IF;
END $$;
