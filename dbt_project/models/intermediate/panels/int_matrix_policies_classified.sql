{#
    One row per matrix dataset_id x policy_id (method). A method is a raw
    policy of its dataset when every one of its rows has an empty published
    transition_type; every other method is a compressed (non-raw) condition.
#}
with

matrix_rows as (

    select
        dataset_id,
        policy_id,
        source_transition_type
    from {{ changed_rows(ref('stg_matrix__rows')) }}

),

policies_classified as (

    select
        dataset_id,
        policy_id,
        case
            when bool_and(source_transition_type is null) then 'raw'
            else 'compressor'
        end as policy_kind,
        count(*) as matrix_row_count
    from matrix_rows
    group by dataset_id, policy_id

)

select * from policies_classified
