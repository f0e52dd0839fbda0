//! The HTTP side of the token exchanges (Azure AD, Google OAuth, STS, IAM Credentials):
//! form posts whose fields go in the order the official SDKs send them, JSON posts with a
//! bearer token, answers capped at 1 MiB, 30-second timeouts, and failures turned into
//! `CredentialsError`s that carry the endpoint's error code and description (never the
//! request, which holds the secret).
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use serde_json::Value;

use crate::model::CredentialsError;

/// The largest answer read.
const MAX_ANSWER: usize = 1 << 20;

/// A client of token endpoints.
#[derive(Debug, Clone)]
pub struct TokenClient {
    http: reqwest::Client,
}

impl TokenClient {
    /// A client trusting the platform's roots plus `extra_root_pem` (a test or demo CA).
    pub fn new(extra_root_pem: Option<&str>) -> Result<Self, CredentialsError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No redirect is followed: reqwest's default re-sends a 307/308 request, secret
        // form included, to whatever host the answer names.
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("levelrail-credentials/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = extra_root_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes()).map_err(|_| {
                CredentialsError::FailedPrecondition("the extra root certificate is not PEM".into())
            })?;
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder
            .build()
            .map_err(|e| CredentialsError::Unexpected(anyhow::anyhow!("token client: {e}")))?;
        Ok(Self { http })
    }

    /// POSTs `fields` as `application/x-www-form-urlencoded`, in order; `what` names the
    /// endpoint in errors.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        fields: &[(&str, &str)],
        what: &str,
    ) -> Result<Value, CredentialsError> {
        let body = SecretString::from(form(fields));
        let req = self
            .http
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.expose_secret().to_owned());
        self.answer(req, what).await
    }

    /// POSTs `body` as JSON with `bearer`.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        bearer: &SecretString,
        body: &Value,
        what: &str,
    ) -> Result<Value, CredentialsError> {
        let req = self
            .http
            .post(url)
            .bearer_auth(bearer.expose_secret())
            .json(body);
        self.answer(req, what).await
    }

    async fn answer(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<Value, CredentialsError> {
        let unreachable = |e: reqwest::Error| {
            let how = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "could not connect"
            } else {
                "connection failed"
            };
            CredentialsError::Unavailable(format!("{what}: {how}"))
        };
        let mut resp = req.send().await.map_err(unreachable)?;
        let status = resp.status();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
            if bytes.len() + chunk.len() > MAX_ANSWER {
                return Err(CredentialsError::Unavailable(format!(
                    "{what}: the answer exceeds 1 MiB"
                )));
            }
            bytes.extend_from_slice(&chunk);
        }
        if status.is_redirection() {
            return Err(CredentialsError::Unavailable(format!(
                "{what} answered HTTP {} with a redirect, which is not followed: the \
                 request carries a secret (check the endpoint)",
                status.as_u16()
            )));
        }
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            if body.is_object() {
                return Ok(body);
            }
            return Err(CredentialsError::Unavailable(format!(
                "{what}: the answer is not a JSON object"
            )));
        }
        let message = format!(
            "{what} refused the exchange (HTTP {}): {}",
            status.as_u16(),
            describe(&body)
        );
        if status.is_server_error() || status.as_u16() == 429 {
            Err(CredentialsError::Unavailable(message))
        } else {
            Err(CredentialsError::PermissionDenied(message))
        }
    }
}

/// `error` / `error_description` (OAuth), or `error.status` / `error.message` (Google APIs),
/// clipped to one line.
fn describe(body: &Value) -> String {
    let text = match (body.get("error"), body.get("error_description")) {
        (Some(Value::String(code)), Some(Value::String(d))) => format!("{code}: {d}"),
        (Some(Value::String(code)), _) => code.clone(),
        (Some(Value::Object(e)), _) => {
            let status = e.get("status").and_then(Value::as_str).unwrap_or_default();
            let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
            format!("{status}: {message}")
        }
        _ => "no error description".to_owned(),
    };
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(300)
        .collect()
}

/// `k=v&…`, encoded like Python's `urlencode` (what the official SDKs send): unreserved
/// characters kept, space as `+`, everything else `%XX`.
pub(crate) fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `expires_in` (seconds) of an OAuth answer, as an expiry time.
pub(crate) fn expiry(body: &Value) -> Option<time::OffsetDateTime> {
    let secs = body.get("expires_in").and_then(|v| {
        v.as_i64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    })?;
    Some(time::OffsetDateTime::now_utc() + time::Duration::seconds(secs))
}

/// `access_token` of an OAuth answer.
pub(crate) fn access_token(body: &Value, what: &str) -> Result<SecretString, CredentialsError> {
    body.get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(|t| SecretString::from(t.to_owned()))
        .ok_or_else(|| {
            CredentialsError::Unavailable(format!("{what}: the answer holds no access_token"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// A listener that answers every connection with `answer` (after reading the request
    /// head) and counts the connections.
    async fn answering(answer: String) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut buf = vec![0; 64 * 1024];
                let _ = conn.read(&mut buf).await;
                let _ = conn.write_all(answer.as_bytes()).await;
            }
        });
        (url, seen)
    }

    #[tokio::test]
    async fn a_redirect_is_refused_and_the_secret_never_reaches_its_target() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
        let (elsewhere, reached) = answering(ok.to_owned()).await;
        for status in [
            "307 Temporary Redirect",
            "308 Permanent Redirect",
            "302 Found",
        ] {
            let (endpoint, _) = answering(format!(
                "HTTP/1.1 {status}\r\nlocation: {elsewhere}/token\r\ncontent-length: 0\r\n\r\n"
            ))
            .await;
            let client = TokenClient::new(None).expect("client");
            let err = client
                .post_form(
                    &endpoint,
                    &[("client_secret", "s3cr3t")],
                    "the token endpoint",
                )
                .await
                .expect_err("a redirect is an error");
            let text = err.to_string();
            assert!(text.contains("redirect"), "{status}: {text}");
            assert!(
                !text.contains("s3cr3t") && !text.contains(&elsewhere),
                "{text}"
            );
        }
        assert_eq!(reached.load(Ordering::SeqCst), 0, "a redirect was followed");
    }

    #[test]
    fn forms_encode_like_python() {
        assert_eq!(
            form(&[
                ("scope", "https://management.azure.com/.default"),
                ("a b", "x~y*")
            ]),
            "scope=https%3A%2F%2Fmanagement.azure.com%2F.default&a+b=x~y%2A"
        );
        let answer = serde_json::json!({ "error": "invalid_client", "error_description": "AADSTS7000215: bad\nsecret" });
        assert_eq!(
            describe(&answer),
            "invalid_client: AADSTS7000215: bad secret"
        );
    }
}
