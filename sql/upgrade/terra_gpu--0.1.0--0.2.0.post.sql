-- terra_gpu 0.1.0 -> 0.2.0, after the functions: what needs them.

CREATE EVENT TRIGGER tg_bmmq_source_dropped ON sql_drop
	WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP MATERIALIZED VIEW', 'DROP FOREIGN TABLE')
	EXECUTE FUNCTION terra_gpu.bmmq_source_dropped();

-- The sources of existing indexes get the 0.2.0 stale triggers (one per
-- event, transition tables) in place of 0.1.0's single tg_bmmq_stale.
SELECT terra_gpu._bmmq_watch(s.source, true)
FROM (SELECT DISTINCT source FROM terra_gpu.bmmq_index) s
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source AND c.relkind IN ('r', 'p', 'f'));

-- Row security of the index tables (its functions are created above): a
-- role sees an index if it may read both its columns, and of its tiles and
-- nodes those of source rows it may read.
ALTER TABLE terra_gpu.bmmq_index ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_tile ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_node ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.bmmq_change ENABLE ROW LEVEL SECURITY;
CREATE POLICY bmmq_index_read ON terra_gpu.bmmq_index FOR SELECT
	USING (coalesce(terra_gpu._bmmq_readable(source, rast_column, id_column), pg_catalog.pg_has_role(owner, 'MEMBER')));
CREATE POLICY bmmq_index_insert ON terra_gpu.bmmq_index FOR INSERT
	WITH CHECK (pg_catalog.pg_has_role(owner, 'MEMBER') AND terra_gpu._bmmq_readable(source, rast_column, id_column));
CREATE POLICY bmmq_index_update ON terra_gpu.bmmq_index FOR UPDATE
	USING (pg_catalog.pg_has_role(owner, 'MEMBER')) WITH CHECK (pg_catalog.pg_has_role(owner, 'MEMBER'));
CREATE POLICY bmmq_index_delete ON terra_gpu.bmmq_index FOR DELETE
	USING (pg_catalog.pg_has_role(owner, 'MEMBER'));
CREATE POLICY bmmq_tile_read ON terra_gpu.bmmq_tile FOR SELECT
	USING (terra_gpu._bmmq_tile_visible(index_id, tile_id));
CREATE POLICY bmmq_tile_write ON terra_gpu.bmmq_tile FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
CREATE POLICY bmmq_node_read ON terra_gpu.bmmq_node FOR SELECT
	USING (terra_gpu._bmmq_tile_visible(index_id, tile_id));
CREATE POLICY bmmq_node_write ON terra_gpu.bmmq_node FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
GRANT USAGE ON SCHEMA terra_gpu TO PUBLIC;
CREATE POLICY bmmq_change_owner ON terra_gpu.bmmq_change FOR ALL
	USING (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')))
	WITH CHECK (EXISTS (SELECT 1 FROM terra_gpu.bmmq_index i WHERE i.id = index_id AND pg_catalog.pg_has_role(i.owner, 'MEMBER')));
GRANT SELECT, INSERT, UPDATE, DELETE ON terra_gpu.bmmq_index, terra_gpu.bmmq_tile, terra_gpu.bmmq_node,
	terra_gpu.bmmq_change TO PUBLIC;
GRANT USAGE ON SEQUENCE terra_gpu.bmmq_index_id_seq TO PUBLIC;

-- Products' recipes: row security (its functions are created above) and
-- the event trigger that forgets a dropped product's.
ALTER TABLE terra_gpu.product ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.product_tile ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.product_change ENABLE ROW LEVEL SECURITY;
ALTER TABLE terra_gpu.product_seam ENABLE ROW LEVEL SECURITY;
CREATE POLICY product_read ON terra_gpu.product FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_write ON terra_gpu.product FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
CREATE POLICY product_tile_read ON terra_gpu.product_tile FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_tile_write ON terra_gpu.product_tile FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
CREATE POLICY product_change_read ON terra_gpu.product_change FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_change_write ON terra_gpu.product_change FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
CREATE POLICY product_seam_read ON terra_gpu.product_seam FOR SELECT
	USING (terra_gpu._product_readable(product) OR terra_gpu._product_owned(product));
CREATE POLICY product_seam_write ON terra_gpu.product_seam FOR ALL
	USING (terra_gpu._product_owned(product)) WITH CHECK (terra_gpu._product_owned(product));
GRANT SELECT, INSERT, UPDATE, DELETE ON terra_gpu.product, terra_gpu.product_tile,
	terra_gpu.product_change, terra_gpu.product_seam TO PUBLIC;
CREATE EVENT TRIGGER tg_product_dropped ON sql_drop
	WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP MATERIALIZED VIEW', 'DROP FOREIGN TABLE')
	EXECUTE FUNCTION terra_gpu.product_dropped();
