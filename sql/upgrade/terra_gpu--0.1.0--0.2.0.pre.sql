-- terra_gpu 0.1.0 -> 0.2.0, catalog changes: run before the functions are
-- replaced (tools/gen_upgrade.py puts this file first in the upgrade script).

-- BMMQ indexes have owners; those built before 0.2.0 belong to the role that
-- upgrades (only superusers could use them: terra_gpu had no USAGE for PUBLIC).
ALTER TABLE terra_gpu.bmmq_index ADD COLUMN owner regrole NOT NULL DEFAULT quote_ident(current_user)::regrole;
-- Their changes were not recorded: the first tg_bmmq_refresh rebuilds them
-- whole, the next ones only the tiles written.
ALTER TABLE terra_gpu.bmmq_index ADD COLUMN changes_recorded boolean NOT NULL DEFAULT false;
COMMENT ON TABLE terra_gpu.bmmq_index IS
'One row per BMMQ-tree index (tg_bmmq_build): its source coverage, bin boundaries, state (stale once the source changed), owner (the role that built it) and whether terra_gpu.bmmq_change holds every tile written since it was built (tg_bmmq_refresh then rebuilds only those)';
CREATE TABLE terra_gpu.bmmq_change (
	index_id bigint NOT NULL REFERENCES terra_gpu.bmmq_index (id) ON DELETE CASCADE,
	tile_id bigint NOT NULL,
	PRIMARY KEY (index_id, tile_id));
COMMENT ON TABLE terra_gpu.bmmq_change IS
'The source tiles written (inserted, updated, deleted) since an index was last built or refreshed, recorded by the source''s statement triggers';
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.bmmq_change', '');

-- The role that may run the protocol between servers (granted on the
-- functions below).
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'terra_gpu_parts') THEN
		CREATE ROLE terra_gpu_parts NOLOGIN;
	END IF;
END $$;

-- Products that know their recipe (tg_refresh): its catalog.
CREATE TABLE terra_gpu.product (
	product regclass PRIMARY KEY,
	source regclass NOT NULL,
	rast_column name NOT NULL,
	id_column name NOT NULL,
	function text NOT NULL,
	halo integer CHECK (halo >= 0),
	reach bigint[],
	query text NOT NULL,
	search_path text NOT NULL,
	compression text NOT NULL,
	source_name text NOT NULL,
	captured boolean NOT NULL,
	retiled boolean NOT NULL DEFAULT false,
	refreshed_at timestamptz NOT NULL DEFAULT pg_catalog.now());
COMMENT ON TABLE terra_gpu.product IS
'One row per product of tg_create_result that tg_refresh can bring up to date: its source table and columns, the coverage function and its halo in cells (NULL: a global operation), the source tiles a change must touch to change the product where it reads only some (reach: a viewshed within max_distance, the tiles its observers'' windows cross; NULL: any tile), the query and search_path it was written with and the source''s name in it, its storage; captured: the source''s triggers record its changed tiles (its creator owned it); retiled: the source was truncated since';

CREATE TABLE terra_gpu.product_tile (
	product regclass NOT NULL,
	tile_id bigint NOT NULL,
	upperleft_x double precision NOT NULL,
	upperleft_y double precision NOT NULL,
	width integer NOT NULL,
	height integer NOT NULL,
	scale_x double precision NOT NULL,
	scale_y double precision NOT NULL,
	skew_x double precision NOT NULL,
	skew_y double precision NOT NULL,
	srid integer NOT NULL,
	digest bytea,
	PRIMARY KEY (product, tile_id));
COMMENT ON TABLE terra_gpu.product_tile IS
'The georeference of each source tile a product was computed from (a changed one makes its refresh a full recompute), and the digest of the product''s row for it (terra_gpu._row_digest; NULL: not known), which a refresh compares instead of the stored row';

CREATE TABLE terra_gpu.product_change (
	product regclass NOT NULL,
	tile_id bigint NOT NULL,
	PRIMARY KEY (product, tile_id));
COMMENT ON TABLE terra_gpu.product_change IS
'The source tiles written (inserted, updated, deleted) since a product''s last refresh, recorded by the source''s statement triggers';

CREATE TABLE terra_gpu.product_seam (
	product regclass NOT NULL,
	band integer NOT NULL,
	step integer NOT NULL,
	phase text NOT NULL,
	round integer NOT NULL,
	digest bytea NOT NULL,
	reply bytea NOT NULL,
	PRIMARY KEY (product, band, step));
COMMENT ON TABLE terra_gpu.product_seam IS
'What a global product''s refresh in bands kept of each band (a row of source tiles, numbered from the top) at each step of the coordinator: the digest of every message the band received up to that step (SHA-256 chained) and its reply, packed.  A refresh hands the coordinator the kept reply of a band whose tiles did not change and whose messages are the same';

SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product', '');
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product_tile', '');
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product_change', '');
SELECT pg_catalog.pg_extension_config_dump('terra_gpu.product_seam', '');
