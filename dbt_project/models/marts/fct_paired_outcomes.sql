{# A view published by dataset, as fct_outcomes (see there). #}
{{ config(
    materialized='view',
    partition_key='dataset_id'
) }}
{# One row per paired outcome: panel_id x reader_id x item_id. #}
-- depends_on: {{ ref('int_panel_cells') }}
with

paired_outcomes as (

    select * from {{ ref('int_outcomes_paired_to_policies') }}

),

final as (

    select
        panel_id,
        panel_name,
        source,
        dataset_id,
        item_id,
        reader_id,
        reader_family,
        metric,
        seed,
        raw_policy_id,
        compressed_policy_id,
        budget_tokens,
        raw_score,
        compressed_score,
        is_binary_metric,
        transition_type,
        source_transition_type,
        raw_evidence_hash,
        compressed_artifact_hash,
        raw_answer,
        compressed_answer,
        raw_prompt_tokens,
        compressed_prompt_tokens,
        question_type
    from paired_outcomes

)

select * from final
