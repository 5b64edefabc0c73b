{#
    Exact footprint: every reader of a panel has a cell on every row of the
    panel (cells = readers x rows, nothing imputed), and, when panels_model
    is given, the panel's stored reader_count and row_count agree with the
    cells. Applied to a cell-level model (panel x reader x item).
#}
{% test has_exact_panel_footprint(
    model,
    panel_column='panel_id',
    reader_column='reader_id',
    item_column='item_id',
    panels_model=none
) %}

with

footprints as (

    select
        {{ panel_column }} as panel_id,
        count(*) as cells,
        count(distinct {{ reader_column }}) as readers,
        count(distinct {{ item_column }}) as items
    from {{ model }}
    group by {{ panel_column }}

),

{% if panels_model is not none %}
panels as (

    select panel_id, reader_count, row_count
    from {{ panels_model }}
    -- an incremental build tests the refreshed datasets' panels only
    where {{ partition_test_filter(panels_model) or 'true' }}

),
{% endif %}

validation_errors as (

    select
        footprints.*
        {% if panels_model is not none -%}
        , panels.reader_count
        , panels.row_count
        {%- endif %}
    from footprints
    {% if panels_model is not none -%}
    full outer join panels on footprints.panel_id = panels.panel_id
    {%- endif %}
    where
        footprints.cells is distinct from footprints.readers * footprints.items
        {% if panels_model is not none -%}
        or panels.reader_count is distinct from footprints.readers
        or panels.row_count is distinct from footprints.items
        {%- endif %}

)

select * from validation_errors

{% endtest %}
