{#
    A transition label must follow from the two binary scores:
    rescued 0 -> 1, damaged 1 -> 0, unchanged_correct 1 -> 1,
    unchanged_wrong 0 -> 0. A label on a non-binary cell is an error too;
    a null label is allowed (continuous metrics).
#}
{% test transition_agrees_with_scores(
    model, column_name, raw_score_column, compressed_score_column
) %}

with

validation as (

    select
        {{ column_name }} as transition_type,
        {{ raw_score_column }} as raw_score,
        {{ compressed_score_column }} as compressed_score,
        case
            when {{ raw_score_column }} = 0 and {{ compressed_score_column }} = 1
                then 'rescued'
            when {{ raw_score_column }} = 1 and {{ compressed_score_column }} = 0
                then 'damaged'
            when {{ raw_score_column }} = 1 and {{ compressed_score_column }} = 1
                then 'unchanged_correct'
            when {{ raw_score_column }} = 0 and {{ compressed_score_column }} = 0
                then 'unchanged_wrong'
        end as expected_transition_type
    from {{ model }}
    where {{ column_name }} is not null

),

validation_errors as (

    select *
    from validation
    where transition_type is distinct from expected_transition_type

)

select * from validation_errors

{% endtest %}
