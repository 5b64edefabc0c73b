{#
    A view in dbt's scratch database: a projection of the incremental
    intermediate. Publishing stores it in the lake, by dataset
    (partition_key: only the changed datasets on a partial refresh), so its
    rows are copied once, not twice. It reads every dataset; publishing and
    its tests pick the changed ones.
#}
{{ config(
    materialized='view',
    partition_key='dataset_id'
) }}
{#
    One row per outcome: dataset_id x item_id x reader_id x policy_id x
    budget_tokens x metric x seed.
#}
-- Built only after the artifact-identity test on int_panel_cells passes,
-- so a violated panel leaves every mart as it was:
-- depends_on: {{ ref('int_panel_cells') }}
with

outcomes as (

    select * from {{ ref('int_outcomes_unioned') }}

),

final as (

    select
        outcome_id,
        source,
        dataset_id,
        item_id,
        reader_id,
        reader_family,
        policy_id,
        policy_kind,
        budget_tokens,
        metric,
        seed,
        score,
        scorer_version,
        is_binary_metric,
        evidence_hash,
        generation_id,
        answer,
        prompt_tokens,
        evidence_tokens,
        status,
        question_type,
        loaded_at
    from outcomes

)

select * from final
