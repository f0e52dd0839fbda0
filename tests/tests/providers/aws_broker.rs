//! The AWS token exchange of the credentials service against the fake STS: a long-term key
//! becomes a session (`GetSessionToken`), a role is assumed (`AssumeRole`) with stored or
//! ambient base credentials, a temporary key passes as it is, and a refused key is
//! `PermissionDenied`. The session then works at EC2.
use std::sync::Arc;

use aws_sdk_ec2::config::{Credentials, SharedCredentialsProvider};
use levelrail_clouds::CloudProvider as _;
use levelrail_clouds::aws::AwsProvider;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::registry::AwsKeys;
use levelrail_credentials::broker::aws::AwsGrantIssuer;
use levelrail_credentials::broker::{GrantIssuer as _, GrantSecret};
use levelrail_credentials::model::{CredentialSecret, CredentialsError};
use levelrail_sim::fakes::aws::{ACCESS_KEY_ID, SECRET_ACCESS_KEY};
use secrecy::{ExposeSecret as _, SecretString};
use time::OffsetDateTime;

use crate::aws_support::{REGION, fast_policy, settings, start_fake};

const ROLE: &str = "arn:aws:iam::123456789012:role/levelrail-nodes";

fn secret(key: &str, session: Option<&str>, role: &str, ambient: bool) -> CredentialSecret {
    CredentialSecret::Aws {
        access_key_id: if ambient { String::new() } else { key.into() },
        secret_access_key: (!ambient).then(|| SecretString::from(SECRET_ACCESS_KEY)),
        session_token: session.map(SecretString::from),
        region: REGION.into(),
        role_arn: role.into(),
        ambient,
    }
}

fn keys_of(secret: &GrantSecret) -> AwsKeys {
    let GrantSecret::Aws {
        access_key_id,
        secret_access_key,
        session_token,
    } = secret
    else {
        panic!("an AWS grant")
    };
    AwsKeys {
        access_key_id: access_key_id.clone(),
        secret_access_key: secret_access_key.clone(),
        session_token: session_token.clone(),
    }
}

#[tokio::test]
async fn a_long_term_key_is_exchanged_for_a_session_that_works_at_ec2() {
    let fake = start_fake(|_| {}).await;
    let issuer = AwsGrantIssuer::new(Some(fake.endpoint()));
    let grant = issuer
        .issue("cred_1", &secret(ACCESS_KEY_ID, None, "", false))
        .await
        .expect("grant");
    let keys = keys_of(&grant.secret);
    assert!(
        keys.access_key_id.starts_with("ASIA"),
        "a session key: {}",
        keys.access_key_id
    );
    assert!(keys.session_token.is_some());
    let expires = grant.expires_at.expect("sessions expire");
    assert!(
        expires > OffsetDateTime::now_utc() + time::Duration::minutes(50),
        "{expires}"
    );
    assert_eq!(
        (
            grant.context.region.as_str(),
            grant.context.credential_id.as_str()
        ),
        (REGION, "cred_1")
    );
    let sts: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.service == "sts")
        .collect();
    assert_eq!(sts.len(), 1);
    assert_eq!(
        (sts[0].action.as_str(), sts[0].access_key_id.as_str()),
        ("GetSessionToken", ACCESS_KEY_ID)
    );

    let aws = AwsProvider::new(
        &keys,
        Some(REGION),
        settings(&fake.endpoint()),
        Arc::new(RateLimiter::unlimited()),
        fast_policy(),
    )
    .expect("client");
    let report = aws.probe().await.expect("probe with the session");
    assert!(report.can_write);
    assert!(
        fake.requests()
            .iter()
            .filter(|r| r.service == "ec2")
            .all(|r| r.access_key_id == keys.access_key_id),
        "EC2 sees only the session key"
    );
}

#[tokio::test]
async fn a_role_is_assumed_with_stored_or_ambient_base_credentials() {
    let fake = start_fake(|_| {}).await;
    let ambient = SharedCredentialsProvider::new(Credentials::new(
        ACCESS_KEY_ID,
        SECRET_ACCESS_KEY,
        None,
        None,
        "test-ambient",
    ));
    let issuer = AwsGrantIssuer::new(Some(fake.endpoint())).with_ambient(ambient);
    for (label, s) in [
        ("stored", secret(ACCESS_KEY_ID, None, ROLE, false)),
        ("ambient", secret("", None, ROLE, true)),
    ] {
        let grant = issuer
            .issue("cred_role", &s)
            .await
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let aws = AwsProvider::new(
            &keys_of(&grant.secret),
            Some(REGION),
            settings(&fake.endpoint()),
            Arc::new(RateLimiter::unlimited()),
            fast_policy(),
        )
        .expect("client");
        let report = aws.probe().await.expect("probe");
        assert!(
            report
                .message
                .contains("assumed-role/levelrail-nodes/levelrail-cred_role"),
            "{label}: {}",
            report.message
        );
    }
    let assumed = fake
        .requests()
        .iter()
        .filter(|r| r.action == "AssumeRole")
        .count();
    assert_eq!(assumed, 2);
    // Ambient without a role: the control plane's own credentials, no exchange.
    let grant = issuer
        .issue("cred_amb", &secret("", None, "", true))
        .await
        .expect("ambient");
    assert_eq!(keys_of(&grant.secret).access_key_id, ACCESS_KEY_ID);
}

#[tokio::test]
async fn a_temporary_key_passes_as_is_and_a_refused_key_is_permission_denied() {
    let fake = start_fake(|_| {}).await;
    let issuer = AwsGrantIssuer::new(Some(fake.endpoint()));
    let temporary = secret("ASIATEMPORARYKEY0001", Some("c2Vzc2lvbg=="), "", false);
    let grant = issuer.issue("cred_tmp", &temporary).await.expect("grant");
    let keys = keys_of(&grant.secret);
    assert_eq!(keys.access_key_id, "ASIATEMPORARYKEY0001");
    assert_eq!(
        keys.session_token
            .map(|t| t.expose_secret().to_owned())
            .as_deref(),
        Some("c2Vzc2lvbg==")
    );
    assert!(
        fake.requests().is_empty(),
        "STS refuses GetSessionToken for session keys: not called"
    );

    let unknown = secret("AKIAUNKNOWNKEY000001", None, "", false);
    match issuer.issue("cred_bad", &unknown).await {
        Err(CredentialsError::PermissionDenied(m)) => {
            assert!(m.contains("InvalidClientTokenId"), "{m}")
        }
        other => panic!("expected PermissionDenied, got {other:?}"),
    }
    let wrong_role = secret(
        ACCESS_KEY_ID,
        None,
        "arn:aws:iam::999999999999:role/other",
        false,
    );
    assert!(matches!(
        issuer.issue("cred_bad", &wrong_role).await,
        Err(CredentialsError::PermissionDenied(_))
    ));
}

#[tokio::test]
async fn the_control_planes_own_identity_is_lent_only_when_allowed() {
    let fake = start_fake(|_| {}).await;
    let issuer = AwsGrantIssuer::new(Some(fake.endpoint()));

    let err = issuer
        .issue("cred_ambient", &secret("", None, ROLE, true))
        .await
        .expect_err("ambient credentials refused by default");

    assert!(
        matches!(err, CredentialsError::FailedPrecondition(ref m) if m.contains("--allow-ambient-aws")),
        "{err}"
    );
    assert!(fake.requests().is_empty(), "STS was called");
}
