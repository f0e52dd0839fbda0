//! The provision status machine: `creating → booting → installing → enrolling → ready`,
//! and `failed` from any state that is not terminal. Stages may be skipped forward (an agent
//! can enroll before its server was ever polled as running) but never go back.
use time::OffsetDateTime;

/// Where a provision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProvisionStatus {
    /// Minting the token, rendering the cloud-init and creating the server.
    Creating,
    /// The server exists; waiting for the provider to report it running.
    Booting,
    /// The server runs its cloud-init (Docker, agent image, agent).
    Installing,
    /// The agent started; waiting for it to enroll.
    Enrolling,
    /// The node enrolled. Terminal.
    Ready,
    /// The provision failed and was cleaned up. Terminal.
    Failed,
}

impl ProvisionStatus {
    /// Every status, in order.
    pub const ALL: [ProvisionStatus; 6] = [
        ProvisionStatus::Creating,
        ProvisionStatus::Booting,
        ProvisionStatus::Installing,
        ProvisionStatus::Enrolling,
        ProvisionStatus::Ready,
        ProvisionStatus::Failed,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisionStatus::Creating => "creating",
            ProvisionStatus::Booting => "booting",
            ProvisionStatus::Installing => "installing",
            ProvisionStatus::Enrolling => "enrolling",
            ProvisionStatus::Ready => "ready",
            ProvisionStatus::Failed => "failed",
        }
    }

    /// The status a stored name denotes.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// `ready` or `failed`: nothing changes any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, ProvisionStatus::Ready | ProvisionStatus::Failed)
    }

    /// Whether `self → next` is legal: forward (stages may be skipped) or to `failed`, and
    /// only from a status that is not terminal. Staying put is legal.
    pub fn can_become(self, next: ProvisionStatus) -> bool {
        self == next || (!self.is_terminal() && (next == ProvisionStatus::Failed || next > self))
    }
}

/// When a provision entered a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageTiming {
    pub status: ProvisionStatus,
    /// When it was entered.
    pub entered_at: OffsetDateTime,
}

#[cfg(test)]
mod tests {
    use super::ProvisionStatus::*;
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in ProvisionStatus::ALL {
            assert_eq!(ProvisionStatus::from_name(s.as_str()), Some(s));
        }
        assert_eq!(ProvisionStatus::from_name("pending"), None);
    }

    #[test]
    fn only_forward_moves_and_failing_are_legal_and_terminal_states_stay() {
        assert!(Creating.can_become(Booting));
        assert!(
            Booting.can_become(Ready),
            "an early enrollment skips stages"
        );
        assert!(Installing.can_become(Failed));
        assert!(!Installing.can_become(Booting), "no going back");
        assert!(!Ready.can_become(Failed));
        assert!(!Failed.can_become(Creating));
        assert!(Ready.can_become(Ready));
    }

    #[test]
    fn any_sequence_of_legal_moves_ends_in_at_most_one_terminal_state() {
        // Exhaustive over all pairs: from a terminal state nothing but staying is legal.
        for a in ProvisionStatus::ALL {
            for b in ProvisionStatus::ALL {
                if a.is_terminal() && a != b {
                    assert!(!a.can_become(b), "{a:?} -> {b:?}");
                }
            }
        }
    }
}
