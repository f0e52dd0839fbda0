-- Nodes download and verify the control plane's own agent binary: the install step that was
-- `image_pulled` is now `agent_verified` (binary checked against its SHA-256, or the pinned
-- image pulled); a step may be reported as failed, with its reason; and a node keeps the
-- certificate it was issued, so a retried Enroll (its answer lost) gets the same identity.

ALTER TABLE install_progress DROP CONSTRAINT install_progress_step_check;
UPDATE install_progress SET step = 'agent_verified' WHERE step = 'image_pulled';
ALTER TABLE install_progress ADD CONSTRAINT install_progress_step_check
    CHECK (step IN ('docker_ready', 'agent_verified', 'agent_started'));
-- Why the step failed (one clean line from the node); NULL when it succeeded.
ALTER TABLE install_progress ADD COLUMN error TEXT;

ALTER TABLE provisions DROP CONSTRAINT provisions_install_step_check;
UPDATE provisions SET install_step = 'agent_verified' WHERE install_step = 'image_pulled';
ALTER TABLE provisions ADD CONSTRAINT provisions_install_step_check
    CHECK (install_step IN ('docker_ready', 'agent_verified', 'agent_started'));

-- The node's client certificate (PEM), as issued.
ALTER TABLE nodes ADD COLUMN certificate_pem TEXT;
