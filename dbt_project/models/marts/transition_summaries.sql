{#
    One row per binary panel x reader_id, plus one pooled row per binary
    panel (reader_id '__pooled__'):
    rescue_share = rescued / cells,
    damage_share = damaged / raw-correct cells (null when there are none).
#}
with

panel_cells as (

    select panel_id, reader_id, raw_score, transition_type
    from {{ ref('panel_cells') }}
    where is_binary_metric

),

transitions_counted as (

    select
        panel_id,
        coalesce(reader_id, '__pooled__') as reader_id,
        cast(count(*) as bigint) as cells,
        cast(count_if(raw_score = 1) as bigint) as raw_correct_cells,
        cast(count_if(transition_type = 'rescued') as bigint) as rescued,
        cast(count_if(transition_type = 'damaged') as bigint) as damaged,
        cast(count_if(transition_type = 'unchanged_correct') as bigint)
            as unchanged_correct,
        cast(count_if(transition_type = 'unchanged_wrong') as bigint) as unchanged_wrong
    from panel_cells
    group by grouping sets ((panel_id, reader_id), (panel_id))

),

shares_computed as (

    select
        *,
        rescued / cells as rescue_share,
        case
            when raw_correct_cells > 0 then damaged / raw_correct_cells
        end as damage_share
    from transitions_counted

)

select * from shares_computed
