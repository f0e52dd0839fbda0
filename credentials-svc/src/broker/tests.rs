//! The token exchanges against a recording HTTP endpoint: every request the Azure and GCP
//! issuers send is compared field by field with what the official SDKs sent
//! (`shared/specs/golden-*.jsonl`), the federated token files are re-read on every
//! exchange, and refusals become errors that never echo the secret.
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use ring::signature::{self, KeyPair as _, RsaKeyPair};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::azure::AzureGrantIssuer;
use super::gcp::{GcpGrantIssuer, GoogleEndpoints, assertion};
use super::{GrantIssuer, GrantSecret};
use crate::domain::{CredentialSecret, CredentialsError};

const KEY_PEM: &str = include_str!("testdata/test-sa-key.pem");

/// One recorded request.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn form(&self) -> Vec<(String, String)> {
        form_pairs(&self.body)
    }
}

/// A plain HTTP/1.1 endpoint answering every request with `answer(path)`.
struct Recorder {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    async fn start(answer: fn(&str) -> (u16, Value)) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let Some(req) = read_request(&mut tcp).await else { return };
                    let (status, body) = answer(&req.path);
                    log.lock().expect("log").push(req);
                    let text = body.to_string();
                    let head = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", text.len());
                    let _ = tcp.write_all(format!("{head}{text}").as_bytes()).await;
                });
            }
        });
        Self { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

async fn read_request(tcp: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines.filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
    let len: usize = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < head_end + len {
        let n = tcp.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    Some(Seen { method, path, headers, body })
}

fn form_pairs(s: &str) -> Vec<(String, String)> {
    let decode = |v: &str| {
        let v = v.replace('+', " ");
        let mut out = Vec::new();
        let b = v.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).expect("hex"));
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).expect("utf-8")
    };
    s.split('&').filter_map(|p| p.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect()
}

fn golden(file: &str) -> Vec<Value> {
    let path = format!("{}/../../shared/specs/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")).lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).expect("golden")).collect()
}

fn token_answer(_: &str) -> (u16, Value) {
    (200, json!({ "token_type": "Bearer", "expires_in": 3599, "access_token": "at-1" }))
}

fn azure_secret(secret: Option<&str>, file: Option<&str>) -> CredentialSecret {
    CredentialSecret::Azure {
        tenant_id: "t1".into(),
        client_id: "app".into(),
        client_secret: secret.map(SecretString::from),
        federated_token_file: file.map(str::to_owned),
        subscription_id: "sub-123".into(),
        resource_group: "rg1".into(),
    }
}

#[tokio::test]
async fn the_azure_federated_token_request_matches_the_azure_sdks_field_by_field() {
    // Arrange
    let recorder = Recorder::start(token_answer).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    std::fs::write(&file, "a.b.c\n").expect("write");
    let issuer = AzureGrantIssuer::new(&recorder.url, None).expect("issuer");

    // Act
    let grant = issuer.issue("cred-1", &azure_secret(None, file.to_str())).await.expect("grant");

    // Assert
    let want = &golden("golden-azure-sdk-requests.jsonl")[0];
    let got = &recorder.seen()[0];
    assert_eq!((got.method.as_str(), got.path.as_str()), (want["m"].as_str().expect("m"), want["p"].as_str().expect("p")));
    assert_eq!(got.header("content-type"), want["h"]["Content-Type"].as_str());
    assert_eq!(got.form(), form_pairs(want["b"].as_str().expect("b")), "every field, in order");
    assert_eq!(got.body, want["b"].as_str().expect("b"), "byte for byte");
    assert!(matches!(&grant.secret, GrantSecret::Bearer(t) if t.expose_secret() == "at-1"));
    assert_eq!((grant.context.subscription_id.as_str(), grant.context.resource_group.as_str(), grant.context.credential_id.as_str()), ("sub-123", "rg1", "cred-1"));
    assert!(grant.expires_at.is_some_and(|e| e > time::OffsetDateTime::now_utc() + time::Duration::minutes(59)));
}

#[tokio::test]
async fn the_federated_token_file_is_read_again_for_every_exchange() {
    let recorder = Recorder::start(token_answer).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    let issuer = AzureGrantIssuer::new(&recorder.url, None).expect("issuer");
    let secret = azure_secret(None, file.to_str());
    std::fs::write(&file, "h.first.s").expect("write");
    issuer.issue("c", &secret).await.expect("first");
    std::fs::write(&file, "h.rotated.s").expect("rotate");
    issuer.issue("c", &secret).await.expect("second");
    let assertions: Vec<String> = recorder.seen().iter().map(|s| s.form().into_iter().find(|(k, _)| k == "client_assertion").expect("assertion").1).collect();
    assert_eq!(assertions, ["h.first.s", "h.rotated.s"]);
}

#[tokio::test]
async fn a_client_secret_wins_and_a_missing_token_file_sends_nothing() {
    let recorder = Recorder::start(token_answer).await;
    let issuer = AzureGrantIssuer::new(&recorder.url, None).expect("issuer");
    issuer.issue("c", &azure_secret(Some("s3cr3t~value"), Some("/nonexistent/token"))).await.expect("grant");
    let fields = recorder.seen()[0].form();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["client_id", "client_secret", "grant_type", "scope"]);
    assert_eq!(fields[1].1, "s3cr3t~value");
    let err = issuer.issue("c", &azure_secret(None, Some("/nonexistent/token"))).await.expect_err("no file");
    assert!(matches!(&err, CredentialsError::FailedPrecondition(m) if m.contains("/nonexistent/token")), "{err}");
    assert_eq!(recorder.seen().len(), 1, "no request without a token");
}

#[tokio::test]
async fn a_refusal_names_the_aad_error_without_echoing_the_secret() {
    fn refuse(_: &str) -> (u16, Value) {
        (401, json!({ "error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.", "error_codes": [7000215] }))
    }
    let recorder = Recorder::start(refuse).await;
    let issuer = AzureGrantIssuer::new(&recorder.url, None).expect("issuer");
    let err = issuer.issue("c", &azure_secret(Some("canary-secret-9f8e"), None)).await.expect_err("refused");
    let text = err.to_string();
    assert!(matches!(err, CredentialsError::PermissionDenied(_)) && text.contains("AADSTS7000215"), "{text}");
    assert!(!text.contains("canary-secret-9f8e"));
}

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
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).expect("base64url")).expect("json")
}

/// The keys of a JSON object, in document order.
fn keys_in_order(segment: &str) -> Vec<String> {
    let text = String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(segment).expect("b64")).expect("utf-8");
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
    let endpoints = GoogleEndpoints { token_url: format!("{}/token", recorder.url), ..GoogleEndpoints::default() };
    let issuer = GcpGrantIssuer::new(endpoints, None).expect("issuer");

    // Act
    let grant = issuer.issue("cred-g", &gcp_secret()).await.expect("grant");

    // Assert: the request.
    let want = &golden("golden-gcp-sdk-requests.jsonl")[0];
    let got = &recorder.seen()[0];
    assert_eq!((got.method.as_str(), got.path.as_str()), (want["m"].as_str().expect("m"), want["p"].as_str().expect("p")));
    assert_eq!(got.header("content-type"), want["h"]["Content-Type"].as_str());
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
    assert_eq!(decode_segment(parts[0]), decode_segment(golden_parts[0]), "typ, alg, kid = private_key_id");
    let (c, g) = (decode_segment(parts[1]), decode_segment(golden_parts[1]));
    for k in ["iss", "aud", "scope"] {
        assert_eq!(c[k], g[k], "{k}");
    }
    assert_eq!(c["exp"].as_i64().expect("exp") - c["iat"].as_i64().expect("iat"), g["exp"].as_i64().expect("exp") - g["iat"].as_i64().expect("iat"));
    let der = base64::engine::general_purpose::STANDARD.decode(KEY_PEM.lines().filter(|l| !l.starts_with("-----")).collect::<String>()).expect("pem");
    let public = RsaKeyPair::from_pkcs8(&der).expect("key").public_key().as_ref().to_vec();
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(parts[2]).expect("sig");
    signature::UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, public).verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig).expect("RS256 verifies");
    assert_eq!(grant.context.project_id, "proj-1");
}

#[test]
fn at_the_golden_instant_the_assertion_header_and_claims_equal_the_recorded_ones() {
    let want = &golden("golden-gcp-sdk-requests.jsonl")[0];
    let golden_jwt = form_pairs(want["b"].as_str().expect("b")).remove(0).1;
    let g: Vec<&str> = golden_jwt.split('.').collect();
    let iat = decode_segment(g[1])["iat"].as_i64().expect("iat");
    let ours = assertion("prov@proj-1.iam.gserviceaccount.com", "kid-123", &SecretString::from(KEY_PEM), iat).expect("assertion");
    let o: Vec<&str> = ours.expose_secret().split('.').collect();
    assert_eq!(decode_segment(o[0]), decode_segment(g[0]));
    assert_eq!(decode_segment(o[1]), decode_segment(g[1]));
}

fn external(file: &str, impersonate: Option<&str>) -> CredentialSecret {
    CredentialSecret::GcpExternal {
        project_id: "proj-wif-1".into(),
        audience: "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q".into(),
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
            (200, json!({ "accessToken": "sa-token", "expireTime": "2099-01-01T00:00:00Z" }))
        } else {
            (200, json!({ "access_token": "sts-token", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 3600 }))
        }
    }
    let recorder = Recorder::start(answer).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("oidc");
    std::fs::write(&file, "eyJ.subject.sig\n").expect("write");
    let endpoints = GoogleEndpoints { sts_url: format!("{}/v1/token", recorder.url), iam_credentials_url: recorder.url.clone(), ..GoogleEndpoints::default() };
    let issuer = GcpGrantIssuer::new(endpoints, None).expect("issuer");

    let direct = issuer.issue("w", &external(file.to_str().expect("path"), None)).await.expect("direct");
    let impersonated = issuer.issue("w", &external(file.to_str().expect("path"), Some("sa@proj-wif-1.iam.gserviceaccount.com"))).await.expect("impersonated");

    assert!(matches!(&direct.secret, GrantSecret::Bearer(t) if t.expose_secret() == "sts-token"));
    assert!(matches!(&impersonated.secret, GrantSecret::Bearer(t) if t.expose_secret() == "sa-token"));
    assert_eq!(impersonated.context.project_id, "proj-wif-1");
    let seen = recorder.seen();
    let sts = seen[0].form();
    let keys: Vec<&str> = sts.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["grant_type", "audience", "scope", "requested_token_type", "subject_token", "subject_token_type"]);
    assert_eq!(sts[0].1, "urn:ietf:params:oauth:grant-type:token-exchange");
    assert_eq!(sts[4].1, "eyJ.subject.sig");
    let imp = &seen[2];
    assert_eq!(imp.path, "/v1/projects/-/serviceAccounts/sa@proj-wif-1.iam.gserviceaccount.com:generateAccessToken");
    assert_eq!(imp.header("authorization"), Some("Bearer sts-token"));
    let body: Value = serde_json::from_str(&imp.body).expect("json");
    assert_eq!(body, json!({ "scope": ["https://www.googleapis.com/auth/compute"], "lifetime": "3600s" }));
}
