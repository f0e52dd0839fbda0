//! The five cloud providers a credential can be stored for: the workspace's one provider
//! identifier (its declaration order is the fixed display order of the provider cards).
pub use levelrail_types::{ProviderId, UnknownProvider};
