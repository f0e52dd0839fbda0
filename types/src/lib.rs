//! Types every layer shares and that compile for wasm32 too (no I/O, no async): the one
//! provider identifier, used by the credentials service, the provisioner, the provider
//! clients and the server's wiring alike, so a provider is named the same way everywhere
//! and no layer maps one provider enum onto another; and the shape of each cloud's credential (and a token's rule), which the
//! credentials service checks and the CLI and web form ask for; the one node-name rule, which the
//! server, the CLI and the web form all check; and the CPU architectures of sizes, agent
//! binaries and nodes; and the precision every store keeps a timestamp at; and the scopes of API tokens, with the scope each API method needs; and the permissions a credential's verification checks.
mod api_scope;
mod arch;
mod credential_shape;
mod name;
mod permission;
mod provider;
mod stored_time;

pub use api_scope::{ApiScope, UnknownScope, method_of};
pub use arch::CpuArch;
pub use credential_shape::{CredentialShape, TokenChars, TokenShape};

pub use name::{MAX_NODE_NAME_LEN, NameRule, check_node_name};
pub use permission::PermissionCheck;
pub use provider::{ProviderId, UnknownProvider};
pub use stored_time::to_stored_precision;
