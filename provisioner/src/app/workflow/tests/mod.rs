//! Workflow tests (omicron's saga test discipline): a failure injected at every step
//! unwinds to a clean slate, every step and every undo can run twice, a crash after any
//! step resumes to exactly one server, timeouts and cancels clean up, and any number of
//! watchers share one driver. They run on the memory store with Tokio's paused clock (the
//! provisioner's clock follows it), against an in-memory fake cloud.
mod backends;
mod crash;
pub(crate) mod fake;
mod fallback;
pub(crate) mod granted;
pub(crate) mod harness;
mod retries;
mod saga;
mod sweeper;
mod unwind;
mod watch;
