-- A new provision is announced to no one: no other replica drives it or follows it yet (a
-- watcher elsewhere reads it from the table first). Announcing inserts cost every
-- `Provision` call PostgreSQL's commit-time lock on the notification queue, which
-- serialises the commits of all transactions that notify; only changes are announced now.
DROP TRIGGER provisions_notify ON provisions;
CREATE TRIGGER provisions_notify AFTER UPDATE ON provisions
    FOR EACH ROW EXECUTE FUNCTION levelrail_notify_provision_row();
