//! Fault injection for workflow tests (omicron's saga test helpers in spirit): a hook the
//! driver consults before and after each step, between a provider call and the write that
//! records it, and around each undo action. Production workflows have no hook.
use std::fmt::Debug;

use crate::model::provision::{ProvisionId, SagaStep};

/// Where the driver is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum HookPoint {
    /// About to run a forward step.
    Before(SagaStep),
    /// A provider call of the step returned; its result is not recorded yet.
    AfterCall(SagaStep),
    /// The step's result is recorded.
    After(SagaStep),
    /// An undo action (`create_server`, `mint_join_token`) completed.
    Undo(SagaStep),
}

/// What the driver does there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code, reason = "only tests inject faults"))]
pub(crate) enum HookAction {
    /// Go on.
    Continue,
    /// Fail the step (at `Before`).
    Fail,
    /// Stop as if the process died (state persisted so far stays, lease included).
    Crash,
    /// Run the step (or undo action) again, as if its recorded result had been lost.
    Replay,
}

/// A test's script of faults.
pub(crate) trait StepHook: Send + Sync + Debug {
    /// The action at `point` of provision `id`.
    fn at(&self, id: &ProvisionId, point: HookPoint) -> HookAction;
}
