//! Transport only: the gRPC service implementations, proto↔model conversion and the
//! mapping of the model's errors to `tonic::Status`.
mod api_tokens;
pub mod auth;
mod broker;
mod convert;
mod credentials;
mod status;

pub use api_tokens::{ApiTokensGrpc, digest_from_proto};
pub use broker::BrokerService;
pub use convert::input_from_proto as credential_input;
pub use credentials::CredentialsGrpc;
