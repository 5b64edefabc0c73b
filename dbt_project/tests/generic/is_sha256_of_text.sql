{#
    Content addressing: where the text is stored, the hash column must equal
    'sha256:' || hex sha256 of its UTF-8 bytes (warehouse.hashing.sha256_text).
#}
{% test is_sha256_of_text(model, column_name, text_column) %}

with

validation as (

    select
        {{ column_name }} as stored_hash,
        'sha256:' || sha256({{ text_column }}) as computed_hash
    from {{ model }}
    where {{ text_column }} is not null

),

validation_errors as (

    select *
    from validation
    where stored_hash is distinct from computed_hash

)

select * from validation_errors

{% endtest %}
