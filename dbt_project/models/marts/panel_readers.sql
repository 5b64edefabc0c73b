{#
    One row per panel_id x reader_id: the panel's readers with their family
    and footprint size, and their raw mean, compressed mean and gain.
#}
with

panel_cells as (

    select panel_id, reader_id, reader_family
    from {{ ref('panel_cells') }}

),

reader_summaries as (

    select panel_id, reader_id, rows, raw_mean, compressed_mean, gain
    from {{ ref('reader_summaries') }}

),

readers_with_family as (

    select
        panel_id,
        reader_id,
        any_value(reader_family) as reader_family
    from panel_cells
    group by panel_id, reader_id

),

final as (

    select
        readers_with_family.panel_id,
        readers_with_family.reader_id,
        readers_with_family.reader_family,
        reader_summaries.rows as row_count,
        reader_summaries.raw_mean,
        reader_summaries.compressed_mean,
        reader_summaries.gain
    from readers_with_family
    inner join reader_summaries
        on
            readers_with_family.panel_id = reader_summaries.panel_id
            and readers_with_family.reader_id = reader_summaries.reader_id

)

select * from final
