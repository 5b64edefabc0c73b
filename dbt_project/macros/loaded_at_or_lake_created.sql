{#
    The freshness clock of a table some job appends to: its latest stamp, or,
    when no job has written it yet, the time the warehouse was created (the
    lake's first snapshot, in UTC without a time zone like the stamps). dbt
    reads a null max_loaded_at as the year 1, so an empty table would otherwise
    be reported two thousand years stale.
#}
{% macro loaded_at_or_lake_created(stamp, lake='lake') -%}
    coalesce(
        max({{ stamp }}),
        (select timezone('UTC', min(snapshot_time)) from {{ lake }}.snapshots())
    )
{%- endmacro %}
