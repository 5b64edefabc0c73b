{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='dataset_id',
    on_schema_change='fail'
) }}
{#
    One row per outcome: dataset_id x item_id x reader_id x policy_id x
    budget_tokens x metric x seed, from scored generations (status ok or
    empty; errors are never outcomes) and from the released matrix.

    When a generation key was answered more than once (a rerun), the latest
    generation (created_at, then generation_id) is the outcome.

    A table, not a view like the rest of the folder: fct_outcomes and the
    pairing both read it, so the full matrix is unioned once per build.
    Incremental by dataset (macros/dataset_partitions.sql): `ragledger build`
    re-unions only the datasets whose raw rows changed.
#}
with

generations as (

    select
        generation_id,
        dataset_id,
        item_id,
        reader_id,
        policy_id,
        budget_tokens,
        seed,
        evidence_hash,
        answer,
        prompt_tokens,
        generation_status,
        created_at
    from {{ changed_rows(ref('stg_ragledger__generations')) }}
    where generation_status in ('ok', 'empty')

),

scores as (

    select
        generation_id,
        metric,
        score,
        scorer_version
    from {{ ref('stg_ragledger__scores') }}
    where score_status = 'ok' and score is not null

),

policies as (

    select
        policy_id,
        policy_kind
    from {{ ref('stg_ragledger__policies') }}

),

matrix_rows as (

    select
        dataset_id,
        item_id,
        reader_id,
        policy_id,
        budget_tokens,
        metric,
        seed,
        score,
        answer,
        evidence_tokens,
        question_type,
        source_transition_type,
        matrix_release
    from {{ changed_rows(ref('stg_matrix__rows')) }}

),

matrix_releases as (

    select
        matrix_release,
        loaded_at
    from {{ ref('stg_matrix__releases') }}

),

matrix_policies as (

    select
        dataset_id,
        policy_id,
        policy_kind
    from {{ ref('int_matrix_policies_classified') }}

),

readers as (

    select
        reader_id,
        reader_family
    from {{ ref('int_readers_resolved_to_families') }}

),

items as (

    select
        dataset_id,
        item_id,
        question_type,
        item_metadata_json
    from {{ changed_rows(ref('stg_benchmarks__items')) }}

),

generation_outcomes as (

    select
        'generation' as source,
        generations.dataset_id,
        generations.item_id,
        generations.reader_id,
        generations.policy_id,
        policies.policy_kind,
        generations.budget_tokens,
        scores.metric,
        generations.seed,
        scores.score,
        scores.scorer_version,
        generations.evidence_hash,
        generations.generation_id,
        generations.answer,
        generations.prompt_tokens,
        cast(null as double) as evidence_tokens,
        generations.generation_status as status,
        cast(null as varchar) as source_question_type,
        cast(null as varchar) as source_transition_type,
        generations.created_at as loaded_at
    from generations
    inner join scores
        on generations.generation_id = scores.generation_id
    left join policies
        on generations.policy_id = policies.policy_id
    qualify row_number() over (
        partition by
            generations.dataset_id,
            generations.item_id,
            generations.reader_id,
            generations.policy_id,
            generations.budget_tokens,
            scores.metric,
            generations.seed
        order by generations.created_at desc, generations.generation_id desc
    ) = 1

),

matrix_outcomes as (

    select
        'matrix' as source,
        matrix_rows.dataset_id,
        matrix_rows.item_id,
        matrix_rows.reader_id,
        matrix_rows.policy_id,
        matrix_policies.policy_kind,
        matrix_rows.budget_tokens,
        matrix_rows.metric,
        matrix_rows.seed,
        matrix_rows.score,
        'released-matrix:correct' as scorer_version,
        cast(null as varchar) as evidence_hash,
        cast(null as varchar) as generation_id,
        matrix_rows.answer,
        cast(null as integer) as prompt_tokens,
        matrix_rows.evidence_tokens,
        'ok' as status,
        matrix_rows.question_type as source_question_type,
        matrix_rows.source_transition_type,
        matrix_releases.loaded_at
    from matrix_rows
    inner join matrix_policies
        on {{ join_on_columns(
            'matrix_rows', 'matrix_policies', ['dataset_id', 'policy_id']
        ) }}
    left join matrix_releases
        on matrix_rows.matrix_release = matrix_releases.matrix_release

),

outcomes_unioned as (

    select * from generation_outcomes
    union all
    select * from matrix_outcomes

),

outcomes_joined_to_readers_and_items as (

    select
        outcomes_unioned.*,
        coalesce(readers.reader_family, outcomes_unioned.reader_id)
            as reader_family,
        coalesce(items.question_type, outcomes_unioned.source_question_type)
            as question_type,
        coalesce(items.item_metadata_json, '{}') as item_metadata_json
    from outcomes_unioned
    left join readers
        on outcomes_unioned.reader_id = readers.reader_id
    left join items
        on {{ join_on_columns(
            'outcomes_unioned', 'items', ['dataset_id', 'item_id']
        ) }}

),

binary_metrics as (

    -- a metric is binary in a dataset when all of its scores there are 0/1
    -- (an aggregate joined back: a window over these wide rows sorts them all)
    select
        dataset_id,
        metric,
        bool_and(score in (0, 1)) as is_binary_metric
    from outcomes_joined_to_readers_and_items
    group by dataset_id, metric

),

outcomes_keyed as (

    select
        {{ hash_key([
            'outcomes.dataset_id',
            'outcomes.item_id',
            'outcomes.reader_id',
            'outcomes.policy_id',
            'outcomes.budget_tokens',
            'outcomes.metric',
            'outcomes.seed'
        ]) }} as outcome_id,
        outcomes.source,
        outcomes.dataset_id,
        outcomes.item_id,
        outcomes.reader_id,
        outcomes.reader_family,
        outcomes.policy_id,
        outcomes.policy_kind,
        outcomes.budget_tokens,
        outcomes.metric,
        outcomes.seed,
        outcomes.score,
        outcomes.scorer_version,
        binary_metrics.is_binary_metric,
        outcomes.evidence_hash,
        outcomes.generation_id,
        outcomes.answer,
        outcomes.prompt_tokens,
        outcomes.evidence_tokens,
        outcomes.status,
        outcomes.question_type,
        outcomes.item_metadata_json,
        outcomes.source_transition_type,
        outcomes.loaded_at
    from outcomes_joined_to_readers_and_items as outcomes
    left join binary_metrics
        on
            outcomes.dataset_id is not distinct from binary_metrics.dataset_id
            and outcomes.metric is not distinct from binary_metrics.metric

)

select * from outcomes_keyed
