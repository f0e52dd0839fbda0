//! Enrollment: generate a P-256 key, send a CSR with the join token over the pinned
//! connection, and turn the answer into a node [`Identity`].
//!
//! Connection failures and transient statuses are retried with backoff until
//! `APP_ENROLL_RETRY_SECONDS` is spent (exit 8). The pin check failing is final (exit 3) and
//! happens before the token leaves the process. Token refusals map to their own codes from
//! the `x-levelrail-reason` metadata. Logs name the token id only, never the token.

use levelrail_proto::nodes::v1::enrollment_service_client::EnrollmentServiceClient;
use levelrail_proto::nodes::v1::{EnrollRequest, EnrollResponse};
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256};
use secrecy::SecretString;
use std::time::Duration;
use tonic::{Code, Status};
use tracing::{info, warn};

use crate::config::Enrollment;
use crate::connect::{DialError, Dialer};
use crate::exit::AgentError;
use crate::identity::{DEFAULT_HEARTBEAT_SECONDS, Identity, certificate_has_key, certs};
use crate::retry::{Attempt, Backoff};

/// The metadata key carrying why a token was refused.
pub const REASON_METADATA: &str = "x-levelrail-reason";

/// Enrolls this node; retries an unreachable control plane for at most `budget`.
pub async fn enroll(e: &Enrollment, budget: Duration) -> Result<Identity, AgentError> {
    let unexpected =
        |what: &str, err: rcgen::Error| AgentError::Unexpected(format!("{what}: {err}"));
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
        .map_err(|err| unexpected("key generation", err))?;
    let csr_pem =
        csr_pem(&e.node_name, &key).map_err(|err| unexpected("certificate request", err))?;
    let dialer = Dialer::new(&e.addr, e.pin, None, None)?;
    let addresses = dialer.local_addresses().await;
    let mut backoff = Backoff::with_budget(budget);
    info!(token_id = %e.token.token_id(), node_name = %e.node_name, control_plane = %e.addr, pin = %e.pin, "enrolling");
    loop {
        let last_error = match attempt(&dialer, e, &addresses, &csr_pem, &backoff).await {
            Ok(response) => return identity_from(e, response, &key),
            Err(Attempt::Fatal(err)) => return Err(err),
            Err(Attempt::Retry(why)) => why,
        };
        warn!(token_id = %e.token.token_id(), error = %last_error, "enrollment attempt failed; retrying");
        if !backoff.wait().await {
            return Err(AgentError::Unreachable {
                addr: e.addr.to_string(),
                seconds: budget.as_secs(),
                last_error,
            });
        }
    }
}

async fn attempt(
    dialer: &Dialer,
    e: &Enrollment,
    addresses: &[String],
    csr_pem: &str,
    backoff: &Backoff,
) -> Result<EnrollResponse, Attempt> {
    let channel = match dialer
        .connect(backoff.remaining().unwrap_or(Duration::MAX))
        .await
    {
        Ok(channel) => channel,
        Err(DialError::PinRejected) => return Err(Attempt::Fatal(AgentError::PinMismatch)),
        Err(DialError::Failed(why)) => return Err(Attempt::Retry(why)),
    };
    // Only now, over a connection whose server chained to the pinned CA, does the token
    // leave the process.
    let request = EnrollRequest {
        join_token: e.token.expose().to_owned(),
        node_name: e.node_name.clone(),
        addresses: addresses.to_vec(),
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        csr_pem: csr_pem.to_owned(),
    };
    match EnrollmentServiceClient::new(channel).enroll(request).await {
        Ok(response) => Ok(response.into_inner()),
        Err(_) if dialer.pin_rejected() => Err(Attempt::Fatal(AgentError::PinMismatch)),
        Err(status) => Err(classify(&status, e)),
    }
}

/// Maps an `Enroll` failure to a final error or a retry.
pub(crate) fn classify(status: &Status, e: &Enrollment) -> Attempt {
    let token_id = e.token.token_id().to_owned();
    let message = one_line(&e.token.redact(status.message()));
    match status.code() {
        Code::Unauthenticated => Attempt::Fatal(match reason(status).as_deref() {
            Some("expired") => AgentError::TokenExpired { token_id },
            Some("used") => AgentError::TokenUsed { token_id },
            Some("revoked") => AgentError::TokenRevoked { token_id },
            Some("fingerprint") => AgentError::TokenWrongCa { token_id },
            Some("wrong_name") => AgentError::TokenRejected {
                token_id,
                why: format!("it is not valid for node name {}", e.node_name),
            },
            _ => AgentError::TokenRejected {
                token_id,
                why: "the control plane does not know it".into(),
            },
        }),
        // Another redemption of the same token won the race.
        Code::FailedPrecondition => Attempt::Fatal(AgentError::TokenUsed { token_id }),
        Code::AlreadyExists => Attempt::Fatal(AgentError::NameTaken {
            name: e.node_name.clone(),
        }),
        Code::InvalidArgument | Code::PermissionDenied => {
            Attempt::Fatal(AgentError::TokenRejected {
                token_id,
                why: message,
            })
        }
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Aborted
        | Code::Cancelled
        | Code::Unknown
        | Code::Internal => Attempt::Retry(format!("{:?}: {message}", status.code())),
        code => Attempt::Fatal(AgentError::Unexpected(format!(
            "enrollment failed: {code:?}: {message}"
        ))),
    }
}

/// The refusal reason: the metadata when present, else a guess from the message.
fn reason(status: &Status) -> Option<String> {
    if let Some(value) = status.metadata().get(REASON_METADATA) {
        return value.to_str().ok().map(|v| v.trim().to_ascii_lowercase());
    }
    let message = status.message().to_ascii_lowercase();
    let guess = [
        ("expired", "expired"),
        ("revoked", "revoked"),
        ("used", "used"),
        ("name", "wrong_name"),
    ]
    .into_iter()
    .find(|(word, _)| message.contains(word))
    .map(|(_, reason)| reason);
    Some(guess.unwrap_or("unknown").to_owned())
}

fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    flat.chars().take(200).collect()
}

fn csr_pem(node_name: &str, key: &KeyPair) -> Result<String, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, node_name);
    params.distinguished_name = dn;
    params.serialize_request(key)?.pem()
}

fn identity_from(e: &Enrollment, r: EnrollResponse, key: &KeyPair) -> Result<Identity, AgentError> {
    let bad = |why: &str| {
        AgentError::Unexpected(format!(
            "the control plane's enrollment answer is unusable: {why}"
        ))
    };
    if r.node_id.is_empty() {
        return Err(bad("no node id"));
    }
    let ca = certs(&r.ca_pem)
        .into_iter()
        .next()
        .ok_or_else(|| bad("no CA certificate"))?;
    if !e.pin.matches(&ca) {
        return Err(bad(
            "its CA certificate does not match the pinned fingerprint",
        ));
    }
    let cert = certs(&r.certificate_pem)
        .into_iter()
        .next()
        .ok_or_else(|| bad("no certificate"))?;
    if !certificate_has_key(&cert, key) {
        return Err(bad("the certificate is not for this node's key"));
    }
    let interval = match r.heartbeat_interval_seconds {
        0 => DEFAULT_HEARTBEAT_SECONDS,
        n => n,
    };
    let identity = Identity::new(
        r.node_id,
        e.node_name.clone(),
        &e.addr,
        e.pin,
        r.certificate_pem,
        SecretString::from(key.serialize_pem()),
        r.ca_pem,
        interval,
    )
    .map_err(|why| bad(&why))?;
    info!(node_id = %identity.node_id, token_id = %e.token.token_id(), "enrolled");
    Ok(identity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ControlPlaneAddr;
    use crate::token::JoinToken;
    use tonic::metadata::MetadataValue;

    fn enrollment() -> Enrollment {
        let fp = "ab".repeat(32);
        let token = JoinToken::parse(&format!("LR1.{fp}.njt_t.c2VjcmV0c2VjcmV0")).unwrap();
        Enrollment {
            addr: ControlPlaneAddr::parse("127.0.0.1:1").unwrap(),
            pin: token.fingerprint(),
            token,
            node_name: "web-1".into(),
        }
    }

    fn code_of(status: Status) -> Option<u8> {
        match classify(&status, &enrollment()) {
            Attempt::Fatal(e) => Some(e.exit_code().code()),
            Attempt::Retry(_) => None,
        }
    }

    fn refused(reason: &str) -> Status {
        let mut status = Status::unauthenticated(format!("join token {reason}"));
        status
            .metadata_mut()
            .insert(REASON_METADATA, MetadataValue::try_from(reason).unwrap());
        status
    }

    #[test]
    fn refusals_map_to_their_exit_codes() {
        let table = [
            (refused("expired"), Some(4)),
            (refused("used"), Some(5)),
            (refused("revoked"), Some(6)),
            (refused("unknown"), Some(7)),
            (refused("wrong_name"), Some(7)),
            (refused("fingerprint"), Some(3)),
            (Status::unauthenticated("join token expired"), Some(4)),
            (Status::unauthenticated("no"), Some(7)),
            (Status::failed_precondition("lost the race"), Some(5)),
            (Status::already_exists("taken"), Some(10)),
            (Status::invalid_argument("bad csr"), Some(7)),
            (Status::unimplemented("old server"), Some(1)),
            (Status::unavailable("down"), None),
            (Status::internal("db"), None),
        ];
        for (status, expected) in table {
            let shown = format!("{status:?}");
            assert_eq!(code_of(status), expected, "{shown}");
        }
    }

    #[test]
    fn server_messages_are_redacted_and_kept_on_one_line() {
        let e = enrollment();
        let status =
            Status::invalid_argument(format!("bad token {}\nsecond line", e.token.expose()));
        let Attempt::Fatal(err) = classify(&status, &e) else {
            panic!("expected a final error")
        };
        let line = err.one_line();
        assert!(!line.contains("c2VjcmV0c2VjcmV0"), "{line}");
        assert!(!line.contains('\n'));
    }
}
