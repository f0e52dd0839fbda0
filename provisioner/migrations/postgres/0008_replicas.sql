-- What every provisioner replica sharing this database must agree on, written once by the
-- first replica to start and read by the others: the node CA (its key sealed with the
-- provisioners' shared sealing key) and the control-plane id.
CREATE TABLE shared_state (
    name       TEXT        NOT NULL PRIMARY KEY,
    value      BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);

-- The change feed: every replica LISTENs on `levelrail_provisions` and hears `<id> change`
-- for each provision whose state changed (a status write; not a lease renewal, which moves
-- no generation), whose node enrolled, or whose cloud-init reported a step, and
-- `<id> cancel` for a write of a provision whose cancel is requested: the replica driving
-- it needs no read to act.
CREATE FUNCTION levelrail_notify_provision() RETURNS trigger AS $$
BEGIN
    IF NEW.provision_id IS NOT NULL THEN
        PERFORM pg_notify('levelrail_provisions', NEW.provision_id || ' change');
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE FUNCTION levelrail_notify_provision_row() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.generation IS DISTINCT FROM NEW.generation THEN
        PERFORM pg_notify(
            'levelrail_provisions',
            NEW.id || CASE WHEN NEW.cancel_requested THEN ' cancel' ELSE ' change' END
        );
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER provisions_notify AFTER INSERT OR UPDATE ON provisions
    FOR EACH ROW EXECUTE FUNCTION levelrail_notify_provision_row();
CREATE TRIGGER nodes_notify AFTER INSERT ON nodes
    FOR EACH ROW EXECUTE FUNCTION levelrail_notify_provision();
CREATE TRIGGER install_progress_notify AFTER INSERT ON install_progress
    FOR EACH ROW EXECUTE FUNCTION levelrail_notify_provision();
