{#
    One row per panel_id x reader_id: the reader's mean score under the raw
    and the compressed policy over the panel rows, and
    gain = compressed_mean - raw_mean.
#}
with

panel_cells as (

    select panel_id, reader_id, raw_score, compressed_score
    from {{ ref('panel_cells') }}

),

readers_summarised as (

    select
        panel_id,
        reader_id,
        count(*) as rows,
        avg(raw_score) as raw_mean,
        avg(compressed_score) as compressed_mean,
        avg(compressed_score) - avg(raw_score) as gain
    from panel_cells
    group by panel_id, reader_id

)

select * from readers_summarised
