-- Issue 11: panels a user declares by name (`ragledger panels define`). dbt
-- builds one declared panel per panel key of the dataset (metric x raw policy
-- x compressed policy x budget x seed). No keys: the CLI replaces a
-- definition by name (delete, then insert) in one transaction.

create table raw.panel_definitions (
    panel_definition_name varchar not null,
    dataset_id varchar not null,
    reader_ids_json varchar not null,  -- JSON list of reader_id, sorted
    item_ids_json varchar,             -- JSON list of item_id; null: the rows all readers cover
    created_at timestamp not null
);
