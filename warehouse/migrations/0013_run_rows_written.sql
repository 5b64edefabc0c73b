-- Issue 20 item 5: every job records its run (init, ingest, build, audit, ...)
-- with the rows it wrote to the lake; `ragledger runs` shows them.

alter table raw.runs add column rows_written bigint;
