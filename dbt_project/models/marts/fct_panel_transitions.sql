{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='panel_id',
    on_schema_change='fail'
) }}
{#
    One row per binary panel: the transitions of all its cells pooled over
    readers. rescue_share = rescued_count / cell_count, damage_share =
    damaged_count / raw_correct_count (null when zero); not the mean of the
    per-reader shares (fct_reader_transitions).
#}
with

reader_transitions as (

    select
        panel_id,
        reader_id,
        cell_count,
        raw_correct_count,
        rescued_count,
        damaged_count,
        unchanged_correct_count,
        unchanged_wrong_count
    from {{ changed_rows(ref('fct_reader_transitions'), 'panel_id') }}

),

transitions_pooled as (

    select
        panel_id,
        count(*) as reader_count,
        sum(cell_count) as cell_count,
        sum(raw_correct_count) as raw_correct_count,
        sum(rescued_count) as rescued_count,
        sum(damaged_count) as damaged_count,
        sum(unchanged_correct_count) as unchanged_correct_count,
        sum(unchanged_wrong_count) as unchanged_wrong_count
    from reader_transitions
    group by panel_id

),

shares_computed as (

    select
        panel_id,
        reader_count,
        cast(cell_count as bigint) as cell_count,
        cast(raw_correct_count as bigint) as raw_correct_count,
        cast(rescued_count as bigint) as rescued_count,
        cast(damaged_count as bigint) as damaged_count,
        cast(unchanged_correct_count as bigint) as unchanged_correct_count,
        cast(unchanged_wrong_count as bigint) as unchanged_wrong_count,
        {{ transition_shares() }}
    from transitions_pooled

)

select * from shares_computed
