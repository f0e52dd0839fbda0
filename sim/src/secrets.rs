//! Canary secrets: random values that are valid credentials for every provider's parser, so
//! a test can store them through every path and then prove they never come back out.
use std::fmt::Write as _;

/// A random 64-character lowercase hex canary.
#[derive(Debug, Clone)]
pub struct Canary(String);

impl Canary {
    /// A fresh canary.
    pub fn new() -> Self {
        let mut s = String::with_capacity(64);
        for _ in 0..4 {
            let n: u128 = rand_u128();
            let _ = write!(s, "{:032x}", n);
        }
        s.truncate(64);
        Self(s)
    }

    /// The full value.
    pub fn value(&self) -> &str {
        &self.0
    }

    /// Pieces of the canary; finding any of them in an output counts as a leak (catches
    /// partial or re-encoded leaks better than the full string).
    pub fn needles(&self) -> Vec<&str> {
        vec![
            &self.0[..16],
            &self.0[16..32],
            &self.0[32..48],
            &self.0[48..],
        ]
    }

    /// Panics naming `what` when any needle occurs in `haystack`.
    pub fn assert_absent(&self, what: &str, haystack: &[u8]) {
        for n in self.needles() {
            let found = haystack.windows(n.len()).any(|w| w == n.as_bytes());
            assert!(!found, "canary secret found in {what}");
        }
    }

    /// Hetzner token (64 alphanumerics).
    pub fn hetzner_token(&self) -> String {
        self.0.clone()
    }

    /// DigitalOcean token.
    pub fn digitalocean_token(&self) -> String {
        format!("dop_v1_{}", self.0)
    }

    /// AWS secret access key (40 characters).
    pub fn aws_secret(&self) -> String {
        self.0[..40].to_owned()
    }

    /// Azure service-principal JSON with the canary as client secret.
    pub fn azure_json(&self) -> String {
        serde_json::json!({
            "tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "client_id": "0f6e7a5c-1c2b-4c3d-9e8f-112233445566",
            "client_secret": self.0,
            "subscription_id": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
            "resource_group": "levelrail-nodes"
        })
        .to_string()
    }

    /// GCP service-account key whose private key body carries the canary.
    pub fn gcp_json(&self) -> String {
        // A base64 body: a fixed prefix, the canary (hex is valid base64), padded to a
        // multiple of 4 and folded at 64 characters like a real PEM.
        let raw = format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}", self.0);
        let folded: Vec<String> = raw
            .as_bytes()
            .chunks(64)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        let body = folded.join("\n");
        serde_json::json!({
            "type": "service_account",
            "project_id": "levelrail-test-1",
            "private_key_id": "0123456789abcdef0123456789abcdef01234567",
            "private_key": format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"),
            "client_email": "nodes@levelrail-test-1.iam.gserviceaccount.com",
            "client_id": "112233445566778899001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/nodes%40levelrail-test-1.iam.gserviceaccount.com",
            "universe_domain": "googleapis.com"
        })
        .to_string()
    }
}

impl Default for Canary {
    fn default() -> Self {
        Self::new()
    }
}

fn rand_u128() -> u128 {
    // Enough randomness for a test canary without another dependency: hash the time, a
    // counter and the address of a stack value.
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    let a = h.finish();
    let mut h2 = RandomState::new().build_hasher();
    h2.write_u64(a);
    (u128::from(a) << 64) | u128::from(h2.finish())
}
