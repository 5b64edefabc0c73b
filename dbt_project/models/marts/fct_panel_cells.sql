{#
    A view of the incremental int_panel_cells, published by dataset as
    fct_outcomes (see there): its rows are stored once in the scratch and
    once in the lake.
#}
{{ config(
    materialized='view',
    partition_key='dataset_id'
) }}
{# One row per panel_id x reader_id x item_id inside the panel footprint. #}
with

cells as (

    select * from {{ ref('int_panel_cells') }}

),

final as (

    select
        panel_id,
        reader_id,
        reader_family,
        item_id,
        dataset_id,
        metric,
        raw_score,
        compressed_score,
        is_binary_metric,
        transition_type,
        raw_prompt_tokens,
        compressed_prompt_tokens,
        raw_evidence_hash,
        compressed_artifact_hash,
        question_type,
        item_metadata_json
    from cells

)

select * from final
