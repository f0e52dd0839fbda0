//! The connection to the control plane: the endpoint (URL, timeouts, TLS trust) and the
//! interceptor that puts `authorization: Bearer <token>` on every request. Every command group
//! builds its generated client as `XClient::new(ctx.channel().await?)`.
use std::fmt;
use std::path::Path;
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Request, Status};

use crate::error::{CliError, root_cause};

/// A channel whose every request carries the bearer token.
pub(crate) type AuthedChannel = InterceptedService<Channel, BearerAuth>;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
// VerifyCredential runs a real probe at the provider, which can take a while.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(90);

/// Adds `authorization: Bearer <token>` to each request. The header value is marked
/// sensitive and `Debug` is redacted.
#[derive(Clone)]
pub(crate) struct BearerAuth {
    header: MetadataValue<Ascii>,
}

impl BearerAuth {
    /// Builds the header value; a token that cannot be a header value is an input error.
    pub(crate) fn new(token: &SecretString) -> Result<Self, CliError> {
        let mut header = MetadataValue::try_from(format!("Bearer {}", token.expose_secret()))
            .map_err(|_| {
                CliError::usage("the API token contains characters that cannot be sent in a header")
            })?;
        header.set_sensitive(true);
        Ok(Self { header })
    }
}

impl fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerAuth(<redacted>)")
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.header.clone());
        Ok(request)
    }
}

/// A validated, not yet connected control-plane endpoint plus its credentials.
#[derive(Debug)]
pub(crate) struct Connection {
    api_url: String,
    endpoint: Endpoint,
    auth: BearerAuth,
}

impl Connection {
    /// Validates `api_url` and, for https, loads the trust roots: `ca_cert` when given, the
    /// public web PKI otherwise. A plain http:// URL is refused unless its host is this
    /// machine (the token would cross the network in clear text) or `insecure` is set.
    pub(crate) fn new(
        api_url: &str,
        ca_cert: Option<&Path>,
        auth: BearerAuth,
        insecure: bool,
    ) -> Result<Self, CliError> {
        let invalid =
            |reason: &str| CliError::usage(format!("invalid --api-url \"{api_url}\": {reason}"));
        let endpoint = Endpoint::from_shared(api_url.to_owned())
            .map_err(|e| invalid(&root_cause(&e)))?
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT);
        let endpoint = match endpoint.uri().scheme_str() {
            Some("http") if insecure || endpoint.uri().host().is_some_and(is_loopback) => endpoint,
            Some("http") => {
                return Err(invalid(
                    "plain http:// to another machine would send the API token in clear \
                     text; use https:// (with --ca-cert for the control plane's own CA), or \
                     pass --insecure on a network you trust",
                ));
            }
            Some("https") => {
                endpoint
                    .tls_config(tls_config(ca_cert)?)
                    .map_err(|e| match ca_cert {
                        Some(path) => CliError::usage(format!(
                            "invalid --ca-cert {}: {}",
                            path.display(),
                            root_cause(&e)
                        )),
                        None => CliError::usage(format!("cannot set up TLS: {}", root_cause(&e))),
                    })?
            }
            _ => return Err(invalid("want an http:// or https:// URL")),
        };
        Ok(Self {
            api_url: api_url.to_owned(),
            endpoint,
            auth,
        })
    }

    /// The URL as the operator gave it, for messages.
    pub(crate) fn api_url(&self) -> &str {
        &self.api_url
    }

    /// True when the URL is plain http (so `--ca-cert` has no effect).
    pub(crate) fn is_plaintext(&self) -> bool {
        self.endpoint.uri().scheme_str() == Some("http")
    }

    /// Connects now, so an unreachable control plane is reported before any request.
    pub(crate) async fn connect(&self) -> Result<AuthedChannel, CliError> {
        let channel = self
            .endpoint
            .connect()
            .await
            .map_err(|e| CliError::unreachable(&self.api_url, &root_cause(&e)))?;
        Ok(InterceptedService::new(channel, self.auth.clone()))
    }
}

/// `localhost` or a loopback address (`127.0.0.0/8`, `[::1]`).
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn tls_config(ca_cert: Option<&Path>) -> Result<ClientTlsConfig, CliError> {
    let Some(path) = ca_cert else {
        return Ok(ClientTlsConfig::new().with_webpki_roots());
    };
    let invalid =
        |reason: String| CliError::usage(format!("invalid --ca-cert {}: {reason}", path.display()));
    let pem = std::fs::read(path).map_err(|e| invalid(e.to_string()))?;
    // rustls would accept a file with no certificate and then trust nothing; say so instead.
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(invalid("no PEM certificate found".to_owned()));
    }
    Ok(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> BearerAuth {
        BearerAuth::new(&SecretString::from("t0ken")).expect("valid token")
    }

    #[test]
    fn the_interceptor_adds_a_bearer_authorization_header() {
        let request = auth().call(Request::new(())).expect("intercepts");
        let header = request.metadata().get("authorization").expect("header set");
        assert_eq!(header.to_str().expect("ascii"), "Bearer t0ken");
    }

    #[test]
    fn the_interceptor_debug_output_hides_the_token() {
        assert!(!format!("{:?}", auth()).contains("t0ken"));
    }

    #[test]
    fn a_token_with_a_newline_is_an_input_error() {
        let err = BearerAuth::new(&SecretString::from("a\nb")).expect_err("rejected");
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn a_url_without_http_or_https_is_rejected() {
        let err = Connection::new("ftp://example", None, auth(), false).expect_err("rejected");
        assert_eq!(
            err.to_string(),
            "invalid --api-url \"ftp://example\": want an http:// or https:// URL"
        );
    }

    #[test]
    fn plain_http_carries_the_token_only_to_this_machine_unless_insecure() {
        for local in [
            "http://127.0.0.1:7443",
            "http://127.8.9.1:7443",
            "http://localhost:7443",
            "http://[::1]:7443",
        ] {
            Connection::new(local, None, auth(), false).expect(local);
        }
        for remote in [
            "http://cp.example:7443",
            "http://10.0.0.5:7443",
            "http://[2001:db8::1]:7443",
        ] {
            let err = Connection::new(remote, None, auth(), false).expect_err(remote);
            assert_eq!(err.exit_code(), 2, "{remote}");
            let text = err.to_string();
            assert!(
                text.contains("clear text") && text.contains("--insecure"),
                "{text}"
            );
            assert!(!text.contains("t0ken"), "{text}");
            Connection::new(remote, None, auth(), true).expect("--insecure");
        }
    }

    #[test]
    fn https_without_a_ca_cert_uses_the_public_roots() {
        Connection::new("https://levelrail.example:7443", None, auth(), false).expect("accepted");
    }

    #[test]
    fn a_ca_cert_file_without_a_certificate_is_rejected() {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), "not a certificate").expect("write");
        let err =
            Connection::new("https://x:1", Some(file.path()), auth(), false).expect_err("rejected");
        assert!(
            err.to_string().ends_with("no PEM certificate found"),
            "{err}"
        );
    }
}
