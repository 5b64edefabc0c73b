{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='panel_id',
    on_schema_change='fail'
) }}
{#
    One row per panel_id x reader_id (the panel's member readers): family,
    the panel's row count, the reader's mean score under the raw and the
    compressed policy over the panel rows, and gain = compressed_mean -
    raw_mean. Means are exact (macros/exact_mean.sql): two builds of the same
    inputs give the same bits.
#}
with

panel_cells as (

    select
        panel_id,
        reader_id,
        reader_family,
        raw_score,
        compressed_score
    from {{ changed_rows(ref('fct_panel_cells')) }}

),

readers_summarised as (

    select
        panel_id,
        reader_id,
        min(reader_family) as reader_family,
        count(*) as row_count,
        {{ exact_mean('raw_score') }} as raw_mean,
        {{ exact_mean('compressed_score') }} as compressed_mean
    from panel_cells
    group by panel_id, reader_id

),

final as (

    select
        panel_id,
        reader_id,
        reader_family,
        row_count,
        raw_mean,
        compressed_mean,
        compressed_mean - raw_mean as gain
    from readers_summarised

)

select * from final
