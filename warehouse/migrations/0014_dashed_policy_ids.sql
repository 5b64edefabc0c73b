-- Issue 21 (one policy id style): the selectors CoRA-Bench spells with
-- underscores are registered under dashed names, the style of ragscale's ids
-- (hotpotqa-distractor-10): head_tail -> head-tail, dense_rerank ->
-- dense-rerank, lm_filter -> lm-filter, lm_filter_threshold ->
-- lm-filter-threshold (generation/policies.py; the old spellings stay accepted
-- as input). This renames the stored ids `<old>@v<N>` -> `<new>@v<N>` in every
-- raw table that holds a policy id, and raw.policies.name.
--
-- Renamed: the id of a raw.policies row the registry wrote (kind selector,
-- name one of the four, policy_id = name@v<version>, config "policy" = name)
-- whose dashed id is not registered yet, in raw.artifact_compilations,
-- raw.artifact_evidence, raw.generations, raw.policy_pools and, last (the
-- others find the ids through it), raw.policies. The selection is a temp
-- view (this connection only: a view in the lake's raw schema, created in the
-- transaction that creates a new lake, lost raw.schema_migrations).
-- Applied again, it finds nothing to rename. Left as they are: config_json and
-- config_hash (a config keeps hashing its old name, so every artifact,
-- generation and shared key stays valid and nothing is recomputed);
-- raw.runs (the commands as they were typed); raw.matrix_rows (the released
-- file's own method labels); analysis.* (audits as they were written).
--
-- Panel and outcome ids are md5s of keys that hold policy ids
-- (dbt_project/models/intermediate/panels): the next `ragledger build` gives a
-- panel with a renamed policy a new panel_id (and a dashed panel_name). Audits
-- stored before keep the old panel_id and name in analysis.*; audit again to
-- have them under the new ones. Every other panel keeps its id.
--
-- Runs with the other pending migrations in one transaction (one lake
-- snapshot): all of it or none. A 0.1 file copied by `ragledger migrate`
-- arrives after the new lake ran this on empty tables, so migrate runs it
-- again on the file's exported tables (warehouse.maintenance.DATA_MIGRATIONS).

create temp view renamed_policy_ids as
select policy_id from raw.policies
where kind = 'selector'
  and name in ('head_tail', 'dense_rerank', 'lm_filter', 'lm_filter_threshold')
  and policy_id = name || '@v' || cast(version as varchar)
  and json_extract_string(config_json, '$.policy') = name
  and replace(policy_id, '_', '-') not in (select policy_id from raw.policies);

update raw.artifact_compilations set policy_id = replace(policy_id, '_', '-')
where policy_id in (select policy_id from renamed_policy_ids);

update raw.artifact_evidence set policy_id = replace(policy_id, '_', '-')
where policy_id in (select policy_id from renamed_policy_ids);

update raw.generations set policy_id = replace(policy_id, '_', '-')
where policy_id in (select policy_id from renamed_policy_ids);

update raw.policy_pools set policy_id = replace(policy_id, '_', '-')
where policy_id in (select policy_id from renamed_policy_ids);

-- last: the updates above found their ids through these rows
update raw.policies
set policy_id = replace(policy_id, '_', '-'), name = replace(name, '_', '-')
where policy_id in (select policy_id from renamed_policy_ids);

drop view renamed_policy_ids;
