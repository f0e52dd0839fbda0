-- Claims are looked up by holder only for enrolled nodes (deleting a node frees its name);
-- a provision frees its claim by name. So provision claims, one per Provision, stay out of
-- the holder index, and an insert updates one index of this table instead of two.
DROP INDEX name_claims_holder_idx;
CREATE INDEX name_claims_node_idx ON name_claims (holder_id) WHERE holder_kind = 'node';
