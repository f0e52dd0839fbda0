-- A provision's changes are announced by the replica that wrote them, after the commit and
-- many in one statement (levelrail-db's announcer), not by this trigger inside the write:
-- PostgreSQL serialises the commits of all transactions that notify, through their WAL
-- flush, which made every provision update of every replica wait in one line.
DROP TRIGGER provisions_notify ON provisions;
DROP FUNCTION levelrail_notify_provision_row();
