//! Strict validation of operator-supplied cloud credentials (reliability goal V2): raw input
//! in, a validated secret payload plus its non-secret identity out, or one field error that
//! names the field path and never repeats the submitted value.
//!
//! Every check here is hand-written (no regex crate); the per-provider rules live in the
//! submodules, the shared JSON and character-class helpers in `json` and `text`.
use std::fmt;

use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use crate::{CredentialIdentity, ProviderId};

mod aws;
mod azure;
mod gcp;
mod json;
mod plaintext;
mod text;
mod token;

pub use text::shown_key;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

/// Largest accepted input string, in bytes, checked before any parsing.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Deepest accepted JSON nesting, checked by a byte scan before serde_json runs.
pub const MAX_JSON_DEPTH: usize = 32;

/// The marker `Debug` prints in place of secret or raw operator-typed values.
const REDACTED: &str = "[REDACTED]";

/// A validation failure on one input field.
///
/// `message` describes the problem only; it never contains the submitted value or any part
/// of it, because the value may be a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// Dotted path of the offending field, e.g. `aws.region` or `azure.json.tenant_id`.
    pub field: String,
    /// What is wrong, without the value.
    pub message: String,
}

impl FieldError {
    /// An error on `field` with a value-free `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Raw operator input, with the secrets already wrapped. Nothing here has been validated.
pub enum CredentialInput {
    /// A bare API token, for a cloud whose credential is one ([`levelrail_types::CredentialShape::Token`]).
    Token {
        /// Which provider the token is for.
        provider: ProviderId,
        /// The token as typed or piped; surrounding ASCII whitespace is trimmed.
        token: SecretString,
    },
    /// AWS static key (optionally temporary, optionally assuming a role) or ambient identity.
    Aws {
        /// Access key id (`AKIA…`/`ASIA…`); empty with ambient credentials.
        access_key_id: String,
        /// Secret access key; empty with ambient credentials.
        secret_access_key: SecretString,
        /// Session token for temporary (`ASIA…`) keys; otherwise empty.
        session_token: SecretString,
        /// Default region; empty means `us-east-1`.
        region: String,
        /// IAM role to assume through STS; may be empty.
        role_arn: String,
        /// Use the control plane's own AWS identity instead of a stored key.
        use_ambient_credentials: bool,
    },
    /// The Azure service-principal JSON object.
    AzureJson(SecretString),
    /// The GCP service-account key JSON, as pasted.
    GcpJson(SecretString),
    /// The GCP credential JSON with the operator's explicit project id: required for an
    /// `external_account` file (workload identity federation), ignored for a key.
    GcpJsonWithProject {
        /// The JSON document.
        json: SecretString,
        project_id: String,
    },
}

impl CredentialInput {
    /// The provider this input is for.
    pub fn provider(&self) -> ProviderId {
        match self {
            CredentialInput::Token { provider, .. } => *provider,
            CredentialInput::Aws { .. } => ProviderId::Aws,
            CredentialInput::AzureJson(_) => ProviderId::Azure,
            CredentialInput::GcpJson(_) | CredentialInput::GcpJsonWithProject { .. } => {
                ProviderId::Gcp
            }
        }
    }
}

impl fmt::Debug for CredentialInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Raw input is unvalidated: a secret may sit in any field, so every string is hidden.
        match self {
            CredentialInput::Token { provider, .. } => f
                .debug_struct("Token")
                .field("provider", provider)
                .field("token", &Redacted)
                .finish(),
            CredentialInput::Aws {
                use_ambient_credentials,
                ..
            } => f
                .debug_struct("Aws")
                .field("access_key_id", &Redacted)
                .field("secret_access_key", &Redacted)
                .field("session_token", &Redacted)
                .field("region", &Redacted)
                .field("role_arn", &Redacted)
                .field("use_ambient_credentials", use_ambient_credentials)
                .finish(),
            CredentialInput::AzureJson(_) => f.debug_tuple("AzureJson").field(&Redacted).finish(),
            CredentialInput::GcpJson(_) => f.debug_tuple("GcpJson").field(&Redacted).finish(),
            CredentialInput::GcpJsonWithProject { .. } => f
                .debug_struct("GcpJsonWithProject")
                .field("json", &Redacted)
                .field("project_id", &Redacted)
                .finish(),
        }
    }
}

/// A validated credential: the secret payload to encrypt and the identity to show.
pub struct ParsedCredential {
    /// The secret payload; encrypt `secret.to_plaintext()`.
    pub secret: CredentialSecret,
    /// Who the credential acts as; holds no secret material.
    pub identity: CredentialIdentity,
}

impl fmt::Debug for ParsedCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedCredential")
            .field("provider", &self.secret.provider())
            .field("secret", &Redacted)
            .field("identity", &self.identity)
            .finish()
    }
}

/// The validated secret payload of one credential.
pub enum CredentialSecret {
    /// A bare API token ([`levelrail_types::CredentialShape::Token`]).
    Token {
        /// A cloud whose credential is a token.
        provider: ProviderId,
        /// The trimmed token.
        token: SecretString,
    },
    /// AWS static key or ambient identity.
    Aws {
        /// Access key id; empty when `ambient`.
        access_key_id: String,
        /// Secret access key; `None` when `ambient`.
        secret_access_key: Option<SecretString>,
        /// Session token of a temporary key.
        session_token: Option<SecretString>,
        /// Default region (never empty).
        region: String,
        /// Role assumed through STS; empty for none.
        role_arn: String,
        /// Use the control plane's own AWS identity.
        ambient: bool,
    },
    /// Azure service principal.
    Azure {
        /// Directory (tenant) GUID, lowercase.
        tenant_id: String,
        /// Application (client) GUID, lowercase.
        client_id: String,
        /// Client secret; when set, the federated token file is not stored.
        client_secret: Option<SecretString>,
        /// Absolute path of a federated (OIDC) token file.
        federated_token_file: Option<String>,
        /// Subscription GUID, lowercase.
        subscription_id: String,
        /// Resource group the VMs are created in.
        resource_group: String,
    },
    /// GCP service-account key.
    Gcp {
        /// The key's `project_id`.
        project_id: String,
        /// The key's `client_email`.
        client_email: String,
        /// The key's `private_key_id` (an identifier, not key material).
        private_key_id: String,
        /// The PEM private key.
        private_key: SecretString,
        /// One of the two pinned Google token endpoints.
        token_uri: String,
        /// The original key JSON, as pasted.
        key_json: SecretString,
    },
    /// GCP workload identity federation (`external_account`, file-sourced subject token).
    GcpExternal {
        /// The operator's explicit project.
        project_id: String,
        /// The workload identity pool provider (STS `audience`).
        audience: String,
        /// The subject token's type (`urn:ietf:params:oauth:token-type:jwt`, …).
        subject_token_type: String,
        /// The file holding the subject token, re-read for every exchange.
        credential_file: String,
        /// For a JSON token file, the field holding the token; `None`: the file is the token.
        json_field: Option<String>,
        /// The service account impersonated with the federated token, if any.
        impersonate: Option<String>,
        /// The original file, as pasted (no secret in it, but kept like a key).
        key_json: SecretString,
    },
}

impl CredentialSecret {
    /// The provider this secret is for.
    pub fn provider(&self) -> ProviderId {
        match self {
            CredentialSecret::Token { provider, .. } => *provider,
            CredentialSecret::Aws { .. } => ProviderId::Aws,
            CredentialSecret::Azure { .. } => ProviderId::Azure,
            CredentialSecret::Gcp { .. } | CredentialSecret::GcpExternal { .. } => ProviderId::Gcp,
        }
    }

    /// The non-secret identity shown on the provider card (`account` fields start empty).
    pub fn identity(&self) -> CredentialIdentity {
        match self {
            CredentialSecret::Token { .. } => CredentialIdentity::Token {
                account: String::new(),
            },
            CredentialSecret::Aws {
                access_key_id,
                session_token,
                region,
                role_arn,
                ambient,
                ..
            } => CredentialIdentity::Aws {
                mode: if *ambient { "ambient" } else { "static" }.to_owned(),
                access_key_id_last4: last4(access_key_id).to_owned(),
                region: region.clone(),
                role_arn: role_arn.clone(),
                has_session_token: session_token.is_some(),
                account: String::new(),
            },
            CredentialSecret::Azure {
                tenant_id,
                client_id,
                client_secret,
                federated_token_file,
                subscription_id,
                resource_group,
            } => CredentialIdentity::Azure {
                tenant_id: tenant_id.clone(),
                client_id: client_id.clone(),
                subscription_id: subscription_id.clone(),
                resource_group: resource_group.clone(),
                auth_mode: if client_secret.is_some() {
                    "client_secret"
                } else {
                    "federated_token_file"
                }
                .to_owned(),
                federated_token_file: federated_token_file.clone().unwrap_or_default(),
            },
            CredentialSecret::Gcp {
                project_id,
                client_email,
                private_key_id,
                ..
            } => CredentialIdentity::Gcp {
                project_id: project_id.clone(),
                client_email: client_email.clone(),
                private_key_id: private_key_id.clone(),
            },
            // No key: the card shows the impersonated account, if any.
            CredentialSecret::GcpExternal {
                project_id,
                impersonate,
                ..
            } => CredentialIdentity::Gcp {
                project_id: project_id.clone(),
                client_email: impersonate.clone().unwrap_or_default(),
                private_key_id: String::new(),
            },
        }
    }

    /// The versioned JSON document (`"v":1`, `"provider"`, then the fields) to encrypt.
    pub fn to_plaintext(&self) -> Zeroizing<Vec<u8>> {
        plaintext::encode(self)
    }

    /// The strict inverse of [`CredentialSecret::to_plaintext`]; a document written for
    /// another provider is an error.
    pub fn from_plaintext(provider: ProviderId, bytes: &[u8]) -> Result<Self, FieldError> {
        plaintext::decode(provider, bytes)
    }
}

impl fmt::Debug for CredentialSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialSecret::Token { provider, .. } => f
                .debug_struct("Token")
                .field("provider", provider)
                .field("token", &Redacted)
                .finish(),
            CredentialSecret::Aws {
                access_key_id,
                secret_access_key,
                session_token,
                region,
                role_arn,
                ambient,
            } => f
                .debug_struct("Aws")
                .field("access_key_id_last4", &last4(access_key_id))
                .field(
                    "secret_access_key",
                    &secret_access_key.as_ref().map(|_| Redacted),
                )
                .field("session_token", &session_token.as_ref().map(|_| Redacted))
                .field("region", region)
                .field("role_arn", role_arn)
                .field("ambient", ambient)
                .finish(),
            CredentialSecret::Azure {
                tenant_id,
                client_id,
                client_secret,
                federated_token_file,
                subscription_id,
                resource_group,
            } => f
                .debug_struct("Azure")
                .field("tenant_id", tenant_id)
                .field("client_id", client_id)
                .field("client_secret", &client_secret.as_ref().map(|_| Redacted))
                .field("federated_token_file", federated_token_file)
                .field("subscription_id", subscription_id)
                .field("resource_group", resource_group)
                .finish(),
            CredentialSecret::Gcp {
                project_id,
                client_email,
                private_key_id,
                token_uri,
                ..
            } => f
                .debug_struct("Gcp")
                .field("project_id", project_id)
                .field("client_email", client_email)
                .field("private_key_id", private_key_id)
                .field("private_key", &Redacted)
                .field("token_uri", token_uri)
                .field("key_json", &Redacted)
                .finish(),
            CredentialSecret::GcpExternal {
                project_id,
                audience,
                subject_token_type,
                credential_file,
                json_field,
                impersonate,
                ..
            } => f
                .debug_struct("GcpExternal")
                .field("project_id", project_id)
                .field("audience", audience)
                .field("subject_token_type", subject_token_type)
                .field("credential_file", credential_file)
                .field("json_field", json_field)
                .field("impersonate", impersonate)
                .field("key_json", &Redacted)
                .finish(),
        }
    }
}

/// Validate raw operator input strictly and split it into secret payload and identity.
///
/// The first problem found is returned; its message never contains the submitted value.
pub fn parse(input: CredentialInput) -> Result<ParsedCredential, FieldError> {
    let secret = match input {
        CredentialInput::Token { provider, token } => token::parse(provider, &token)?,
        CredentialInput::Aws {
            access_key_id,
            secret_access_key,
            session_token,
            region,
            role_arn,
            use_ambient_credentials,
        } => aws::parse(&aws::AwsInput {
            access_key_id: Zeroizing::new(access_key_id),
            secret_access_key: secret_access_key.expose_secret(),
            session_token: session_token.expose_secret(),
            region: Zeroizing::new(region),
            role_arn: Zeroizing::new(role_arn),
            use_ambient_credentials,
        })?,
        CredentialInput::AzureJson(json) => azure::parse(&json)?,
        CredentialInput::GcpJson(json) => gcp::parse(&json, "")?,
        CredentialInput::GcpJsonWithProject { json, project_id } => {
            gcp::parse(&json, &Zeroizing::new(project_id))?
        }
    };
    let identity = secret.identity();
    Ok(ParsedCredential { secret, identity })
}

/// Prints as `[REDACTED]` wherever a secret would be.
struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// The last four characters of an identifier (all of it when shorter).
fn last4(s: &str) -> &str {
    s.char_indices().rev().nth(3).map_or(s, |(i, _)| &s[i..])
}
