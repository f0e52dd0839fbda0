//! Non-secret identity of a stored credential (what the provider card shows) and the
//! recorded outcome of a verification probe.
use levelrail_types::PermissionCheck;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Who a credential acts as. Holds no secret material by construction: it is stored in
/// plaintext beside the envelope and returned by `ListProviders`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CredentialIdentity {
    /// A bare API token: nothing about the token is shown.
    Token {
        /// Project or account learnt by verification.
        #[serde(default)]
        account: String,
    },
    /// AWS static key or ambient identity.
    Aws {
        /// `static` or `ambient`.
        mode: String,
        /// Last four characters of the access key id (empty when ambient).
        access_key_id_last4: String,
        /// Default region.
        region: String,
        /// Role assumed through STS (may be empty).
        role_arn: String,
        /// A session token is stored with the key.
        has_session_token: bool,
        /// Account learnt by verification.
        #[serde(default)]
        account: String,
    },
    /// Azure service principal.
    Azure {
        /// Directory (tenant) GUID.
        tenant_id: String,
        /// Application (client) GUID.
        client_id: String,
        /// Subscription GUID.
        subscription_id: String,
        /// Resource group the VMs are created in.
        resource_group: String,
        /// `client_secret` or `federated_token_file`.
        auth_mode: String,
        /// Path of the federated token file (empty for client secret).
        federated_token_file: String,
    },
    /// GCP service-account key.
    Gcp {
        /// The key's `project_id`.
        project_id: String,
        /// The key's `client_email`.
        client_email: String,
        /// The key's `private_key_id` (an identifier, not key material).
        private_key_id: String,
    },
}

/// The outcome of a capability probe, recorded for the credential it was run against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Whether the probe proved the credential can create resources.
    pub ok: bool,
    /// When the probe ran.
    pub checked_at: OffsetDateTime,
    /// One line; never contains secret material.
    pub message: String,
    /// The provider's error code when it refused.
    pub provider_code: String,
    /// Account / project the credential belongs to.
    pub account: String,
    /// Each permission the probe checked, and whether the credential holds it.
    pub permissions: Vec<PermissionCheck>,
}
