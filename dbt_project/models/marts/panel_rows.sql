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
    from {{ ref('panel_cells') }}

),

rows_aggregated as (

    select
        panel_id,
        item_id,
        count(*) as reader_count,
        count(distinct compressed_artifact_hash) as distinct_artifact_hashes,
        count(*) - count(compressed_artifact_hash) as cells_without_artifact_hash,
        any_value(compressed_artifact_hash) as any_artifact_hash,
        count(distinct raw_evidence_hash) as distinct_raw_evidence_hashes,
        count(*) - count(raw_evidence_hash) as cells_without_raw_evidence_hash,
        any_value(raw_evidence_hash) as any_raw_evidence_hash,
        any_value(question_type) as question_type
    from panel_cells
    group by panel_id, item_id

),

final as (

    select
        panel_id,
        item_id,
        case
            when distinct_artifact_hashes = 1 and cells_without_artifact_hash = 0
                then any_artifact_hash
        end as compressed_artifact_hash,
        distinct_artifact_hashes,
        cells_without_artifact_hash,
        case
            when distinct_artifact_hashes = 1 and cells_without_artifact_hash = 0
                then 'identical'
            when distinct_artifact_hashes = 0 then 'unhashed'
            else 'mismatched'
        end as artifact_identity,
        case
            when
                distinct_raw_evidence_hashes = 1
                and cells_without_raw_evidence_hash = 0
                then any_raw_evidence_hash
        end as raw_evidence_hash,
        distinct_raw_evidence_hashes,
        question_type,
        reader_count
    from rows_aggregated

)

select * from final
