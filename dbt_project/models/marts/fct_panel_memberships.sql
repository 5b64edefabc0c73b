{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='panel_id',
    on_schema_change='fail'
) }}
{#
    One row per panel_id x candidate reader: each reader of the panel's key
    (or named by a declared panel), whether it is a member (covers every row
    of the panel) or excluded, and how many of the panel's rows it covers.
#}
with

memberships as (

    select * from {{ changed_rows(ref('int_panel_memberships'), 'panel_id') }}

),

final as (

    select
        panel_id,
        reader_id,
        reader_family,
        membership,
        covered_row_count,
        row_count,
        coverage_share
    from memberships

)

select * from final
