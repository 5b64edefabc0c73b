{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='panel_id',
    on_schema_change='fail'
) }}
{#
    One row per panel_id x item_id in the panel footprint, with what its
    readers received: a hash column holds the hash only when every reader of
    the row received that same one hash, else null.
#}
with

panel_cells as (

    select
        panel_id,
        item_id,
        compressed_artifact_hash,
        raw_evidence_hash,
        question_type
    from {{ changed_rows(ref('fct_panel_cells')) }}

),

rows_aggregated as (

    select
        panel_id,
        item_id,
        count(*) as reader_count,
        count(distinct compressed_artifact_hash) as distinct_artifact_hash_count,
        count(*) - count(compressed_artifact_hash) as unhashed_cell_count,
        min(compressed_artifact_hash) as first_artifact_hash,
        count(distinct raw_evidence_hash) as distinct_raw_evidence_hash_count,
        count(*) - count(raw_evidence_hash) as raw_unhashed_cell_count,
        min(raw_evidence_hash) as first_raw_evidence_hash,
        min(question_type) as question_type
    from panel_cells
    group by panel_id, item_id

),

final as (

    select
        panel_id,
        item_id,
        case
            when distinct_artifact_hash_count = 1 and unhashed_cell_count = 0
                then first_artifact_hash
        end as compressed_artifact_hash,
        case
            when
                distinct_raw_evidence_hash_count = 1
                and raw_unhashed_cell_count = 0
                then first_raw_evidence_hash
        end as raw_evidence_hash,
        case
            when distinct_artifact_hash_count = 1 and unhashed_cell_count = 0
                then 'identical'
            when distinct_artifact_hash_count = 0 then 'unhashed'
            else 'mismatched'
        end as artifact_identity,
        question_type,
        reader_count,
        distinct_artifact_hash_count,
        unhashed_cell_count,
        distinct_raw_evidence_hash_count
    from rows_aggregated

)

select * from final
