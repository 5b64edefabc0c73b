{#
    One row per reader_id seen in raw.readers or in the released matrix, with
    its family resolved by precedence: user map > family declared by the
    source > default map > vendor prefix of the model id > the model id.
#}
with

readers as (

    select
        reader_id,
        reader_model,
        nullif(declared_family, '') as declared_family,
        1 as source_rank
    from {{ ref('stg_ragledger__readers') }}

),

matrix_readers as (

    select distinct
        reader_id,
        reader_id as reader_model,
        cast(null as varchar) as declared_family,
        2 as source_rank
    from {{ ref('stg_matrix__rows') }}

),

reader_families as (

    select
        reader_model,
        nullif(reader_family, '') as reader_family,
        family_source
    from {{ ref('stg_ragledger__reader_families') }}

),

user_families as (

    select
        reader_model,
        reader_family
    from reader_families
    where family_source = 'user'

),

default_families as (

    select
        reader_model,
        reader_family
    from reader_families
    where family_source = 'default'

),

readers_unioned as (

    select * from readers
    union all
    select * from matrix_readers

),

readers_deduplicated as (

    select *
    from readers_unioned
    qualify row_number() over (
        partition by reader_id order by source_rank
    ) = 1

),

families_resolved as (

    select
        readers_deduplicated.reader_id,
        readers_deduplicated.reader_model,
        coalesce(
            user_families.reader_family,
            readers_deduplicated.declared_family,
            default_families.reader_family,
            case
                when contains(readers_deduplicated.reader_model, '/')
                    then split_part(readers_deduplicated.reader_model, '/', 1)
            end,
            readers_deduplicated.reader_model
        ) as reader_family,
        case
            when user_families.reader_family is not null then 'user'
            when readers_deduplicated.declared_family is not null then 'declared'
            when default_families.reader_family is not null then 'default'
            when contains(readers_deduplicated.reader_model, '/')
                then 'vendor_prefix'
            else 'model_id'
        end as reader_family_source
    from readers_deduplicated
    left join user_families
        on readers_deduplicated.reader_model = user_families.reader_model
    left join default_families
        on readers_deduplicated.reader_model = default_families.reader_model

)

select * from families_resolved
