{#
    The two shares of a transition count (fct_reader_transitions per reader,
    fct_panel_transitions pooled over a panel's readers): rescue_share =
    rescued_count / cell_count, damage_share = damaged_count /
    raw_correct_count (null when no raw answer was correct).
#}
{% macro transition_shares() -%}
    rescued_count / cell_count as rescue_share,
    case
        when raw_correct_count > 0 then damaged_count / raw_correct_count
    end as damage_share
{%- endmacro %}
