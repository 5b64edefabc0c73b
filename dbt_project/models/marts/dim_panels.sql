{#
    One row per panel: dataset_id x metric x raw_policy_id x
    compressed_policy_id x budget_tokens x seed, with its exact footprint
    (readers, families, rows) and its artifact-identity verdict.
#}
with

panel_cells as (

    select
        panel_id,
        panel_name,
        source,
        dataset_id,
        metric,
        raw_policy_id,
        compressed_policy_id,
        budget_tokens,
        seed,
        reader_id,
        reader_family,
        item_id,
        is_binary_metric,
        compressed_artifact_hash
    from {{ ref('int_panel_cells') }}

),

panel_rows as (

    select panel_id, item_id, artifact_identity
    from {{ ref('panel_rows') }}

),

panels_aggregated as (

    select
        panel_id,
        any_value(panel_name) as panel_name,
        any_value(source) as source,
        any_value(dataset_id) as dataset_id,
        any_value(metric) as metric,
        any_value(raw_policy_id) as raw_policy_id,
        any_value(compressed_policy_id) as compressed_policy_id,
        any_value(budget_tokens) as budget_tokens,
        any_value(seed) as seed,
        count(distinct reader_id) as reader_count,
        count(distinct reader_family) as family_count,
        count(distinct item_id) as row_count,
        count(*) as cell_count,
        bool_and(is_binary_metric) as is_binary_metric,
        count(compressed_artifact_hash) as hashed_cells
    from panel_cells
    group by panel_id

),

rows_judged as (

    select
        panel_id,
        cast(count_if(artifact_identity <> 'identical') as bigint) as offending_rows,
        list(item_id order by item_id)
            filter (where artifact_identity <> 'identical') as offending_items
    from panel_rows
    group by panel_id

),

panels_judged as (

    select
        panels_aggregated.*,
        rows_judged.offending_rows,
        case
            when panels_aggregated.hashed_cells = 0 then 'unverified'
            when rows_judged.offending_rows = 0 then 'verified'
            else 'violated'
        end as verdict,
        case
            when panels_aggregated.hashed_cells = 0
                then 'no compressed artifact hashes in the source: '
                || 'artifact identity not verified'
            when rows_judged.offending_rows = 0
                then 'every reader received the same artifact hash on all '
                || panels_aggregated.row_count || ' rows'
            else rows_judged.offending_rows || ' of '
                || panels_aggregated.row_count
                || ' rows differ across readers; first: '
                || array_to_string(list_slice(rows_judged.offending_items, 1, 3), ', ')
        end as verdict_detail
    from panels_aggregated
    inner join rows_judged
        on panels_aggregated.panel_id = rows_judged.panel_id

),

final as (

    select
        panel_id,
        panel_name,
        source,
        dataset_id,
        metric,
        raw_policy_id,
        compressed_policy_id,
        budget_tokens,
        seed,
        reader_count,
        family_count,
        row_count,
        cell_count,
        is_binary_metric,
        verdict,
        verdict_detail
    from panels_judged

)

select * from final
