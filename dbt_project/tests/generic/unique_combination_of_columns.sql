{#
    Fails on every combination of the given columns that occurs more than
    once, or that has a null in any of them: a composite key must be unique
    and complete.
#}
{% test unique_combination_of_columns(model, combination_of_columns) %}

with

validation as (

    select
        {{ combination_of_columns | join(', ') }},
        count(*) as occurrences

    from {{ model }}
    group by all

),

validation_errors as (

    select *
    from validation
    where
        occurrences > 1
        or {{ combination_of_columns | join(' is null or ') }} is null

)

select * from validation_errors

{% endtest %}
