//! Provisions: the validated request, the status machine, the saga log the workflow
//! persists, the operator's view of a provision and the sealing of its join token. Nothing
//! here imports the proto crate.
mod duration;
mod error;
mod id;
mod placement;
mod progress;
mod record;
mod request;
mod saga;
mod sealing;
mod status;
mod view;

pub use duration::{format_duration, parse_go_duration};
pub use error::ProvisionError;
pub use id::{PROVISION_ID_PREFIX, ProvisionId};
pub use placement::{MAX_FALLBACKS, Placement, PlacementOutcome, choices, current};
pub use progress::{PROGRESS_CREDENTIAL_PREFIX, ProgressCredential, is_progress_credential};
pub use record::{ClaimHolder, InsertProvisionError, PageCursor, ProvisionRecord};
pub use request::catalog_id;
pub use request::{NewProvision, ProvisionInput, host_port};
pub use saga::{FailureNote, SagaLog, SagaStep, StepOutcome, stamp};
pub use sealing::{SealError, SealingKey};
pub use status::{ProvisionStatus, StageTiming};
pub use view::{Cleanup, CleanupOutcome, Provision, StepDone};
