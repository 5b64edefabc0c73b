{#
    `dbt docs generate` names the marts where users read them: the lake's
    published copy, lake.marts.<name> (the alias the sources use), not the
    scratch database every other command builds them in (dbt.marts.<name>, which
    `ragledger build` publishes into the lake). Staging and intermediate models
    exist only in the scratch database and keep its name. The profile's plugin
    config carries the same switch (docs_names), so a parse made for a build is
    never reused for the docs, nor the other way round.
#}
{% macro generate_database_name(custom_database_name=none, node=none) -%}
    {%- if flags.WHICH == 'generate' and node is not none
          and node.resource_type == 'model' and node.fqn[1] == 'marts' -%}
        lake
    {%- else -%}
        {{ default__generate_database_name(custom_database_name, node) }}
    {%- endif -%}
{%- endmacro %}
