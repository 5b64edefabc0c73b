{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='dataset_id',
    on_schema_change='fail'
) }}
{#
    One row per paired outcome: a raw-policy outcome (budget 0) and a
    non-raw-policy outcome for the same dataset, item, reader, metric and
    seed; every raw policy x every non-raw policy of the dataset. The panel
    key is dataset x metric x raw policy x compressed policy x budget x seed,
    so the grain is panel_id x reader_id x item_id.

    A table, not a view like the rest of the folder: the footprint, its
    tests and the marts all read it, so the matrix is paired once per build.
#}
with

outcomes as (

    select * from {{ changed_rows(ref('int_outcomes_unioned')) }}

),

raw_outcomes as (

    select *
    from outcomes
    where policy_kind = 'raw' and budget_tokens = 0

),

compressed_outcomes as (

    select *
    from outcomes
    where policy_kind <> 'raw'

),

outcomes_paired as (

    select
        compressed_outcomes.source,
        compressed_outcomes.dataset_id,
        compressed_outcomes.item_id,
        compressed_outcomes.reader_id,
        compressed_outcomes.reader_family,
        compressed_outcomes.metric,
        compressed_outcomes.seed,
        raw_outcomes.policy_id as raw_policy_id,
        compressed_outcomes.policy_id as compressed_policy_id,
        compressed_outcomes.budget_tokens,
        raw_outcomes.score as raw_score,
        compressed_outcomes.score as compressed_score,
        raw_outcomes.scorer_version as raw_scorer_version,
        compressed_outcomes.scorer_version as compressed_scorer_version,
        compressed_outcomes.is_binary_metric,
        raw_outcomes.evidence_hash as raw_evidence_hash,
        compressed_outcomes.evidence_hash as compressed_artifact_hash,
        raw_outcomes.answer as raw_answer,
        compressed_outcomes.answer as compressed_answer,
        raw_outcomes.prompt_tokens as raw_prompt_tokens,
        compressed_outcomes.prompt_tokens as compressed_prompt_tokens,
        compressed_outcomes.question_type,
        compressed_outcomes.item_metadata_json,
        compressed_outcomes.source_transition_type
    from raw_outcomes
    inner join compressed_outcomes
        on {{ join_on_columns(
            'raw_outcomes',
            'compressed_outcomes',
            ['dataset_id', 'item_id', 'reader_id', 'metric', 'seed']
        ) }}

),

pairs_labelled as (

    select
        {{ hash_key([
            'dataset_id',
            'metric',
            'raw_policy_id',
            'compressed_policy_id',
            'budget_tokens',
            'seed'
        ], length=16) }} as panel_id,
        dataset_id || ' | ' || metric || ' | ' || raw_policy_id || ' -> '
        || compressed_policy_id
        || case when budget_tokens > 0 then ' @' || budget_tokens else '' end
        || case when seed <> 0 then ' #' || seed else '' end as panel_name,
        *,
        case
            when not is_binary_metric then null
            when raw_score = 0 and compressed_score = 1 then 'rescued'
            when raw_score = 1 and compressed_score = 0 then 'damaged'
            when raw_score = 1 and compressed_score = 1 then 'unchanged_correct'
            else 'unchanged_wrong'
        end as transition_type
    from outcomes_paired

)

select * from pairs_labelled
