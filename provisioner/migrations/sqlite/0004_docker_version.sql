-- Each heartbeat carries the version of the node's Docker engine (asked over its local
-- socket); empty when the engine did not answer, and for nodes that have not heartbeated
-- since this migration.
ALTER TABLE nodes ADD COLUMN docker_version TEXT NOT NULL DEFAULT '';
