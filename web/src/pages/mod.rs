//! One file per route.
pub mod api_tokens;
pub mod audit_log;
pub mod node_detail;
pub mod node_providers;
pub mod nodes;
pub mod not_found;
pub mod provision_detail;
pub mod sign_in;

pub use api_tokens::ApiTokensPage;
pub use audit_log::AuditLogPage;
pub use node_detail::NodeDetailPage;
pub use node_providers::NodeProvidersPage;
pub use nodes::NodesPage;
pub use not_found::NotFoundPage;
pub use provision_detail::ProvisionDetailPage;
pub use sign_in::SignInPage;
