{# Fails on every non-null value outside [0, 1] (scores, shares, means). #}
{% test is_probability(model, column_name) %}

with

validation_errors as (

    select {{ column_name }} as failing_value
    from {{ model }}
    where {{ column_name }} < 0 or {{ column_name }} > 1 or isnan({{ column_name }})

)

select * from validation_errors

{% endtest %}
