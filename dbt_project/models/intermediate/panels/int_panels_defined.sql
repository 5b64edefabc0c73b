{{ config(
    materialized='incremental',
    incremental_strategy='dataset_partitions',
    partition_key='dataset_id',
    on_schema_change='fail'
) }}
{#
    Every panel and its rows, one row per panel_id x item_id. A panel key
    (dataset x metric x raw policy x compressed policy x budget x seed) gives:

    - its primary panel (panel_kind 'primary', the key's own panel_id): the
      rows both of the two readers with the most rows cover (most rows first,
      then reader_id). A reader added later with fewer rows does not shrink
      it: it is excluded from the panel (int_panel_memberships);
    - an 'all_readers' panel when some reader is excluded from the primary
      one: the rows every reader of the key covers, so the excluded readers
      still meet the others on the rows they share;
    - one 'declared' panel per key of a dataset for each `ragledger panels
      define` definition: its items (or, without items, the rows all its
      readers cover).
#}
with

paired_outcomes as (

    select
        panel_id as panel_key_id,
        panel_name as panel_key_name,
        dataset_id,
        reader_id,
        item_id
    from {{ changed_rows(ref('int_outcomes_paired_to_policies')) }}

),

panel_definitions as (

    select
        panel_definition_name,
        dataset_id,
        reader_ids,
        item_ids
    from {{ changed_rows(ref('stg_ragledger__panel_definitions')) }}

),

reader_coverage as (

    select
        panel_key_id,
        reader_id,
        count(*) as covered_row_count
    from paired_outcomes
    group by panel_key_id, reader_id

),

readers_ranked as (

    select
        panel_key_id,
        reader_id,
        row_number() over (
            partition by panel_key_id
            order by covered_row_count desc, reader_id asc
        ) as coverage_rank,
        count(*) over (partition by panel_key_id) as key_reader_count
    from reader_coverage

),

leading_readers as (

    select
        panel_key_id,
        reader_id,
        least(key_reader_count, 2) as leading_reader_count
    from readers_ranked
    where coverage_rank <= 2

),

primary_rows as (

    select
        paired_outcomes.panel_key_id,
        paired_outcomes.item_id
    from paired_outcomes
    inner join leading_readers
        on {{ join_on_columns(
            'paired_outcomes', 'leading_readers', ['panel_key_id', 'reader_id']
        ) }}
    group by paired_outcomes.panel_key_id, paired_outcomes.item_id
    having count(*) = any_value(leading_readers.leading_reader_count)

),

key_reader_counts as (

    select
        panel_key_id,
        any_value(key_reader_count) as key_reader_count
    from readers_ranked
    group by panel_key_id

),

all_reader_rows as (

    select
        paired_outcomes.panel_key_id,
        paired_outcomes.item_id
    from paired_outcomes
    inner join key_reader_counts
        on paired_outcomes.panel_key_id = key_reader_counts.panel_key_id
    group by paired_outcomes.panel_key_id, paired_outcomes.item_id
    having
        count(*) = any_value(key_reader_counts.key_reader_count)

),

primary_row_counts as (

    select
        panel_key_id,
        count(*) as primary_row_count
    from primary_rows
    group by panel_key_id

),

primary_members as (

    select
        paired_outcomes.panel_key_id,
        paired_outcomes.reader_id
    from paired_outcomes
    inner join primary_rows
        on {{ join_on_columns(
            'paired_outcomes', 'primary_rows', ['panel_key_id', 'item_id']
        ) }}
    inner join primary_row_counts
        on paired_outcomes.panel_key_id = primary_row_counts.panel_key_id
    group by paired_outcomes.panel_key_id, paired_outcomes.reader_id
    having count(*) = any_value(primary_row_counts.primary_row_count)

),

primary_member_counts as (

    select
        panel_key_id,
        count(*) as member_count
    from primary_members
    group by panel_key_id

),

keys_with_exclusions as (

    select key_reader_counts.panel_key_id
    from key_reader_counts
    left join primary_member_counts
        on key_reader_counts.panel_key_id = primary_member_counts.panel_key_id
    where
        coalesce(primary_member_counts.member_count, 0)
        < key_reader_counts.key_reader_count

),

panel_keys as (

    select distinct
        panel_key_id,
        panel_key_name,
        dataset_id
    from paired_outcomes

),

declared_keys as (

    select
        panel_keys.panel_key_id,
        panel_keys.panel_key_name,
        panel_definitions.panel_definition_name,
        panel_definitions.reader_ids,
        panel_definitions.item_ids
    from panel_keys
    inner join panel_definitions
        on panel_keys.dataset_id = panel_definitions.dataset_id

),

declared_reader_coverage as (

    select
        declared_keys.panel_key_id,
        declared_keys.panel_definition_name,
        paired_outcomes.item_id,
        count(*) as declared_readers_covering,
        len(any_value(declared_keys.reader_ids)) as declared_reader_count,
        any_value(declared_keys.item_ids) as item_ids
    from declared_keys
    inner join paired_outcomes
        on
            declared_keys.panel_key_id = paired_outcomes.panel_key_id
            and list_contains(declared_keys.reader_ids, paired_outcomes.reader_id)
    group by
        declared_keys.panel_key_id,
        declared_keys.panel_definition_name,
        paired_outcomes.item_id

),

declared_rows as (

    select
        panel_key_id,
        panel_definition_name,
        item_id
    from declared_reader_coverage
    where
        case
            when item_ids is null
                then declared_readers_covering = declared_reader_count
            else list_contains(item_ids, item_id)
        end

),

panels_unioned as (

    select
        panel_key_id,
        'primary' as panel_kind,
        cast(null as varchar) as panel_definition_name,
        item_id
    from primary_rows
    union all
    select
        all_reader_rows.panel_key_id,
        'all_readers' as panel_kind,
        cast(null as varchar) as panel_definition_name,
        all_reader_rows.item_id
    from all_reader_rows
    inner join keys_with_exclusions
        on all_reader_rows.panel_key_id = keys_with_exclusions.panel_key_id
    union all
    select
        panel_key_id,
        'declared' as panel_kind,
        panel_definition_name,
        item_id
    from declared_rows

),

panels_named as (

    select
        case panels_unioned.panel_kind
            when 'primary' then panels_unioned.panel_key_id
            else {{ hash_key([
                'panels_unioned.panel_key_id',
                'panels_unioned.panel_kind',
                'panels_unioned.panel_definition_name'
            ], length=16) }}
        end as panel_id,
        case panels_unioned.panel_kind
            when 'primary' then panel_keys.panel_key_name
            when 'all_readers'
                then panel_keys.panel_key_name || ' [all readers]'
            else
                panel_keys.panel_key_name
                || ' [declared ' || panels_unioned.panel_definition_name || ']'
        end as panel_name,
        panels_unioned.panel_key_id,
        panels_unioned.panel_kind,
        panels_unioned.panel_definition_name,
        panels_unioned.item_id,
        panel_keys.dataset_id
    from panels_unioned
    inner join panel_keys
        on panels_unioned.panel_key_id = panel_keys.panel_key_id

)

select * from panels_named
