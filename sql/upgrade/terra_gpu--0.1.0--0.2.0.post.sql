-- terra_gpu 0.1.0 -> 0.2.0, after the functions: what needs them.

CREATE EVENT TRIGGER tg_bmmq_source_dropped ON sql_drop
	WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED', 'DROP MATERIALIZED VIEW', 'DROP FOREIGN TABLE')
	EXECUTE FUNCTION terra_gpu.bmmq_source_dropped();

-- The sources of existing indexes get the 0.2.0 stale triggers (one per
-- event, transition tables) in place of 0.1.0's single tg_bmmq_stale.
SELECT terra_gpu._bmmq_watch(s.source, true)
FROM (SELECT DISTINCT source FROM terra_gpu.bmmq_index) s
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = s.source);
