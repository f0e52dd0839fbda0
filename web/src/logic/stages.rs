//! The progress stepper: which of creating → booting → installing → enrolling → ready is
//! done, active, failed or pending, and how long each took, from a provision's status and
//! its stage timings.
use levelrail_proto::provisioner::v1::{InstallStep, Provision, ProvisionStatus};

/// The stages shown by the stepper, in order.
pub const STAGES: [ProvisionStatus; 5] = [
    ProvisionStatus::Creating,
    ProvisionStatus::Booting,
    ProvisionStatus::Installing,
    ProvisionStatus::Enrolling,
    ProvisionStatus::Ready,
];

/// How a stage is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    /// Finished.
    Done,
    /// The provision is in this stage now.
    Active,
    /// The provision failed in this stage.
    Failed,
    /// Not reached (yet, or ever after a failure).
    Pending,
}

impl StageState {
    /// The `data-state` attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Active => "active",
            Self::Failed => "failed",
            Self::Pending => "pending",
        }
    }
}

/// One row of the stepper.
#[derive(Debug, Clone, PartialEq)]
pub struct StageView {
    /// Which stage.
    pub stage: ProvisionStatus,
    /// How to draw it.
    pub state: StageState,
    /// Milliseconds spent in the stage (so far, when active); `None` when never entered.
    pub elapsed_ms: Option<f64>,
}

/// Milliseconds since the epoch of a protobuf timestamp.
pub fn timestamp_ms(t: &prost_types::Timestamp) -> f64 {
    t.seconds as f64 * 1000.0 + f64::from(t.nanos) / 1_000_000.0
}

fn position(status: ProvisionStatus) -> Option<usize> {
    STAGES.iter().position(|s| *s == status)
}

/// Whether a provision has reached `ready` or `failed` (its watch stream then ends).
pub fn is_terminal(p: &Provision) -> bool {
    matches!(p.status(), ProvisionStatus::Ready | ProvisionStatus::Failed)
}

/// The stepper rows for `p` at `now_ms` (browser clock, for the active stage).
pub fn stage_views(p: &Provision, now_ms: f64) -> Vec<StageView> {
    let status = p.status();
    // The stage the provision is in, or failed in.
    let current = match status {
        ProvisionStatus::Failed => position(p.failed_phase()).or_else(|| last_entered(p)),
        s => position(s),
    };
    let mut timings: Vec<(ProvisionStatus, f64)> = p
        .stages
        .iter()
        .filter_map(|t| Some((t.status(), timestamp_ms(t.entered_at.as_ref()?))))
        .collect();
    timings.sort_by(|a, b| a.1.total_cmp(&b.1));
    let end_of_last = match status {
        ProvisionStatus::Failed => p.updated_at.as_ref().map(timestamp_ms),
        ProvisionStatus::Ready => None,
        _ => Some(now_ms),
    };
    STAGES
        .iter()
        .enumerate()
        .map(|(i, &stage)| {
            let state = match (status, current) {
                (ProvisionStatus::Ready, _) => StageState::Done,
                (ProvisionStatus::Failed, Some(c)) if i == c => StageState::Failed,
                (_, Some(c)) if i < c => StageState::Done,
                (ProvisionStatus::Failed, _) => StageState::Pending,
                (_, Some(c)) if i == c => StageState::Active,
                _ => StageState::Pending,
            };
            let elapsed_ms = elapsed(&timings, stage, end_of_last);
            StageView {
                stage,
                state,
                elapsed_ms,
            }
        })
        .collect()
}

/// The last stepper stage the timings show as entered.
fn last_entered(p: &Provision) -> Option<usize> {
    p.stages.iter().filter_map(|t| position(t.status())).max()
}

/// Time from entering `stage` to entering whatever came next (or `end` for the last).
fn elapsed(
    timings: &[(ProvisionStatus, f64)],
    stage: ProvisionStatus,
    end: Option<f64>,
) -> Option<f64> {
    if stage == ProvisionStatus::Ready {
        return None;
    }
    let i = timings.iter().position(|(s, _)| *s == stage)?;
    let start = timings[i].1;
    let stop = timings.get(i + 1).map(|t| t.1).or(end)?;
    Some((stop - start).max(0.0))
}

/// Total time from the first stage to ready / failed / now.
pub fn total_ms(p: &Provision, now_ms: f64) -> Option<f64> {
    let start = p
        .stages
        .iter()
        .filter_map(|t| t.entered_at.as_ref().map(timestamp_ms))
        .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.min(t))))
        .or_else(|| p.created_at.as_ref().map(timestamp_ms))?;
    let end = match is_terminal(p) {
        true => p.updated_at.as_ref().map(timestamp_ms)?,
        false => now_ms,
    };
    Some((end - start).max(0.0))
}

/// Human label of a stage or status.
pub fn status_label(s: ProvisionStatus) -> &'static str {
    match s {
        ProvisionStatus::Unspecified => "Unknown",
        ProvisionStatus::Creating => "Creating server",
        ProvisionStatus::Booting => "Booting",
        ProvisionStatus::Installing => "Installing",
        ProvisionStatus::Enrolling => "Enrolling",
        ProvisionStatus::Ready => "Ready",
        ProvisionStatus::Failed => "Failed",
    }
}

/// Lowercase status word (`creating`, …) for pills and `data-status`.
pub fn status_word(s: ProvisionStatus) -> &'static str {
    match s {
        ProvisionStatus::Unspecified => "unknown",
        ProvisionStatus::Creating => "creating",
        ProvisionStatus::Booting => "booting",
        ProvisionStatus::Installing => "installing",
        ProvisionStatus::Enrolling => "enrolling",
        ProvisionStatus::Ready => "ready",
        ProvisionStatus::Failed => "failed",
    }
}

/// The install sub-steps in order, with their labels.
pub const INSTALL_STEPS: [(InstallStep, &str); 3] = [
    (InstallStep::DockerReady, "Docker ready"),
    (InstallStep::AgentVerified, "Agent downloaded and verified"),
    (InstallStep::AgentStarted, "Agent started"),
];

/// Whether install sub-step `step` has been reported, given the latest reported one.
pub fn install_step_done(latest: InstallStep, step: InstallStep) -> bool {
    latest != InstallStep::Unspecified && (latest as i32) >= (step as i32)
}

#[cfg(test)]
mod tests {
    use levelrail_proto::provisioner::v1::StageTiming;
    use prost_types::Timestamp;

    use super::*;

    fn ts(s: i64) -> Option<Timestamp> {
        Some(Timestamp {
            seconds: s,
            nanos: 0,
        })
    }

    fn provision(status: ProvisionStatus, entered: &[(ProvisionStatus, i64)]) -> Provision {
        let mut p = Provision {
            stages: entered
                .iter()
                .map(|(s, t)| StageTiming {
                    status: *s as i32,
                    entered_at: ts(*t),
                })
                .collect(),
            created_at: ts(100),
            updated_at: ts(entered.last().map_or(100, |e| e.1)),
            ..Default::default()
        };
        p.set_status(status);
        p
    }

    fn states(v: &[StageView]) -> Vec<&'static str> {
        v.iter().map(|s| s.state.as_str()).collect()
    }

    #[test]
    fn an_active_stage_counts_up_to_now_and_earlier_stages_are_done() {
        use ProvisionStatus::*;
        let p = provision(Booting, &[(Creating, 100), (Booting, 104)]);
        let v = stage_views(&p, 110_000.0);
        assert_eq!(
            states(&v),
            ["done", "active", "pending", "pending", "pending"]
        );
        assert_eq!(v[0].elapsed_ms, Some(4000.0));
        assert_eq!(v[1].elapsed_ms, Some(6000.0));
        assert_eq!(v[2].elapsed_ms, None);
    }

    #[test]
    fn a_ready_provision_has_every_stage_done_with_fixed_times() {
        use ProvisionStatus::*;
        let p = provision(
            Ready,
            &[
                (Creating, 100),
                (Booting, 102),
                (Installing, 105),
                (Enrolling, 109),
                (Ready, 110),
            ],
        );
        let v = stage_views(&p, 999_999.0);
        assert_eq!(states(&v), ["done"; 5]);
        assert_eq!(v[2].elapsed_ms, Some(4000.0));
        assert_eq!(v[3].elapsed_ms, Some(1000.0));
        assert_eq!(total_ms(&p, 0.0), Some(10_000.0));
    }

    #[test]
    fn a_failed_provision_marks_its_failed_phase() {
        use ProvisionStatus::*;
        let mut p = provision(Failed, &[(Creating, 100), (Booting, 103), (Failed, 108)]);
        p.set_failed_phase(Booting);
        let v = stage_views(&p, 999_999.0);
        assert_eq!(
            states(&v),
            ["done", "failed", "pending", "pending", "pending"]
        );
        assert_eq!(v[1].elapsed_ms, Some(5000.0));
        assert!(is_terminal(&p));
    }

    #[test]
    fn install_sub_steps_are_done_up_to_the_latest_report() {
        assert!(install_step_done(
            InstallStep::AgentVerified,
            InstallStep::DockerReady
        ));
        assert!(!install_step_done(
            InstallStep::AgentVerified,
            InstallStep::AgentStarted
        ));
        assert!(!install_step_done(
            InstallStep::Unspecified,
            InstallStep::DockerReady
        ));
    }
}
