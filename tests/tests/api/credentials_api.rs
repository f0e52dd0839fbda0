//! The credentials API over gRPC: set, list, remove for every provider; strict validation.
use crate::harness::TestApp;
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_sim::secrets::Canary;
use tonic::Code;

fn request_for(provider: pb::Provider, canary: &Canary) -> pb::SetCredentialRequest {
    let credential = match provider {
        pb::Provider::Hetzner => Credential::Hetzner(pb::ApiToken {
            token: canary.hetzner_token(),
        }),
        pb::Provider::Digitalocean => Credential::Digitalocean(pb::ApiToken {
            token: canary.digitalocean_token(),
        }),
        pb::Provider::Aws => Credential::Aws(pb::AwsCredential {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: canary.aws_secret(),
            region: "eu-central-1".into(),
            role_arn: "arn:aws:iam::123456789012:role/levelrail-nodes".into(),
            ..Default::default()
        }),
        pb::Provider::Azure => Credential::Azure(pb::JsonDocument {
            json: canary.azure_json(),
            ..Default::default()
        }),
        pb::Provider::Gcp => Credential::Gcp(pb::JsonDocument {
            json: canary.gcp_json(),
            ..Default::default()
        }),
        pb::Provider::Unspecified => unreachable!("not a provider"),
    };
    pb::SetCredentialRequest {
        provider: provider as i32,
        credential: Some(credential),
    }
}

/// Every real provider, in card order.
pub(crate) const PROVIDERS: [pb::Provider; 5] = [
    pb::Provider::Hetzner,
    pb::Provider::Digitalocean,
    pb::Provider::Aws,
    pb::Provider::Azure,
    pb::Provider::Gcp,
];

/// A valid SetCredential request carrying the canary in its secret field.
pub(crate) fn valid_request(provider: pb::Provider, canary: &Canary) -> pb::SetCredentialRequest {
    request_for(provider, canary)
}

#[tokio::test]
async fn every_provider_can_be_set_listed_with_its_identity_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut client = app.credentials_client().await;
    let canary = Canary::new();

    let before = client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    let order: Vec<i32> = before.providers.iter().map(|p| p.provider).collect();
    assert_eq!(
        order,
        PROVIDERS.iter().map(|p| *p as i32).collect::<Vec<_>>()
    );
    assert!(
        before
            .providers
            .iter()
            .all(|p| !p.connected && p.identity.is_none())
    );

    for provider in PROVIDERS {
        let resp = client
            .set_credential(request_for(provider, &canary))
            .await
            .unwrap()
            .into_inner();
        let card = resp.provider.unwrap();
        assert!(card.connected, "{provider:?} connected after set");
        assert!(card.saved_at.is_some());
        canary.assert_absent("SetCredential response", format!("{card:?}").as_bytes());
    }

    let list = client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    canary.assert_absent("ListProviders response", format!("{list:?}").as_bytes());
    use pb::credential_identity::Kind;
    for card in &list.providers {
        assert!(card.connected);
        match card
            .identity
            .as_ref()
            .and_then(|i| i.kind.as_ref())
            .unwrap()
        {
            Kind::Token(_) => assert!(card.provider <= pb::Provider::Digitalocean as i32),
            Kind::Aws(a) => {
                assert_eq!(a.access_key_id_last4, "MPLE");
                assert_eq!(a.region, "eu-central-1");
                assert_eq!(a.role_arn, "arn:aws:iam::123456789012:role/levelrail-nodes");
                assert_eq!(a.mode, "static");
            }
            Kind::Azure(a) => {
                assert_eq!(a.tenant_id, "72f988bf-86f1-41af-91ab-2d7cd011db47");
                assert_eq!(a.resource_group, "levelrail-nodes");
                assert_eq!(a.auth_mode, "client_secret");
            }
            Kind::Gcp(g) => {
                assert_eq!(g.project_id, "levelrail-test-1");
                assert_eq!(
                    g.client_email,
                    "nodes@levelrail-test-1.iam.gserviceaccount.com"
                );
            }
        }
    }

    for provider in PROVIDERS {
        let resp = client
            .delete_credential(pb::DeleteCredentialRequest {
                provider: provider as i32,
            })
            .await
            .unwrap()
            .into_inner();
        assert!(resp.deleted);
        assert!(!resp.provider.unwrap().connected);
    }
    let after = client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(after.providers.iter().all(|p| !p.connected));
    let again = client
        .delete_credential(pb::DeleteCredentialRequest {
            provider: pb::Provider::Hetzner as i32,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!again.deleted, "deleting twice is not an error");
    app.stop().await;
}

#[tokio::test]
async fn aws_ambient_credentials_need_no_key() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut client = app.credentials_client().await;
    let card = client
        .set_credential(pb::SetCredentialRequest {
            provider: pb::Provider::Aws as i32,
            credential: Some(Credential::Aws(pb::AwsCredential {
                use_ambient_credentials: true,
                role_arn: "arn:aws:iam::123456789012:role/levelrail".into(),
                ..Default::default()
            })),
        })
        .await
        .unwrap()
        .into_inner()
        .provider
        .unwrap();
    let Some(pb::credential_identity::Kind::Aws(aws)) = card.identity.unwrap().kind else {
        panic!("aws identity expected")
    };
    assert_eq!(aws.mode, "ambient");
    assert_eq!(aws.region, "us-east-1", "region defaults to us-east-1");
    app.stop().await;
}

fn json_doc(provider: pb::Provider, json: String) -> pb::SetCredentialRequest {
    let credential = match provider {
        pb::Provider::Azure => Credential::Azure(pb::JsonDocument {
            json,
            ..Default::default()
        }),
        _ => Credential::Gcp(pb::JsonDocument {
            json,
            ..Default::default()
        }),
    };
    pb::SetCredentialRequest {
        provider: provider as i32,
        credential: Some(credential),
    }
}

fn gcp_with(canary: &Canary, key: &str, value: serde_json::Value) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&canary.gcp_json()).unwrap();
    v[key] = value;
    v.to_string()
}

fn azure_with(canary: &Canary, key: &str, value: serde_json::Value) -> String {
    let mut v: serde_json::Value = serde_json::from_str(&canary.azure_json()).unwrap();
    v[key] = value;
    v.to_string()
}

fn aws(f: impl FnOnce(&mut pb::AwsCredential), canary: &Canary) -> pb::SetCredentialRequest {
    let mut a = pb::AwsCredential {
        access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
        secret_access_key: canary.aws_secret(),
        ..Default::default()
    };
    f(&mut a);
    pb::SetCredentialRequest {
        provider: pb::Provider::Aws as i32,
        credential: Some(Credential::Aws(a)),
    }
}

fn token(provider: pb::Provider, token: String) -> pb::SetCredentialRequest {
    let credential = match provider {
        pb::Provider::Hetzner => Credential::Hetzner(pb::ApiToken { token }),
        _ => Credential::Digitalocean(pb::ApiToken { token }),
    };
    pb::SetCredentialRequest {
        provider: provider as i32,
        credential: Some(credential),
    }
}

/// (case, request, field path the error must name)
fn malformed(c: &Canary) -> Vec<(&'static str, pb::SetCredentialRequest, &'static str)> {
    use pb::Provider::*;
    let deep_array = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_object = format!("{}1{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    vec![
        (
            "no provider",
            pb::SetCredentialRequest {
                provider: 0,
                credential: Some(Credential::Hetzner(pb::ApiToken {
                    token: c.hetzner_token(),
                })),
            },
            "provider",
        ),
        (
            "unknown provider number",
            pb::SetCredentialRequest {
                provider: 42,
                credential: None,
            },
            "provider",
        ),
        (
            "no credential",
            pb::SetCredentialRequest {
                provider: Hetzner as i32,
                credential: None,
            },
            "credential",
        ),
        (
            "shape of another provider",
            pb::SetCredentialRequest {
                provider: Hetzner as i32,
                credential: Some(Credential::Digitalocean(pb::ApiToken {
                    token: c.digitalocean_token(),
                })),
            },
            "credential",
        ),
        (
            "empty hetzner token",
            token(Hetzner, String::new()),
            "hetzner.token",
        ),
        (
            "space inside token",
            token(
                Hetzner,
                format!("{} {}", &c.value()[..32], &c.value()[32..]),
            ),
            "hetzner.token",
        ),
        (
            "control character in token",
            token(Hetzner, format!("{}\u{0}", c.value())),
            "hetzner.token",
        ),
        (
            "1 MiB token",
            token(Hetzner, "a".repeat(1024 * 1024)),
            "hetzner.token",
        ),
        (
            "uppercase hex DO token",
            token(Digitalocean, format!("dop_v1_{}", c.value().to_uppercase())),
            "digitalocean.token",
        ),
        (
            "aws without secret",
            aws(|a| a.secret_access_key.clear(), c),
            "aws.secret_access_key",
        ),
        (
            "aws key id lowercase",
            aws(|a| a.access_key_id = "akiaiosfodnn7example".into(), c),
            "aws.access_key_id",
        ),
        (
            "aws ambient plus key",
            aws(|a| a.use_ambient_credentials = true, c),
            "aws.use_ambient_credentials",
        ),
        (
            "aws role arn of a user",
            aws(
                |a| a.role_arn = "arn:aws:iam::123456789012:user/bob".into(),
                c,
            ),
            "aws.role_arn",
        ),
        (
            "aws role arn with 11-digit account",
            aws(|a| a.role_arn = "arn:aws:iam::12345678901:role/x".into(), c),
            "aws.role_arn",
        ),
        (
            "aws role arn wrong partition",
            aws(
                |a| a.role_arn = "arn:aws-xx:iam::123456789012:role/x".into(),
                c,
            ),
            "aws.role_arn",
        ),
        (
            "aws bad region",
            aws(|a| a.region = "moon-1".into(), c),
            "aws.region",
        ),
        (
            "azure broken json",
            json_doc(Azure, format!("{{\"tenant_id\": \"{}\"", c.value())),
            "azure.json",
        ),
        (
            "azure json array",
            json_doc(Azure, "[1,2]".into()),
            "azure.json",
        ),
        (
            "azure non-guid tenant",
            json_doc(Azure, azure_with(c, "tenant_id", "not-a-guid".into())),
            "azure.json.tenant_id",
        ),
        (
            "azure unicode in client id",
            json_doc(
                Azure,
                azure_with(
                    c,
                    "client_id",
                    "0f6e7a5c-1c2b-4c3d-9e8f-11223344556\u{202e}".into(),
                ),
            ),
            "azure.json.client_id",
        ),
        (
            "azure number subscription",
            json_doc(Azure, azure_with(c, "subscription_id", 7.into())),
            "azure.json.subscription_id",
        ),
        (
            "azure empty resource group",
            json_doc(Azure, azure_with(c, "resource_group", "".into())),
            "azure.json.resource_group",
        ),
        (
            "azure unknown key",
            json_doc(Azure, azure_with(c, "password", "x".into())),
            "azure.json.password",
        ),
        (
            "azure 10k-deep array",
            json_doc(Azure, deep_array.clone()),
            "azure.json",
        ),
        (
            "gcp 10k-deep object",
            json_doc(Gcp, deep_object),
            "gcp.json",
        ),
        (
            "gcp wrong type",
            json_doc(Gcp, gcp_with(c, "type", "authorized_user".into())),
            "gcp.json.type",
        ),
        (
            "gcp attacker token_uri",
            json_doc(
                Gcp,
                gcp_with(c, "token_uri", "https://evil.example/token".into()),
            ),
            "gcp.json.token_uri",
        ),
        (
            "gcp missing project",
            json_doc(Gcp, {
                let mut v: serde_json::Value = serde_json::from_str(&c.gcp_json()).unwrap();
                v.as_object_mut().unwrap().remove("project_id");
                v.to_string()
            }),
            "gcp.json.project_id",
        ),
        (
            "gcp emoji project",
            json_doc(Gcp, gcp_with(c, "project_id", "proj\u{1f600}ect".into())),
            "gcp.json.project_id",
        ),
        (
            "gcp 1 MiB key",
            json_doc(
                Gcp,
                gcp_with(c, "private_key", "A".repeat(1024 * 1024).into()),
            ),
            "gcp.json",
        ),
    ]
}

#[tokio::test]
async fn malformed_credentials_are_rejected_naming_the_field_and_nothing_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut client = app.credentials_client().await;
    let canary = Canary::new();
    let cases = malformed(&canary);
    assert!(cases.len() >= 20);
    for (case, req, field) in cases {
        let err = client.set_credential(req).await.expect_err(case);
        // A 1 MiB value is stopped by the listener's 64 KiB message limit before parsing.
        if err.code() == Code::ResourceExhausted {
            assert!(
                case.contains("1 MiB"),
                "{case}: unexpected RESOURCE_EXHAUSTED"
            );
            continue;
        }
        assert_eq!(
            err.code(),
            Code::InvalidArgument,
            "{case}: {}",
            err.message()
        );
        assert!(
            err.message().starts_with(&format!("{field}: ")),
            "{case}: expected field {field}, got {:?}",
            err.message()
        );
        canary.assert_absent(case, err.message().as_bytes());
    }
    let list = client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(
        list.providers.iter().all(|p| !p.connected),
        "nothing stored"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_rejected_replacement_keeps_the_stored_credential() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let mut client = app.credentials_client().await;
    let canary = Canary::new();
    client
        .set_credential(request_for(pb::Provider::Hetzner, &canary))
        .await
        .unwrap();
    let err = client
        .set_credential(token(pb::Provider::Hetzner, "short".into()))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    let list = client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(list.providers[0].connected);
    let grant = app
        .credentials
        .issue_access(levelrail_credentials::model::ProviderId::Hetzner, "test")
        .await
        .unwrap();
    match grant.secret {
        levelrail_credentials::broker::GrantSecret::Bearer(t) => {
            assert_eq!(
                secrecy::ExposeSecret::expose_secret(&t),
                canary.hetzner_token()
            )
        }
        _ => panic!("bearer grant expected"),
    }
    app.stop().await;
}
