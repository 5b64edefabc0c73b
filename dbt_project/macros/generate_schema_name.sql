{#
    Custom schema names are literal: +schema: marts builds into "marts", not
    "<target schema>_marts". Models without a custom schema use the target's.
#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
