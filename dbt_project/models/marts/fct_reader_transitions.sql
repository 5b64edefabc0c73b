{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='panel_id',
    on_schema_change='fail'
) }}
{#
    One row per binary panel x reader_id:
    rescue_share = rescued_count / cell_count,
    damage_share = damaged_count / raw_correct_count (null when zero).
    fct_panel_transitions holds the pooled row of each panel.
#}
with

panel_cells as (

    select
        panel_id,
        reader_id,
        raw_score,
        transition_type
    from {{ changed_rows(ref('fct_panel_cells')) }}
    where is_binary_metric

),

transitions_counted as (

    select
        panel_id,
        reader_id,
        count(*) as cell_count,
        cast(count_if(raw_score = 1) as bigint) as raw_correct_count,
        cast(count_if(transition_type = 'rescued') as bigint) as rescued_count,
        cast(count_if(transition_type = 'damaged') as bigint) as damaged_count,
        cast(count_if(transition_type = 'unchanged_correct') as bigint)
            as unchanged_correct_count,
        cast(count_if(transition_type = 'unchanged_wrong') as bigint)
            as unchanged_wrong_count
    from panel_cells
    group by panel_id, reader_id

),

shares_computed as (

    select
        *,
        {{ transition_shares() }}
    from transitions_counted

)

select * from shares_computed
