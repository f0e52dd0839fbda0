//! Proto ↔ model conversion. Proto types stop here.
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_types::CredentialShape;
use secrecy::{ExposeSecret as _, SecretString};
use time::OffsetDateTime;

use crate::app::credentials::ProviderCard;
use crate::broker::{AccessGrant, GrantSecret};
use crate::model::{CredentialIdentity, CredentialInput, FieldError, ProviderId, Verification};

fn field(field: &str, message: &str) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
    }
}

/// Proto provider enum value → model provider.
pub(crate) fn provider_from_proto(value: i32) -> Result<ProviderId, FieldError> {
    match pb::Provider::try_from(value) {
        Ok(pb::Provider::Unspecified) => Err(field("provider", "is required")),
        Ok(known) => ProviderId::try_from(known).map_err(|_| field("provider", "is required")),
        Err(_) => Err(field(
            "provider",
            &format!("is not a known provider ({})", ProviderId::choices()),
        )),
    }
}

/// Domain provider → proto enum.
pub(crate) fn provider_to_proto(p: ProviderId) -> pb::Provider {
    pb::Provider::from(p)
}

/// A SetCredential request → validated-later input. The shape must match the provider.
pub fn input_from_proto(req: pb::SetCredentialRequest) -> Result<CredentialInput, FieldError> {
    let provider = provider_from_proto(req.provider)?;
    let credential = req
        .credential
        .ok_or_else(|| field("credential", "is required"))?;
    let token = |provider: ProviderId, t: pb::ApiToken| CredentialInput::Token {
        provider,
        token: t.token.into(),
    };
    let (shape, input) = match credential {
        Credential::ApiToken(t) => match provider.credential_shape() {
            CredentialShape::Token(_) => (provider, token(provider, t)),
            _ => {
                return Err(field(
                    "credential",
                    &format!("is an api_token, which is not a {provider} credential"),
                ));
            }
        },
        Credential::Hetzner(t) => (ProviderId::Hetzner, token(ProviderId::Hetzner, t)),
        Credential::Digitalocean(t) => {
            (ProviderId::DigitalOcean, token(ProviderId::DigitalOcean, t))
        }
        Credential::Aws(a) => (
            ProviderId::Aws,
            CredentialInput::Aws {
                access_key_id: a.access_key_id,
                secret_access_key: a.secret_access_key.into(),
                session_token: a.session_token.into(),
                region: a.region,
                role_arn: a.role_arn,
                use_ambient_credentials: a.use_ambient_credentials,
            },
        ),
        Credential::Azure(j) => (ProviderId::Azure, CredentialInput::AzureJson(j.json.into())),
        Credential::Gcp(j) => (
            ProviderId::Gcp,
            CredentialInput::GcpJsonWithProject {
                json: j.json.into(),
                project_id: j.project_id,
            },
        ),
    };
    if shape != provider {
        return Err(field(
            "credential",
            &format!("is a {shape} credential but provider is {provider}"),
        ));
    }
    Ok(input)
}

pub(crate) fn timestamp(t: OffsetDateTime) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.unix_timestamp(),
        nanos: t.nanosecond() as i32,
    }
}

fn identity_to_proto(identity: &CredentialIdentity) -> pb::CredentialIdentity {
    use pb::credential_identity::Kind;
    let kind = match identity.clone() {
        CredentialIdentity::Token { account } => Kind::Token(pb::TokenIdentity { account }),
        CredentialIdentity::Aws {
            mode,
            access_key_id_last4,
            region,
            role_arn,
            has_session_token,
            account,
        } => Kind::Aws(pb::AwsIdentity {
            mode,
            access_key_id_last4,
            region,
            role_arn,
            has_session_token,
            account,
        }),
        CredentialIdentity::Azure {
            tenant_id,
            client_id,
            subscription_id,
            resource_group,
            auth_mode,
            federated_token_file,
        } => Kind::Azure(pb::AzureIdentity {
            tenant_id,
            client_id,
            subscription_id,
            resource_group,
            auth_mode,
            federated_token_file,
        }),
        CredentialIdentity::Gcp {
            project_id,
            client_email,
            private_key_id,
        } => Kind::Gcp(pb::GcpIdentity {
            project_id,
            client_email,
            private_key_id,
        }),
    };
    pb::CredentialIdentity { kind: Some(kind) }
}

pub(crate) fn verification_to_proto(v: &Verification) -> pb::VerificationResult {
    pb::VerificationResult {
        ok: v.ok,
        checked_at: Some(timestamp(v.checked_at)),
        message: v.message.clone(),
        provider_code: v.provider_code.clone(),
        account: v.account.clone(),
        permissions: v
            .permissions
            .iter()
            .map(|p| pb::PermissionCheck {
                name: p.name.clone(),
                granted: p.granted,
            })
            .collect(),
    }
}

pub(crate) fn card_to_proto(card: &ProviderCard) -> pb::ProviderStatus {
    let stored = card.stored.as_ref();
    pb::ProviderStatus {
        provider: provider_to_proto(card.provider) as i32,
        connected: stored.is_some(),
        saved_at: stored.map(|s| timestamp(s.saved_at)),
        identity: stored.map(|s| identity_to_proto(&s.identity)),
        last_verification: stored
            .and_then(|s| s.verification.as_ref())
            .map(verification_to_proto),
        display_name: card.provider.display_name().to_owned(),
    }
}

pub(crate) fn grant_to_proto(g: &AccessGrant) -> bpb::AccessGrant {
    let secret = match &g.secret {
        GrantSecret::Bearer(t) => bpb::access_grant::Grant::Bearer(bpb::BearerToken {
            token: t.expose_secret().to_owned(),
        }),
        GrantSecret::Aws {
            access_key_id,
            secret_access_key,
            session_token,
        } => bpb::access_grant::Grant::Aws(bpb::AwsSessionCredentials {
            access_key_id: access_key_id.clone(),
            secret_access_key: secret_access_key.expose_secret().to_owned(),
            session_token: session_token
                .as_ref()
                .map(|s: &SecretString| s.expose_secret().to_owned())
                .unwrap_or_default(),
            use_ambient: false,
        }),
        GrantSecret::AwsAmbient => bpb::access_grant::Grant::Aws(bpb::AwsSessionCredentials {
            use_ambient: true,
            ..Default::default()
        }),
    };
    bpb::AccessGrant {
        provider: provider_to_proto(g.provider) as i32,
        expires_at: g.expires_at.map(timestamp),
        grant: Some(secret),
        context: Some(bpb::GrantContext {
            region: g.context.region.clone(),
            subscription_id: g.context.subscription_id.clone(),
            resource_group: g.context.resource_group.clone(),
            project_id: g.context.project_id.clone(),
            credential_id: g.context.credential_id.clone(),
        }),
    }
}
