//! A provision's story for its detail page: every stage entered and every step completed,
//! in time order, and what its cleanup did with each resource.
use levelrail_proto::provisioner::v1::{CleanupOutcome, CleanupResult, Provision, ProvisionStatus};

use super::stages::{status_label, timestamp_ms};

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When it happened (ms since the epoch).
    pub at_ms: f64,
    /// What happened.
    pub title: String,
    /// Its details (an id, an address, a reason); empty when none.
    pub detail: String,
    /// A failure.
    pub failed: bool,
}

/// The label of a completed forward step (the API's step names).
fn step_title(step: &str) -> &str {
    match step {
        "mint_join_token" => "Join token minted",
        "render_user_data" => "Cloud-init user-data rendered",
        "create_server" => "Server created",
        "wait_running" => "Server running",
        "installing" => "Install finished",
        "enrolling" => "Agent enrolled",
        other => other,
    }
}

/// The timeline of `p`: steps and stages merged by time (a step first when both happened
/// at once: the step is what moved the provision to the stage).
pub fn timeline(p: &Provision) -> Vec<Entry> {
    let mut entries: Vec<(f64, u8, Entry)> = Vec::new();
    for s in &p.steps {
        let Some(at) = s.at.as_ref().map(timestamp_ms) else {
            continue;
        };
        let detail = match s.step.as_str() {
            "create_server" if !p.server_id.is_empty() => format!("server id {}", p.server_id),
            "wait_running" if !p.ip_address.is_empty() => format!("address {}", p.ip_address),
            "enrolling" if !p.node_id.is_empty() => format!("node {}", p.node_id),
            _ => String::new(),
        };
        let title = step_title(&s.step).to_owned();
        entries.push((
            at,
            0,
            Entry {
                at_ms: at,
                title,
                detail,
                failed: false,
            },
        ));
    }
    for t in &p.stages {
        let Some(at) = t.entered_at.as_ref().map(timestamp_ms) else {
            continue;
        };
        let entry = match t.status() {
            ProvisionStatus::Failed => Entry {
                at_ms: at,
                title: format!(
                    "Failed while {}",
                    status_label(p.failed_phase()).to_lowercase()
                ),
                detail: failure_detail(p),
                failed: true,
            },
            status => Entry {
                at_ms: at,
                title: status_label(status).to_owned(),
                detail: String::new(),
                failed: false,
            },
        };
        entries.push((at, 1, entry));
    }
    entries.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    entries.into_iter().map(|(_, _, e)| e).collect()
}

/// The failure reason with the provider's error code, when there is one.
pub fn failure_detail(p: &Provision) -> String {
    match p.provider_error_code.as_str() {
        "" => p.failure_reason.clone(),
        code => format!("{} (provider code {code})", p.failure_reason),
    }
}

/// What became of one resource in a cleanup, in words, and whether that is a problem:
/// `deleted` and `kept` say it for this resource.
pub fn cleanup_text(result: Option<&CleanupResult>, deleted: &str, kept: &str) -> (String, bool) {
    let Some(r) = result else {
        return ("Unknown".into(), false);
    };
    match r.outcome() {
        CleanupOutcome::NotNeeded => ("Nothing to delete: none was created".into(), false),
        CleanupOutcome::Pending => ("Cleanup under way".into(), false),
        CleanupOutcome::Deleted => (deleted.to_owned(), false),
        CleanupOutcome::Kept => (kept.to_owned(), false),
        CleanupOutcome::Failed => (
            format!(
                "Not deleted: {}. The orphan sweeper will find it.",
                r.reason
            ),
            true,
        ),
        CleanupOutcome::Unspecified => ("Unknown".into(), false),
    }
}

#[cfg(test)]
mod tests {
    use levelrail_proto::provisioner::v1::{StageTiming, StepDone};
    use prost_types::Timestamp;

    use super::*;

    fn ts(s: i64) -> Option<Timestamp> {
        Some(Timestamp {
            seconds: s,
            nanos: 0,
        })
    }

    #[test]
    fn steps_and_stages_merge_in_time_order_with_the_failure_last() {
        use ProvisionStatus::*;
        let stage = |s: ProvisionStatus, t| StageTiming {
            status: s as i32,
            entered_at: ts(t),
        };
        let step = |s: &str, t| StepDone {
            step: s.into(),
            at: ts(t),
        };
        let mut p = Provision {
            stages: vec![
                stage(Creating, 100),
                stage(Booting, 104),
                stage(Failed, 130),
            ],
            steps: vec![
                step("mint_join_token", 100),
                step("render_user_data", 101),
                step("create_server", 104),
            ],
            server_id: "4711".into(),
            failure_reason: "the server never started".into(),
            provider_error_code: "timeout".into(),
            ..Default::default()
        };
        p.set_failed_phase(Booting);

        let titles: Vec<(String, String)> = timeline(&p)
            .into_iter()
            .map(|e| (e.title, e.detail))
            .collect();

        let t = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            titles,
            [
                t("Join token minted", ""),
                t("Creating server", ""),
                t("Cloud-init user-data rendered", ""),
                t("Server created", "server id 4711"),
                t("Booting", ""),
                t(
                    "Failed while booting",
                    "the server never started (provider code timeout)"
                ),
            ]
        );
        assert!(timeline(&p).last().is_some_and(|e| e.failed));
    }

    #[test]
    fn a_cleanup_that_gave_up_says_why_and_is_flagged() {
        let mut r = CleanupResult {
            reason: "403 forbidden".into(),
            ..Default::default()
        };
        r.set_outcome(CleanupOutcome::Failed);
        let (text, bad) = cleanup_text(Some(&r), "Deleted", "Kept");
        assert!(bad);
        assert_eq!(
            text,
            "Not deleted: 403 forbidden. The orphan sweeper will find it."
        );
        r.set_outcome(CleanupOutcome::Deleted);
        assert_eq!(
            cleanup_text(Some(&r), "Deleted", "Kept"),
            ("Deleted".into(), false)
        );
    }
}
