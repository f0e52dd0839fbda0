//! The provisioner's side of the internal `CredentialBroker` when the credentials service
//! runs as its own process: a [`GrpcBroker`] issuing grants over mTLS gRPC, with the
//! grants cached here and the cache kept honest by `WatchCredentials` (a replaced or
//! deleted credential drops its grant the moment the service reports it). While the
//! service is unreachable a cached grant that has not expired is still used, so a restart
//! of the credentials service stalls nothing that already holds a grant.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use levelrail_clouds::ProviderId;
use levelrail_clouds::registry::{AccessBroker, AwsKeys, BrokerError, Grant, GrantContext};
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::internal::v1::broker_failure::Reason;
use levelrail_proto::credentials::internal::v1::credential_broker_client::CredentialBrokerClient;
use levelrail_proto::credentials::v1::Provider;
use prost::Message as _;
use secrecy::SecretString;
use time::OffsetDateTime;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tracing::{debug, info, warn};

/// A cached grant is handed out while it has at least this long left; past that a new one
/// is asked for (and the cached one is still used if the service cannot be reached).
const GRANT_MARGIN: Duration = Duration::from_secs(240);
/// The longest pause between attempts to reopen the watch stream.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(2);

/// The client identity and trust of the mTLS channel to the broker.
#[derive(Clone)]
pub struct BrokerTls {
    /// The internal CA that issued the credentials service's certificate (PEM).
    pub ca_pem: Vec<u8>,
    /// The provisioner's client certificate chain (PEM).
    pub cert_pem: Vec<u8>,
    /// Its private key (PEM).
    pub key_pem: Vec<u8>,
    /// The name the service's certificate must hold (default: the URL's host).
    pub server_name: Option<String>,
}

impl std::fmt::Debug for BrokerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrokerTls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// Grants from a credentials service over gRPC.
#[derive(Debug, Clone)]
pub struct GrpcBroker {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    channel: Channel,
    client: CredentialBrokerClient<Channel>,
    grants: Mutex<Grants>,
}

/// The cached grants, and which credential each provider has as of the latest state the
/// service streamed (`None` until the first): a grant is cached and served only while its
/// credential is the provider's, so one issued for a credential replaced while the request
/// was in flight is never kept.
#[derive(Debug, Default)]
struct Grants {
    by_provider: HashMap<ProviderId, Grant>,
    current: Option<HashMap<ProviderId, String>>,
}

impl Grants {
    fn is_current(&self, provider: ProviderId, grant: &Grant) -> bool {
        self.current
            .as_ref()
            .is_none_or(|c| c.get(&provider) == Some(&grant.credential_id))
    }
}

/// What the watch stream reports besides credential changes: the live API tokens' ids,
/// secret digests, scopes and expiries (the whole set, each time).
pub type TokenDigests = Vec<bpb::ApiTokenDigest>;

impl GrpcBroker {
    /// A broker at `url` (`https://host:port`). Connects lazily: the service may start
    /// after the provisioner.
    pub fn connect(url: &str, tls: Option<BrokerTls>) -> anyhow::Result<Self> {
        let mut endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| anyhow::anyhow!("--credentials-url `{url}`: {e}"))?
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(30))
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(5))
            .keep_alive_while_idle(true);
        if let Some(tls) = tls {
            let mut cfg = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(tls.ca_pem))
                .identity(Identity::from_pem(tls.cert_pem, tls.key_pem));
            if let Some(name) = tls.server_name {
                cfg = cfg.domain_name(name);
            }
            endpoint = endpoint
                .tls_config(cfg)
                .map_err(|e| anyhow::anyhow!("the broker's TLS configuration: {e}"))?;
        }
        let channel = endpoint.connect_lazy();
        Ok(Self {
            inner: Arc::new(Inner {
                client: CredentialBrokerClient::new(channel.clone()),
                channel,
                grants: Mutex::new(Grants::default()),
            }),
        })
    }

    /// The channel to the credentials service (mTLS), for its other internal services.
    pub fn channel(&self) -> Channel {
        self.inner.channel.clone()
    }

    /// Follows `WatchCredentials` for as long as the returned task runs: drops the cached
    /// grant of every credential replaced or deleted, and hands each new set of API token
    /// digests to `on_tokens`. Reconnects with a short backoff when the stream breaks.
    pub fn spawn_watch(
        &self,
        on_tokens: impl Fn(TokenDigests) + Send + Sync + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let inner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            let mut pause = Duration::from_millis(100);
            let mut failures = 0u32;
            loop {
                match inner
                    .client
                    .clone()
                    .watch_credentials(bpb::WatchCredentialsRequest {})
                    .await
                {
                    Ok(response) => {
                        let mut stream = response.into_inner();
                        info!("following the credentials service's changes");
                        loop {
                            match stream.message().await {
                                Ok(Some(state)) => {
                                    pause = Duration::from_millis(100);
                                    failures = 0;
                                    on_tokens(inner.apply(state));
                                }
                                Ok(None) => break,
                                Err(e) => {
                                    warn!(code = ?e.code(), "the credentials service's change stream broke");
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => {
                        failures += 1;
                        // A wrong CA, certificate or name fails the same way every time.
                        if failures % 20 == 3 {
                            warn!(code = ?e.code(), error = %e.message(), failures, "cannot reach the credentials service (check --credentials-url, --credentials-name and the internal certificates)");
                        } else {
                            debug!(code = ?e.code(), error = %e.message(), "cannot follow the credentials service yet");
                        }
                    }
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_RECONNECT_PAUSE);
            }
        })
    }

    async fn ask(
        &self,
        provider: ProviderId,
        purpose: &str,
        fresh: bool,
    ) -> Result<Grant, BrokerError> {
        let request = bpb::IssueAccessRequest {
            provider: Provider::from(provider) as i32,
            purpose: purpose.to_owned(),
            fresh,
        };
        let response = self
            .inner
            .client
            .clone()
            .issue_access(request)
            .await
            .map_err(|status| broker_error(provider, &status))?;
        let grant = response
            .into_inner()
            .grant
            .ok_or_else(|| BrokerError::Failed("the credentials service sent no grant".into()))
            .and_then(grant_from_proto)?;
        let mut grants = self.inner.lock();
        if grants.is_current(provider, &grant) {
            grants.by_provider.insert(provider, grant.clone());
        }
        Ok(grant)
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Grants> {
        self.grants.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops every cached grant whose credential is no longer the provider's; returns the
    /// token digests.
    fn apply(&self, state: bpb::CredentialsState) -> TokenDigests {
        let current: HashMap<ProviderId, String> = state
            .credentials
            .into_iter()
            .filter_map(|c| {
                let provider = Provider::try_from(c.provider).ok()?;
                Some((ProviderId::try_from(provider).ok()?, c.credential_id))
            })
            .collect();
        let mut grants = self.lock();
        grants.by_provider.retain(|provider, grant| {
            let keep = current.get(provider) == Some(&grant.credential_id);
            if !keep {
                info!(%provider, credential_id = %grant.credential_id, "credential changed; cached grant dropped");
            }
            keep
        });
        grants.current = Some(current);
        drop(grants);
        state.api_tokens
    }

    /// The cached grant for `provider` if it lasts at least `margin` more.
    fn cached(&self, provider: ProviderId, margin: Duration) -> Option<Grant> {
        let now = OffsetDateTime::now_utc();
        let grants = self.lock();
        grants
            .by_provider
            .get(&provider)
            .filter(|g| grants.is_current(provider, g))
            .filter(|g| g.expires_at.is_none_or(|at| at - margin > now))
            .cloned()
    }
}

#[async_trait]
impl AccessBroker for GrpcBroker {
    async fn issue(&self, provider: ProviderId, purpose: &str) -> Result<Grant, BrokerError> {
        if let Some(grant) = self.inner.cached(provider, GRANT_MARGIN) {
            return Ok(grant);
        }
        match self.ask(provider, purpose, false).await {
            Err(BrokerError::Unavailable(message)) => {
                // Still valid, if no longer for long: better than stalling.
                match self.inner.cached(provider, Duration::ZERO) {
                    Some(grant) => {
                        warn!(%provider, %message, "credentials service unreachable; using the cached grant");
                        Ok(grant)
                    }
                    None => Err(BrokerError::Unavailable(message)),
                }
            }
            other => other,
        }
    }

    async fn issue_fresh(&self, provider: ProviderId, purpose: &str) -> Result<Grant, BrokerError> {
        self.inner.lock().by_provider.remove(&provider);
        self.ask(provider, purpose, true).await
    }

    fn known_credential_id(&self, provider: ProviderId) -> Option<String> {
        self.inner.lock().current.as_ref()?.get(&provider).cloned()
    }
}

/// A refused or failed `IssueAccess` as the registry's error, by the typed reason in the
/// status details. Without one the call did not reach the broker's answer (a connection
/// reset while the service restarts, a proxy in between): that is transient, except a
/// refusal of this provisioner's certificate, which only its operator can fix, and a
/// FAILED_PRECONDITION, the code an older service answered "no credential" with.
fn broker_error(provider: ProviderId, status: &tonic::Status) -> BrokerError {
    // The service details every refusal of its own (a credential that no longer decrypts
    // is `FAILED`): a status without a reason is the transport's.
    let typed = bpb::BrokerFailure::decode(status.details())
        .ok()
        .and_then(|f| Reason::try_from(f.reason).ok())
        .filter(|r| *r != Reason::Unspecified);
    let message = match status.message() {
        "" => format!("the credentials service answered {:?}", status.code()),
        m => m.to_owned(),
    };
    match (typed, status.code()) {
        (Some(Reason::NotConnected), _) | (None, tonic::Code::FailedPrecondition) => {
            BrokerError::NotConnected(provider)
        }
        (Some(Reason::Unavailable), _) => {
            BrokerError::Unavailable(format!("credentials service: {message}"))
        }
        (Some(Reason::Refused | Reason::Invalid | Reason::Failed), _) => {
            BrokerError::Failed(message)
        }
        (None, tonic::Code::PermissionDenied) => BrokerError::Failed(format!(
            "the credentials service refused this provisioner's certificate ({message}): \
             check --internal-cert"
        )),
        (None | Some(Reason::Unspecified), _) => {
            BrokerError::Unavailable(format!("credentials service: {message}"))
        }
    }
}

fn grant_from_proto(g: bpb::AccessGrant) -> Result<Grant, BrokerError> {
    let set = |v: String| Some(v).filter(|v| !v.is_empty());
    let context = g.context.unwrap_or_default();
    let id = context.credential_id;
    let cx = GrantContext {
        region: set(context.region),
        subscription_id: set(context.subscription_id),
        resource_group: set(context.resource_group),
        project_id: set(context.project_id),
    };
    let grant = match g.grant {
        Some(bpb::access_grant::Grant::Bearer(b)) => {
            Grant::bearer(id, SecretString::from(b.token), cx)
        }
        Some(bpb::access_grant::Grant::Aws(a)) if !a.use_ambient => Grant::aws(
            id,
            AwsKeys {
                access_key_id: a.access_key_id,
                secret_access_key: SecretString::from(a.secret_access_key),
                session_token: set(a.session_token).map(SecretString::from),
            },
            cx,
        ),
        _ => {
            return Err(BrokerError::Failed(
                "the credentials service sent a grant this provisioner cannot use".into(),
            ));
        }
    };
    let expires_at = g.expires_at.and_then(|t| {
        OffsetDateTime::from_unix_timestamp_nanos(
            i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos),
        )
        .ok()
    });
    Ok(grant.expiring(expires_at))
}

#[cfg(test)]
mod tests {
    use prost::Message as _;

    use super::*;

    fn detailed(code: tonic::Code, reason: Reason) -> tonic::Status {
        let details = bpb::BrokerFailure {
            reason: reason as i32,
        }
        .encode_to_vec();
        tonic::Status::with_details(code, "m", details.into())
    }

    #[test]
    fn refusals_are_read_from_the_typed_detail_and_bare_statuses_are_transient() {
        let p = ProviderId::Hetzner;
        let cases = [
            (
                detailed(tonic::Code::FailedPrecondition, Reason::NotConnected),
                "not_connected",
            ),
            (
                detailed(tonic::Code::Unavailable, Reason::Unavailable),
                "unavailable",
            ),
            (
                detailed(tonic::Code::PermissionDenied, Reason::Refused),
                "failed",
            ),
            // A credential that no longer decrypts: the service's own, and final.
            (detailed(tonic::Code::DataLoss, Reason::Failed), "failed"),
            // No detail: the connection, not the service (a reset while it restarts).
            (tonic::Status::internal("h2 protocol error"), "unavailable"),
            (tonic::Status::cancelled("reset"), "unavailable"),
            (
                tonic::Status::failed_precondition("older service"),
                "not_connected",
            ),
            (
                tonic::Status::permission_denied("not the provisioner"),
                "failed",
            ),
        ];
        for (status, want) in cases {
            let got = match broker_error(p, &status) {
                BrokerError::NotConnected(_) => "not_connected",
                BrokerError::Unavailable(_) => "unavailable",
                BrokerError::Failed(_) => "failed",
            };
            assert_eq!(got, want, "{status:?}");
        }
    }
}
