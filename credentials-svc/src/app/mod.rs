//! The credentials service's operations: the `Credentials` state struct the gRPC layer
//! calls (store, verify, issue grants, rotate the master key), over the model's port, the
//! broker's token exchanges and the crypto layer.
pub mod api_token;
pub mod credentials;
pub mod keys;
pub mod sealed_files;

pub use credentials::{BrokerState, Credentials};
