//! The saga's persisted state: the step to run next (`saga_step`) and a log (`saga`, JSON)
//! of what each completed step observed, how often the server create was attempted, the
//! failure being unwound and which undo actions already ran. A restarted control plane
//! continues from exactly this.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A step of the provision saga, in execution order; `Unwinding` and `Done` are the two
/// states after the forward steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SagaStep {
    /// Mint the provision's single-use join token (60 min, bound to name and provision).
    MintJoinToken,
    /// Render the cloud-init user-data (checks every input).
    RenderUserData,
    /// Create the server at the provider (idempotent by provision id).
    CreateServer,
    /// Poll the provider until the server runs.
    WaitRunning,
    /// Follow cloud-init's progress reports.
    Installing,
    /// Wait for the agent to enroll.
    Enrolling,
    /// A step failed: undo the completed ones in reverse.
    Unwinding,
    /// Nothing left to do.
    Done,
}

impl SagaStep {
    /// Every step.
    pub const ALL: [SagaStep; 8] = [
        SagaStep::MintJoinToken,
        SagaStep::RenderUserData,
        SagaStep::CreateServer,
        SagaStep::WaitRunning,
        SagaStep::Installing,
        SagaStep::Enrolling,
        SagaStep::Unwinding,
        SagaStep::Done,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            SagaStep::MintJoinToken => "mint_join_token",
            SagaStep::RenderUserData => "render_user_data",
            SagaStep::CreateServer => "create_server",
            SagaStep::WaitRunning => "wait_running",
            SagaStep::Installing => "installing",
            SagaStep::Enrolling => "enrolling",
            SagaStep::Unwinding => "unwinding",
            SagaStep::Done => "done",
        }
    }

    /// The step a stored name denotes.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// What one completed step observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepOutcome {
    /// The step's stored name.
    pub step: String,
    /// When it completed (RFC 3339).
    pub at: String,
    /// What it saw (`token_id`, `server_id`, `ip`, …); never a secret.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub observed: BTreeMap<String, String>,
}

/// The failure a provision is being unwound for (copied to the row's columns once the
/// cleanup is done and the provision becomes `failed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureNote {
    /// The status the provision was in (`creating`, `booting`, …).
    pub phase: String,
    /// One clean line.
    pub reason: String,
    /// The provider's error code, when a provider call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Cancelled by the operator: resources go even with `keep_on_failure`.
    #[serde(default)]
    pub cancelled: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SagaLog {
    /// Completed forward steps, in order.
    #[serde(default)]
    pub completed: Vec<StepOutcome>,
    /// Server creates started (persisted before each call): a non-zero count means a server
    /// may exist even if no id was ever recorded.
    #[serde(default)]
    pub create_attempts: u32,
    /// The failure being unwound, once a step failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureNote>,
    /// Undo actions that completed (step names).
    #[serde(default)]
    pub undone: Vec<String>,
    /// Undo actions that gave up, with a clean reason each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cleanup_errors: Vec<String>,
    /// Transient provider failures retried so far (the per-provision retry budget, kept
    /// across restarts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// The ordered region/size choices and what became of each (empty in rows written
    /// before choices existed: the row's region and size are then the only choice).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<super::Placement>,
    /// The regions and the sizes asked for, each in the order asked (the first is the
    /// first choice): what a retry asks again. Empty in rows written before retries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked_regions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked_sizes: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `at` as the saga log records times (RFC 3339).
pub fn stamp(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl SagaLog {
    /// Whether `step` completed.
    pub fn is_completed(&self, step: SagaStep) -> bool {
        self.completed.iter().any(|o| o.step == step.as_str())
    }

    /// Records that `step` completed at `at`, observing `observed` (once; a repeat replaces
    /// the earlier record).
    pub fn complete(&mut self, step: SagaStep, at: String, observed: &[(&str, &str)]) {
        self.completed.retain(|o| o.step != step.as_str());
        self.completed.push(StepOutcome {
            step: step.as_str().to_owned(),
            at,
            observed: observed
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        });
    }

    /// Forgets that `step` completed (a replayed step).
    pub fn forget(&mut self, step: SagaStep) {
        self.completed.retain(|o| o.step != step.as_str());
    }

    /// What `step` observed under `key`.
    pub fn observed(&self, step: SagaStep, key: &str) -> Option<&str> {
        self.completed
            .iter()
            .find(|o| o.step == step.as_str())
            .and_then(|o| o.observed.get(key))
            .map(String::as_str)
    }

    /// Whether the undo action `name` completed.
    pub fn is_undone(&self, name: &str) -> bool {
        self.undone.iter().any(|u| u == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_names_round_trip() {
        for s in SagaStep::ALL {
            assert_eq!(SagaStep::from_name(s.as_str()), Some(s));
        }
    }

    #[test]
    fn the_log_round_trips_through_json_and_old_logs_read_with_defaults() {
        let mut log = SagaLog::default();
        log.complete(SagaStep::CreateServer, "t".into(), &[("server_id", "42")]);
        log.create_attempts = 1;
        let json = serde_json::to_string(&log).expect("serialize");
        let back: SagaLog = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, log);
        assert_eq!(
            back.observed(SagaStep::CreateServer, "server_id"),
            Some("42")
        );
        let empty: SagaLog = serde_json::from_str("{}").expect("empty log");
        assert_eq!(empty, SagaLog::default());
    }

    #[test]
    fn completing_a_step_twice_keeps_one_record() {
        let mut log = SagaLog::default();
        log.complete(
            SagaStep::MintJoinToken,
            "a".into(),
            &[("token_id", "njt_1")],
        );
        log.complete(
            SagaStep::MintJoinToken,
            "b".into(),
            &[("token_id", "njt_2")],
        );
        assert_eq!(log.completed.len(), 1);
        assert_eq!(
            log.observed(SagaStep::MintJoinToken, "token_id"),
            Some("njt_2")
        );
    }
}
