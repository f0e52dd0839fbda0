//! The ports the application layer works over: one storage trait per table group (the
//! store implements them in SQL; the tests also have an in-memory double), the clock, the
//! change feed (`EnrollmentListener`), and the storage error type. No database type
//! crosses them.
mod audit;
mod changes;
mod error;
mod nodes;
mod orphans;
mod provisions;
#[cfg(feature = "sql")]
mod sql;

use std::sync::Arc;

use time::OffsetDateTime;

pub use audit::AuditStore;
pub use changes::{Change, ChangeFeed, EnrollmentListener, SharedStateStore};
pub use error::StoreError;
pub use nodes::NodeStore;
pub use orphans::OrphanStore;
pub use provisions::{PROVISIONS_PER_READ, ProvisionStore, ProvisionerStore, WaitView};

/// The source of "now" (replaceable in tests).
pub type Clock = Arc<dyn Fn() -> OffsetDateTime + Send + Sync>;
