//! Test helpers: a fake `CredentialsService` over a mutex'd map that records every request
//! (served next to the fakes of `fake_nodes` and `fake_provisioner`), a scripted
//! `SecretSource`, and `run_cli` which captures the exit code, stdout and stderr.
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, BufRead as _, Cursor, Read as _};
use std::sync::{Arc, Mutex, MutexGuard};

use levelrail_cli::{Io, SecretSource};
use levelrail_proto::credentials::v1::credential_identity::Kind;
use levelrail_proto::credentials::v1::credentials_service_server::{
    CredentialsService, CredentialsServiceServer,
};
use levelrail_proto::credentials::v1::set_credential_request::Credential;
use levelrail_proto::credentials::v1::*;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

use crate::fake_nodes::{FakeNodes, NodesState};
use crate::fake_provisioner::{FakeProvisioner, ProvisionerState};

/// The API token the fake server accepts.
pub(crate) const TOKEN: &str = "test-api-token";
/// A secret value that must never appear in any output.
pub(crate) const CANARY: &str = "CANARY-5ecret-7f3a9c";

/// The wire value of a provider name.
pub(crate) fn provider_value(name: &str) -> i32 {
    let upper = format!("PROVIDER_{}", name.to_ascii_uppercase());
    Provider::from_str_name(&upper).expect("known provider") as i32
}

/// What the fake server holds and saw.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Stored cards, by provider enum value.
    pub(crate) stored: BTreeMap<i32, ProviderStatus>,
    /// Every SetCredential request, in order.
    pub(crate) set_requests: Vec<SetCredentialRequest>,
    /// Every authorization header value received.
    pub(crate) authorizations: Vec<String>,
    /// When set, SetCredential fails with this status.
    pub(crate) fail_set_with: Option<Status>,
    /// What VerifyCredential returns for a stored credential.
    pub(crate) verify_result: Option<VerificationResult>,
}

#[derive(Clone)]
struct FakeCredentials(Arc<Mutex<State>>);

fn card(provider: i32, stored: Option<&ProviderStatus>) -> ProviderStatus {
    stored.cloned().unwrap_or(ProviderStatus {
        provider,
        display_name: format!("display {provider}"),
        ..ProviderStatus::default()
    })
}

/// Records the request's authorization header in `seen` and rejects a wrong token the way
/// the real server does.
pub(crate) fn authorize<T>(request: &Request<T>, seen: &mut Vec<String>) -> Result<(), Status> {
    let header = request
        .metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    seen.push(header.clone());
    if header != format!("Bearer {TOKEN}") {
        return Err(Status::unauthenticated("missing or wrong API token"));
    }
    Ok(())
}

impl FakeCredentials {
    fn check<T>(&self, request: &Request<T>) -> Result<MutexGuard<'_, State>, Status> {
        let mut state = self.0.lock().expect("state lock");
        authorize(request, &mut state.authorizations)?;
        Ok(state)
    }
}

/// The identity a real server would derive, from the non-secret parts only.
fn identity_of(credential: &Credential) -> Kind {
    let field = |json: &str, key: &str| -> String {
        let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        value[key].as_str().unwrap_or_default().to_owned()
    };
    match credential {
        Credential::ApiToken(_) | Credential::Hetzner(_) | Credential::Digitalocean(_) => {
            Kind::Token(TokenIdentity::default())
        }
        Credential::Aws(aws) => Kind::Aws(AwsIdentity {
            mode: if aws.use_ambient_credentials {
                "ambient"
            } else {
                "static"
            }
            .into(),
            access_key_id_last4: aws
                .access_key_id
                .chars()
                .rev()
                .take(4)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect(),
            region: aws.region.clone(),
            role_arn: aws.role_arn.clone(),
            has_session_token: !aws.session_token.is_empty(),
            account: String::new(),
        }),
        Credential::Azure(doc) => Kind::Azure(AzureIdentity {
            tenant_id: field(&doc.json, "tenant_id"),
            client_id: field(&doc.json, "client_id"),
            subscription_id: field(&doc.json, "subscription_id"),
            resource_group: field(&doc.json, "resource_group"),
            auth_mode: "client_secret".into(),
            federated_token_file: String::new(),
        }),
        Credential::Gcp(doc) => Kind::Gcp(GcpIdentity {
            project_id: field(&doc.json, "project_id"),
            client_email: field(&doc.json, "client_email"),
            private_key_id: field(&doc.json, "private_key_id"),
        }),
    }
}

#[tonic::async_trait]
impl CredentialsService for FakeCredentials {
    async fn set_credential(
        &self,
        request: Request<SetCredentialRequest>,
    ) -> Result<Response<SetCredentialResponse>, Status> {
        let mut state = self.check(&request)?;
        let request = request.into_inner();
        state.set_requests.push(request.clone());
        if let Some(status) = state.fail_set_with.clone() {
            return Err(status);
        }
        let credential = request
            .credential
            .ok_or_else(|| Status::invalid_argument("credential: required"))?;
        let status = ProviderStatus {
            provider: request.provider,
            connected: true,
            saved_at: Some(prost_types::Timestamp {
                seconds: 1_767_323_045,
                nanos: 0,
            }),
            identity: Some(CredentialIdentity {
                kind: Some(identity_of(&credential)),
            }),
            last_verification: None,
            display_name: format!("display {}", request.provider),
        };
        state.stored.insert(request.provider, status.clone());
        Ok(Response::new(SetCredentialResponse {
            provider: Some(status),
        }))
    }

    async fn delete_credential(
        &self,
        request: Request<DeleteCredentialRequest>,
    ) -> Result<Response<DeleteCredentialResponse>, Status> {
        let mut state = self.check(&request)?;
        let provider = request.into_inner().provider;
        let deleted = state.stored.remove(&provider).is_some();
        Ok(Response::new(DeleteCredentialResponse {
            deleted,
            provider: Some(card(provider, None)),
        }))
    }

    async fn list_providers(
        &self,
        request: Request<ListProvidersRequest>,
    ) -> Result<Response<ListProvidersResponse>, Status> {
        let state = self.check(&request)?;
        let providers = (1..=5).map(|p| card(p, state.stored.get(&p))).collect();
        Ok(Response::new(ListProvidersResponse { providers }))
    }

    async fn verify_credential(
        &self,
        request: Request<VerifyCredentialRequest>,
    ) -> Result<Response<VerifyCredentialResponse>, Status> {
        let mut state = self.check(&request)?;
        let provider = request.into_inner().provider;
        let result = state.verify_result.clone().unwrap_or_default();
        let Some(card) = state.stored.get_mut(&provider) else {
            return Err(Status::failed_precondition(
                "no credential is stored for this provider",
            ));
        };
        card.last_verification = Some(result.clone());
        let card = card.clone();
        Ok(Response::new(VerifyCredentialResponse {
            result: Some(result),
            provider: Some(card),
        }))
    }
}

/// A running fake server.
pub(crate) struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub(crate) url: String,
    state: Arc<Mutex<State>>,
    nodes: Arc<Mutex<NodesState>>,
    provisioner: Arc<Mutex<ProvisionerState>>,
}

impl TestServer {
    /// Starts the fake over plain HTTP/2 on an ephemeral port of the current runtime.
    pub(crate) async fn start() -> Self {
        Self::start_with(None).await
    }

    /// Starts the fake over TLS with `identity` (certificate and key PEM); the URL uses
    /// `localhost` so the certificate's DNS name matches.
    pub(crate) async fn start_tls(identity: tonic::transport::Identity) -> Self {
        let tls = tonic::transport::ServerTlsConfig::new().identity(identity);
        Self::start_with(Some(tls)).await
    }

    async fn start_with(tls: Option<tonic::transport::ServerTlsConfig>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("local addr").port();
        let url = match tls {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        let state = Arc::new(Mutex::new(State::default()));
        let nodes = Arc::new(Mutex::new(NodesState::default()));
        let provisioner = Arc::new(Mutex::new(ProvisionerState::default()));
        let service = CredentialsServiceServer::new(FakeCredentials(Arc::clone(&state)));
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = tls {
            builder = builder.tls_config(tls).expect("server TLS config");
        }
        tokio::spawn(
            builder
                .add_service(service)
                .add_service(FakeNodes::server(Arc::clone(&nodes)))
                .add_service(FakeProvisioner::server(Arc::clone(&provisioner)))
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        Self {
            url,
            state,
            nodes,
            provisioner,
        }
    }

    /// The credentials fake's state, to arrange or assert on.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("state lock")
    }

    /// The nodes fake's state.
    pub(crate) fn nodes(&self) -> MutexGuard<'_, NodesState> {
        self.nodes.lock().expect("nodes lock")
    }

    /// The provisioner fake's state.
    pub(crate) fn provisioner(&self) -> MutexGuard<'_, ProvisionerState> {
        self.provisioner.lock().expect("provisioner lock")
    }

    /// The one SetCredential request received; panics unless there was exactly one.
    pub(crate) fn only_set_request(&self) -> SetCredentialRequest {
        let requests = self.state().set_requests.clone();
        assert_eq!(requests.len(), 1, "requests: {requests:?}");
        requests.into_iter().next().expect("one request")
    }

    /// Runs the CLI against this server with the right token.
    pub(crate) async fn run(&self, args: &[&str], secrets: FakeSecrets) -> Outcome {
        let mut full = vec!["--api-url", &self.url, "--token", TOKEN];
        full.extend_from_slice(args);
        run_cli(&full, secrets).await
    }
}

/// Scripted secret input: piped text, or a terminal answering prompts in order.
#[derive(Debug)]
pub(crate) struct FakeSecrets {
    terminal: bool,
    input: Cursor<Vec<u8>>,
    answers: VecDeque<String>,
    prompts: Vec<String>,
}

impl FakeSecrets {
    /// Stdin is a pipe carrying `text`.
    pub(crate) fn piped(text: &str) -> Self {
        Self {
            terminal: false,
            input: Cursor::new(text.as_bytes().to_vec()),
            answers: VecDeque::new(),
            prompts: Vec::new(),
        }
    }

    /// Stdin is an empty pipe (`< /dev/null`, CI).
    pub(crate) fn none() -> Self {
        Self::piped("")
    }

    /// Stdin is a terminal; each prompt is answered with the next of `answers`.
    pub(crate) fn terminal(answers: &[&str]) -> Self {
        Self {
            terminal: true,
            input: Cursor::new(Vec::new()),
            answers: answers.iter().map(|a| (*a).to_owned()).collect(),
            prompts: Vec::new(),
        }
    }
}

impl SecretSource for FakeSecrets {
    fn is_terminal(&self) -> bool {
        self.terminal
    }
    fn read_line(&mut self) -> io::Result<Option<String>> {
        let mut line = String::new();
        let n = self.input.read_line(&mut line)?;
        Ok((n > 0).then_some(line))
    }
    fn read_to_end(&mut self) -> io::Result<String> {
        let mut all = String::new();
        self.input.read_to_string(&mut all)?;
        Ok(all)
    }
    fn prompt_hidden(&mut self, prompt: &str) -> io::Result<String> {
        self.prompts.push(prompt.to_owned());
        Ok(self.answers.pop_front().unwrap_or_default())
    }
}

/// What one run produced.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) code: u8,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    /// The prompts shown, in order.
    pub(crate) prompts: Vec<String>,
}

impl Outcome {
    /// Asserts the canary appears in neither stdout nor stderr.
    pub(crate) fn assert_no_canary(&self) {
        assert!(
            !self.stdout.contains(CANARY),
            "canary in stdout: {}",
            self.stdout
        );
        assert!(
            !self.stderr.contains(CANARY),
            "canary in stderr: {}",
            self.stderr
        );
    }

    /// Parses stdout as one JSON document.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).expect("stdout is one JSON document")
    }
}

/// Runs `levelrail-cli <args>` in-process.
pub(crate) async fn run_cli(args: &[&str], mut secrets: FakeSecrets) -> Outcome {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let argv = std::iter::once("levelrail-cli").chain(args.iter().copied());
    let code = {
        let mut io = Io {
            stdout: &mut stdout,
            stderr: &mut stderr,
            secrets: &mut secrets,
        };
        levelrail_cli::run(argv, &mut io).await
    };
    Outcome {
        code,
        stdout: String::from_utf8(stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
        prompts: secrets.prompts,
    }
}
