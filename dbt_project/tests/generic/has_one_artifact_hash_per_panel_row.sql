{#
    Artifact identity: in a panel where any cell carries an artifact hash,
    every panel row (item) must carry exactly one distinct non-null hash
    across all of its readers. One failing row per offending panel x item,
    naming the panel, the item and what each reader received. Panels with no
    hash at all (the released matrix) are unverified, not failures.

    Applied to a cell-level model (panel x reader x item).
#}
{% test has_one_artifact_hash_per_panel_row(
    model,
    column_name,
    panel_column='panel_id',
    panel_name_column='panel_name',
    item_column='item_id',
    reader_column='reader_id'
) %}

with

cells as (

    select
        {{ panel_column }} as panel_id,
        {{ panel_name_column }} as panel_name,
        {{ item_column }} as item_id,
        {{ reader_column }} as reader_id,
        {{ column_name }} as artifact_hash
    from {{ model }}

),

hashed_panels as (

    select panel_id
    from cells
    group by panel_id
    having count(artifact_hash) > 0

),

rows_checked as (

    select
        cells.panel_id,
        any_value(cells.panel_name) as panel_name,
        cells.item_id,
        count(*) as readers,
        count(distinct cells.artifact_hash) as distinct_artifact_hashes,
        count(*) - count(cells.artifact_hash) as cells_without_hash,
        string_agg(
            cells.reader_id || '=' || coalesce(cells.artifact_hash, 'null'),
            ', ' order by cells.reader_id
        ) as reader_hashes
    from cells
    inner join hashed_panels on cells.panel_id = hashed_panels.panel_id
    group by cells.panel_id, cells.item_id

),

validation_errors as (

    select
        'panel ' || panel_name || ' [' || panel_id || '] item ' || item_id
        || ': readers received ' || distinct_artifact_hashes
        || ' distinct artifact hashes and ' || cells_without_hash
        || ' missing (' || reader_hashes || ')' as problem,
        panel_id,
        panel_name,
        item_id,
        distinct_artifact_hashes,
        cells_without_hash,
        reader_hashes
    from rows_checked
    where distinct_artifact_hashes <> 1 or cells_without_hash > 0

)

select * from validation_errors
order by panel_id, item_id

{% endtest %}
