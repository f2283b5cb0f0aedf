-- terra_gpu 0.1.0 -> 0.2.0, catalog changes: run before the functions are
-- replaced (tools/gen_upgrade.py puts this file first in the upgrade script).

-- BMMQ indexes have owners; those built before 0.2.0 belong to the role that
-- upgrades (only superusers could use them: terra_gpu had no USAGE for PUBLIC).
ALTER TABLE terra_gpu.bmmq_index ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole;
COMMENT ON TABLE terra_gpu.bmmq_index IS
'One row per BMMQ-tree index (tg_bmmq_build): its source coverage, bin boundaries, state (stale once the source changed) and owner (the role that built it)';

ALTER TABLE terra_gpu.bmmq_index ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_tile ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_node ENABLE ROW LEVEL SECURITY;
CREATE POLICY bmmq_index_read ON terra_gpu.bmmq_index FOR SELECT
	USING (coalesce(pg_catalog.has_table_privilege(source, 'SELECT'), pg_catalog.pg_has_role(owner, 'MEMBER')));
CREATE POLICY bmmq_index_insert ON terra_gpu.bmmq_index FOR INSERT
	WITH CHECK (pg_catalog.pg_has_role(owner, 'MEMBER') AND pg_catalog.has_table_privilege(source, 'SELECT'));
CREATE POLICY bmmq_index_update ON terra_gpu.bmmq_index FOR UPDATE
	USING (pg_catalog.pg_has_role(owner, 'MEMBER')) WITH CHECK (pg_catalog.pg_has_role(owner, 'MEMBER'));
CREATE POLICY bmmq_index_delete ON terra_gpu.bmmq_index FOR DELETE
	USING (pg_catalog.pg_has_role(owner, 'MEMBER'));
CREATE POLICY bmmq_tile_read ON terra_gpu.bmmq_tile FOR SELECT
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id));
CREATE POLICY bmmq_tile_write ON terra_gpu.bmmq_tile FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
CREATE POLICY bmmq_node_read ON terra_gpu.bmmq_node FOR SELECT
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id));
CREATE POLICY bmmq_node_write ON terra_gpu.bmmq_node FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
GRANT USAGE ON SCHEMA terra_gpu TO PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON terra_gpu.bmmq_index, terra_gpu.bmmq_tile, terra_gpu.bmmq_node TO PUBLIC;
GRANT USAGE ON SEQUENCE terra_gpu.bmmq_index_id_seq TO PUBLIC;
