//! Google exchanges: the service-account assertion and token request match google-auth's,
//! and federation exchanges the file's token at STS, then impersonates.
use base64::Engine as _;
use ring::signature::{self, KeyPair as _, RsaKeyPair};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

use super::{KEY_PEM, Recorder, form_pairs, golden, token_answer, token_files};
use crate::broker::gcp::{GcpGrantIssuer, GoogleEndpoints, assertion};
use crate::broker::{GrantIssuer, GrantSecret};
use crate::model::CredentialSecret;

fn gcp_secret() -> CredentialSecret {
    CredentialSecret::Gcp {
        project_id: "proj-1".into(),
        client_email: "prov@proj-1.iam.gserviceaccount.com".into(),
        private_key_id: "kid-123".into(),
        private_key: SecretString::from(KEY_PEM),
        token_uri: "https://oauth2.googleapis.com/token".into(),
        key_json: SecretString::from("{}"),
    }
}

fn decode_segment(s: &str) -> Value {
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .expect("base64url"),
    )
    .expect("json")
}

/// The keys of a JSON object, in document order.
fn keys_in_order(segment: &str) -> Vec<String> {
    let text = String::from_utf8(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(segment)
            .expect("b64"),
    )
    .expect("utf-8");
    let mut keys = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("\":") {
        let start = rest[..i].rfind('"').expect("quote");
        keys.push(rest[start + 1..i].to_owned());
        rest = &rest[i + 2..];
    }
    keys
}

#[tokio::test]
async fn the_service_account_token_request_matches_google_auths_field_by_field() {
    // Arrange
    let recorder = Recorder::start(token_answer).await;
    let endpoints = GoogleEndpoints {
        token_url: format!("{}/token", recorder.url),
        ..GoogleEndpoints::default()
    };
    let issuer = GcpGrantIssuer::new(endpoints, None).expect("issuer");

    // Act
    let grant = issuer.issue("cred-g", &gcp_secret()).await.expect("grant");

    // Assert: the request.
    let want = &golden("golden-gcp-sdk-requests.jsonl")[0];
    let got = &recorder.seen()[0];
    assert_eq!(
        (got.method.as_str(), got.path.as_str()),
        (
            want["m"].as_str().expect("m"),
            want["p"].as_str().expect("p")
        )
    );
    assert_eq!(
        got.header("content-type"),
        want["h"]["Content-Type"].as_str()
    );
    let (ours, theirs) = (got.form(), form_pairs(want["b"].as_str().expect("b")));
    let names = |f: &[(String, String)]| f.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs), "the same fields, in order");
    assert_eq!(ours[1], theirs[1], "grant_type");
    // Assert: the assertion, header and claims field by field (the golden one was signed
    // with another key at another time).
    let (jwt, golden_jwt) = (&ours[0].1, &theirs[0].1);
    let parts: Vec<&str> = jwt.split('.').collect();
    let golden_parts: Vec<&str> = golden_jwt.split('.').collect();
    assert_eq!(keys_in_order(parts[0]), keys_in_order(golden_parts[0]));
    assert_eq!(keys_in_order(parts[1]), keys_in_order(golden_parts[1]));
    assert_eq!(
        decode_segment(parts[0]),
        decode_segment(golden_parts[0]),
        "typ, alg, kid = private_key_id"
    );
    let (c, g) = (decode_segment(parts[1]), decode_segment(golden_parts[1]));
    for k in ["iss", "aud"] {
        assert_eq!(c[k], g[k], "{k}");
    }
    assert_scopes(&c, &g);
    assert_eq!(
        c["exp"].as_i64().expect("exp") - c["iat"].as_i64().expect("iat"),
        g["exp"].as_i64().expect("exp") - g["iat"].as_i64().expect("iat")
    );
    let der = base64::engine::general_purpose::STANDARD
        .decode(
            KEY_PEM
                .lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>(),
        )
        .expect("pem");
    let public = RsaKeyPair::from_pkcs8(&der)
        .expect("key")
        .public_key()
        .as_ref()
        .to_vec();
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[2])
        .expect("sig");
    signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, public)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
        .expect("RS256 verifies");
    assert_eq!(grant.context.project_id, "proj-1");
}

#[test]
fn at_the_golden_instant_the_assertion_header_and_claims_equal_the_recorded_ones() {
    let want = &golden("golden-gcp-sdk-requests.jsonl")[0];
    let golden_jwt = form_pairs(want["b"].as_str().expect("b")).remove(0).1;
    let g: Vec<&str> = golden_jwt.split('.').collect();
    let iat = decode_segment(g[1])["iat"].as_i64().expect("iat");
    let ours = assertion(
        "prov@proj-1.iam.gserviceaccount.com",
        "kid-123",
        &SecretString::from(KEY_PEM),
        iat,
    )
    .expect("assertion");
    let o: Vec<&str> = ours.expose_secret().split('.').collect();
    assert_eq!(decode_segment(o[0]), decode_segment(g[0]));
    let (mut ours, mut golden) = (decode_segment(o[1]), decode_segment(g[1]));
    assert_scopes(&ours, &golden);
    ours["scope"] = Value::Null;
    golden["scope"] = Value::Null;
    assert_eq!(ours, golden);
}

/// The golden assertion was recorded with the Compute scope alone; ours asks for the
/// billing catalog's read scope too, in google-auth's form (space-separated, in order).
fn assert_scopes(ours: &Value, golden: &Value) {
    assert_eq!(golden["scope"], "https://www.googleapis.com/auth/compute");
    assert_eq!(
        ours["scope"],
        "https://www.googleapis.com/auth/compute https://www.googleapis.com/auth/cloud-billing.readonly"
    );
}

fn external(file: &str, impersonate: Option<&str>) -> CredentialSecret {
    CredentialSecret::GcpExternal {
        project_id: "proj-wif-1".into(),
        audience:
            "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q"
                .into(),
        subject_token_type: "urn:ietf:params:oauth:token-type:jwt".into(),
        credential_file: file.into(),
        json_field: None,
        impersonate: impersonate.map(str::to_owned),
        key_json: SecretString::from("{}"),
    }
}

#[tokio::test]
async fn federation_exchanges_the_file_token_at_sts_then_impersonates() {
    fn answer(path: &str) -> (u16, Value) {
        if path.ends_with(":generateAccessToken") {
            (
                200,
                json!({ "accessToken": "sa-token", "expireTime": "2099-01-01T00:00:00Z" }),
            )
        } else {
            (
                200,
                json!({ "access_token": "sts-token", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 3600 }),
            )
        }
    }
    let recorder = Recorder::start(answer).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("oidc");
    std::fs::write(&file, "eyJ.subject.sig\n").expect("write");
    let endpoints = GoogleEndpoints {
        sts_url: format!("{}/v1/token", recorder.url),
        iam_credentials_url: recorder.url.clone(),
        ..GoogleEndpoints::default()
    };
    let issuer = GcpGrantIssuer::new(endpoints, None)
        .expect("issuer")
        .with_token_files(token_files(dir.path()));

    let direct = issuer
        .issue("w", &external(file.to_str().expect("path"), None))
        .await
        .expect("direct");
    let impersonated = issuer
        .issue(
            "w",
            &external(
                file.to_str().expect("path"),
                Some("sa@proj-wif-1.iam.gserviceaccount.com"),
            ),
        )
        .await
        .expect("impersonated");

    assert!(matches!(&direct.secret, GrantSecret::Bearer(t) if t.expose_secret() == "sts-token"));
    assert!(
        matches!(&impersonated.secret, GrantSecret::Bearer(t) if t.expose_secret() == "sa-token")
    );
    assert_eq!(impersonated.context.project_id, "proj-wif-1");
    let seen = recorder.seen();
    let sts = seen[0].form();
    let keys: Vec<&str> = sts.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "grant_type",
            "audience",
            "scope",
            "requested_token_type",
            "subject_token",
            "subject_token_type"
        ]
    );
    assert_eq!(sts[0].1, "urn:ietf:params:oauth:grant-type:token-exchange");
    assert_eq!(sts[4].1, "eyJ.subject.sig");
    let imp = &seen[2];
    assert_eq!(
        imp.path,
        "/v1/projects/-/serviceAccounts/sa@proj-wif-1.iam.gserviceaccount.com:generateAccessToken"
    );
    assert_eq!(imp.header("authorization"), Some("Bearer sts-token"));
    let body: Value = serde_json::from_str(&imp.body).expect("json");
    assert_eq!(
        body,
        json!({
            "scope": [
                "https://www.googleapis.com/auth/compute",
                "https://www.googleapis.com/auth/cloud-billing.readonly"
            ],
            "lifetime": "3600s"
        })
    );
}
