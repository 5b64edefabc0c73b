{#
    The exact footprint of every panel, one row per panel_id x reader_id x
    item_id. A panel's readers are every reader with a paired outcome in its
    key; its rows are the items every one of those readers covers (the
    intersection; nothing is imputed).
#}
with

paired_outcomes as (

    select * from {{ ref('int_outcomes_paired_to_policies') }}

),

panel_reader_counts as (

    select panel_id, count(distinct reader_id) as panel_readers
    from paired_outcomes
    group by panel_id

),

item_reader_counts as (

    select panel_id, item_id, count(distinct reader_id) as covering_readers
    from paired_outcomes
    group by panel_id, item_id

),

footprint_items as (

    select item_reader_counts.panel_id, item_reader_counts.item_id
    from item_reader_counts
    inner join panel_reader_counts
        on item_reader_counts.panel_id = panel_reader_counts.panel_id
    where item_reader_counts.covering_readers = panel_reader_counts.panel_readers

),

cells_in_footprint as (

    select paired_outcomes.*
    from paired_outcomes
    inner join footprint_items
        on
            paired_outcomes.panel_id = footprint_items.panel_id
            and paired_outcomes.item_id = footprint_items.item_id

)

select * from cells_in_footprint
