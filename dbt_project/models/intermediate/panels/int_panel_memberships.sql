{#
    One row per panel_id x candidate reader: every reader of the panel's key
    (for a declared panel: every reader it names) with the number of the
    panel's rows it covers. A reader is a member when it covers every row;
    otherwise it is excluded and no score of it is imputed.
#}
with

panel_rows as (

    select
        panel_id,
        panel_key_id,
        panel_kind,
        panel_definition_name,
        item_id
    from {{ changed_rows(ref('int_panels_defined')) }}

),

paired_outcomes as (

    select
        panel_id as panel_key_id,
        reader_id,
        item_id
    from {{ changed_rows(ref('int_outcomes_paired_to_policies')) }}

),

panel_definitions as (

    select
        panel_definition_name,
        reader_ids
    from {{ changed_rows(ref('stg_ragledger__panel_definitions')) }}

),

readers as (

    select
        reader_id,
        reader_family
    from {{ ref('int_readers_resolved_to_families') }}

),

panels as (

    select
        panel_id,
        any_value(panel_key_id) as panel_key_id,
        any_value(panel_kind) as panel_kind,
        any_value(panel_definition_name) as panel_definition_name,
        count(*) as row_count
    from panel_rows
    group by panel_id

),

key_readers as (

    select distinct
        panel_key_id,
        reader_id
    from paired_outcomes

),

declared_readers as (

    select
        panel_definition_name,
        unnest(reader_ids) as reader_id
    from panel_definitions

),

candidates as (

    select
        panels.panel_id,
        key_readers.reader_id
    from panels
    inner join key_readers
        on panels.panel_key_id = key_readers.panel_key_id
    where panels.panel_kind <> 'declared'
    union all
    select
        panels.panel_id,
        declared_readers.reader_id
    from panels
    inner join declared_readers
        on panels.panel_definition_name = declared_readers.panel_definition_name
    where panels.panel_kind = 'declared'

),

coverage as (

    select
        panel_rows.panel_id,
        paired_outcomes.reader_id,
        count(*) as covered_row_count
    from panel_rows
    inner join paired_outcomes
        on {{ join_on_columns(
            'panel_rows', 'paired_outcomes', ['panel_key_id', 'item_id']
        ) }}
    group by panel_rows.panel_id, paired_outcomes.reader_id

),

memberships as (

    select
        candidates.panel_id,
        candidates.reader_id,
        coalesce(readers.reader_family, candidates.reader_id) as reader_family,
        case
            when coalesce(coverage.covered_row_count, 0) = panels.row_count
                then 'member'
            else 'excluded'
        end as membership,
        coalesce(coverage.covered_row_count, 0) as covered_row_count,
        panels.row_count,
        coalesce(coverage.covered_row_count, 0) / panels.row_count
            as coverage_share
    from candidates
    inner join panels
        on candidates.panel_id = panels.panel_id
    left join coverage
        on {{ join_on_columns(
            'candidates', 'coverage', ['panel_id', 'reader_id']
        ) }}
    left join readers
        on candidates.reader_id = readers.reader_id

)

select * from memberships
