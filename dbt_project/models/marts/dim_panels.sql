{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='dataset_id',
    on_schema_change='fail'
) }}
{#
    One row per panel (panel_id): a panel key (dataset_id x metric x
    raw_policy_id x compressed_policy_id x budget_tokens x seed) and a
    panel_kind (primary, all_readers, declared), with its exact footprint
    (member readers, families, rows), the readers excluded from it and its
    artifact-identity verdict.
#}
with

panel_cells as (

    select * from {{ changed_rows(ref('int_panel_cells')) }}

),

panel_rows as (

    select
        panel_id,
        item_id,
        artifact_identity
    from {{ changed_rows(ref('fct_panel_rows'), 'panel_id') }}

),

excluded_readers as (

    select
        panel_id,
        count(*) as excluded_reader_count
    from {{ ref('int_panel_memberships') }}
    where membership = 'excluded'
    group by panel_id

),

panels_aggregated as (

    select
        panel_id,
        min(panel_name) as panel_name,
        min(panel_key_id) as panel_key_id,
        min(panel_kind) as panel_kind,
        min(panel_definition_name) as panel_definition_name,
        min(source) as source,
        min(dataset_id) as dataset_id,
        min(metric) as metric,
        min(raw_policy_id) as raw_policy_id,
        min(compressed_policy_id) as compressed_policy_id,
        min(budget_tokens) as budget_tokens,
        min(seed) as seed,
        count(distinct reader_id) as reader_count,
        count(distinct reader_family) as family_count,
        count(distinct item_id) as row_count,
        count(*) as cell_count,
        bool_and(is_binary_metric) as is_binary_metric,
        count(compressed_artifact_hash) as hashed_cell_count
    from panel_cells
    group by panel_id

),

rows_judged as (

    select
        panel_id,
        cast(count_if(artifact_identity <> 'identical') as bigint)
            as offending_row_count,
        list(item_id order by item_id)
        filter (where artifact_identity <> 'identical') as offending_items
    from panel_rows
    group by panel_id

),

panels_judged as (

    select
        panels_aggregated.*,
        coalesce(excluded_readers.excluded_reader_count, 0)
            as excluded_reader_count,
        case
            when panels_aggregated.hashed_cell_count = 0 then 'unverified'
            when rows_judged.offending_row_count = 0 then 'verified'
            else 'violated'
        end as verdict,
        case
            when panels_aggregated.hashed_cell_count = 0
                then
                    'no compressed artifact hashes in the source: '
                    || 'artifact identity not verified'
            when rows_judged.offending_row_count = 0
                then
                    'every reader received the same artifact hash on all '
                    || panels_aggregated.row_count || ' rows'
            else
                rows_judged.offending_row_count || ' of '
                || panels_aggregated.row_count
                || ' rows differ across readers; first: '
                || array_to_string(list_slice(rows_judged.offending_items, 1, 3), ', ')
        end as verdict_detail
    from panels_aggregated
    inner join rows_judged
        on panels_aggregated.panel_id = rows_judged.panel_id
    left join excluded_readers
        on panels_aggregated.panel_id = excluded_readers.panel_id

),

final as (

    select
        panel_id,
        panel_name,
        panel_key_id,
        panel_kind,
        panel_definition_name,
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
        excluded_reader_count,
        is_binary_metric,
        verdict,
        verdict_detail
    from panels_judged

)

select * from final
