//! Sample records and small helpers for the conformance suite.
use time::OffsetDateTime;
use time::macros::datetime;

use crate::model::ports::{CredentialRecord, CredentialStore};
use levelrail_types::CredentialShape;

use crate::model::{CredentialIdentity, ProviderId, Verification};
use crate::store::codec::to_stored_precision;

/// A distinct identity per provider, covering every identity variant.
pub(super) fn identity_for(provider: ProviderId) -> CredentialIdentity {
    match provider.credential_shape() {
        // One token cloud with an account learnt, one without.
        CredentialShape::Token(_) => CredentialIdentity::Token {
            account: match provider {
                ProviderId::DigitalOcean => String::new(),
                _ => format!("{provider}-project-42"),
            },
        },
        CredentialShape::AwsKeys => CredentialIdentity::Aws {
            mode: "static".into(),
            access_key_id_last4: "WXYZ".into(),
            region: "eu-central-1".into(),
            role_arn: "arn:aws:iam::123456789012:role/levelrail".into(),
            has_session_token: true,
            account: "123456789012".into(),
        },
        CredentialShape::AzureServicePrincipal => CredentialIdentity::Azure {
            tenant_id: "00000000-0000-0000-0000-000000000001".into(),
            client_id: "00000000-0000-0000-0000-000000000002".into(),
            subscription_id: "00000000-0000-0000-0000-000000000003".into(),
            resource_group: "levelrail-rg".into(),
            auth_mode: "federated_token_file".into(),
            federated_token_file: "/var/run/secrets/azure/token".into(),
        },
        CredentialShape::GoogleServiceAccount => CredentialIdentity::Gcp {
            project_id: "levelrail-test".into(),
            client_email: "lr@levelrail-test.iam.gserviceaccount.com".into(),
            private_key_id: "0123456789abcdef".into(),
        },
    }
}

/// A credential for `provider` with a fresh id, wrapped by `kek_id`. Its `saved_at` has
/// nanoseconds and a non-UTC offset, so every round trip also checks normalisation.
pub(super) fn record(provider: ProviderId, kek_id: &str) -> CredentialRecord {
    let id = uuid::Uuid::new_v4().to_string();
    CredentialRecord {
        envelope: format!("envelope of {id}").into_bytes(),
        id,
        provider,
        kek_id: kek_id.into(),
        identity: identity_for(provider),
        saved_at: datetime!(2025-03-04 05:06:07.123456789 +02:00),
        verification: None,
    }
}

pub(super) fn verification(ok: bool) -> Verification {
    Verification {
        ok,
        checked_at: datetime!(2025-03-05 10:00:00.987654321 UTC),
        message: if ok {
            "can create servers"
        } else {
            "forbidden"
        }
        .into(),
        provider_code: if ok { "" } else { "403" }.into(),
        account: "acct-1".into(),
        permissions: vec![
            levelrail_types::PermissionCheck {
                name: "compute.instances.create".into(),
                granted: ok,
            },
            levelrail_types::PermissionCheck {
                name: "quote \" and ünïcode".into(),
                granted: true,
            },
        ],
    }
}

/// `t` at the precision every backend stores (UTC, microseconds).
pub(super) fn stored(t: OffsetDateTime) -> OffsetDateTime {
    to_stored_precision(t).expect("test timestamps are in range")
}

/// `r` as a backend returns it after storing it.
pub(super) fn as_stored(r: &CredentialRecord) -> CredentialRecord {
    let mut r = r.clone();
    r.saved_at = stored(r.saved_at);
    if let Some(v) = &mut r.verification {
        v.checked_at = stored(v.checked_at);
    }
    r
}

pub(super) async fn put(store: &dyn CredentialStore, r: &CredentialRecord) {
    store.put_credential(r).await.expect("put_credential");
}

pub(super) async fn get(store: &dyn CredentialStore, p: ProviderId) -> Option<CredentialRecord> {
    store.get_credential(p).await.expect("get_credential")
}

pub(super) async fn clear(store: &dyn CredentialStore) {
    for p in ProviderId::ALL {
        store.delete_credential(p).await.expect("delete_credential");
    }
}
