//! Persistence of orphaned servers.
//!
//! One port (`model::ports::OrphanStore`) implemented in SQL by the same [`super::SqlStore`] as the
//! node store (every write is one statement: an upsert on the server key, or a conditional
//! `UPDATE … RETURNING`, so replicas that find the same server, or retry the same orphan,
//! agree on one row), and one conformance suite (`conformance::run`).
//!
//! Invariants the store keeps:
//! - one row per server: `(provider, server key)` is unique, the key being the server id or,
//!   without one, the provision id; recording a known server again returns its row (moved
//!   back to `pending` when it was `deleted`, since the server showed up again);
//! - `adopted` and `deleted` are left only by a new sighting (`deleted` → `pending`);
//! - an attempt is counted only while the orphan is in the state its caller saw.
pub mod conformance;
#[cfg(test)]
mod memory;
mod sql;
