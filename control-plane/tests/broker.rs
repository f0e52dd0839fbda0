//! The credentials service's broker listener, in process: the provisioner's certificate
//! gets grants and the change stream, with refusals as typed reasons; any other client
//! certificate from the same internal CA is refused with PERMISSION_DENIED, and a client
//! without one never completes the handshake.
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use levelrail::config::{CloudArgs, CloudEndpoints, PublicArgs, StorageArgs};
use levelrail::credentials_server::{CredentialsServeConfig, CredentialsServer};
use levelrail::pki::{self, InternalTlsArgs};
use levelrail_clouds::ProviderId;
use levelrail_clouds::registry::{AccessBroker, BrokerError};
use levelrail_proto::credentials::internal::v1 as bpb;
use levelrail_proto::credentials::internal::v1::credential_broker_client::CredentialBrokerClient;
use levelrail_provisioner::enroll::ControlPlaneCa;
use levelrail_provisioner::grpc::{BrokerTls, GrpcBroker};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

struct Running {
    broker: SocketAddr,
    pki: pki::PkiFiles,
    dir: tempfile::TempDir,
    stop: tokio::sync::watch::Sender<bool>,
}

async fn start() -> Running {
    levelrail::tls::install_crypto_provider();
    let dir = tempfile::tempdir().expect("dir");
    let files = pki::init(&dir.path().join("pki"), &[], &[]).expect("pki init");
    let cfg = CredentialsServeConfig {
        storage: StorageArgs {
            data_dir: dir.path().join("data"),
            database_url: None,
            database_url_file: None,
        },
        listen: "127.0.0.1:0".parse().expect("address"),
        public: PublicArgs {
            tls_cert: None,
            tls_key: None,
            tls: false,
            allowed_origins: vec![],
            max_concurrent_requests: 64,
            token_rate_limit: 100,
        },
        write_admin_token: true,
        broker_listen: "127.0.0.1:0".parse().expect("address"),
        internal: InternalTlsArgs {
            internal_ca: files.ca.clone(),
            internal_cert: files.credentials.0.clone(),
            internal_key: files.credentials.1.clone(),
        },
        clouds: CloudArgs {
            aws_subnets: vec![],
            cloud_endpoints: CloudEndpoints::default(),
            cloud_ca_file: None,
            allow_ambient_aws: false,
            token_file_dir: None,
        },
        master_key: None,
        master_key_file: None,
        previous_master_key_file: None,
        health_listen: None,
    };
    let server = CredentialsServer::build(cfg)
        .await
        .expect("credentials service");
    let broker = server
        .bound
        .iter()
        .find(|b| b.name == "broker")
        .expect("broker listener")
        .addr;
    let stop = server.shutdown.clone();
    tokio::spawn(server.run_until_stopped());
    Running {
        broker,
        pki: files,
        dir,
        stop,
    }
}

fn read(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).expect("readable")
}

#[tokio::test]
async fn the_provisioner_gets_typed_refusals_and_the_token_digests() {
    let r = start().await;
    let broker = GrpcBroker::connect(
        &format!("https://{}", r.broker),
        Some(BrokerTls {
            ca_pem: read(&r.pki.ca),
            cert_pem: read(&r.pki.provisioner.0),
            key_pem: read(&r.pki.provisioner.1),
            server_name: Some(pki::CREDENTIALS_HOST.into()),
        }),
    )
    .expect("broker");
    let err = broker
        .issue(ProviderId::Hetzner, "test")
        .await
        .expect_err("no credential is stored");
    assert!(
        matches!(err, BrokerError::NotConnected(ProviderId::Hetzner)),
        "{err:?}"
    );

    let tokens = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&tokens);
    let watch = broker.spawn_watch(move |digests| *sink.lock().unwrap() = digests);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokens.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no token digests arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let admin = std::fs::read_to_string(r.dir.path().join("data/admin.token")).expect("token");
    let id = admin
        .trim()
        .split_once('.')
        .expect("id.secret")
        .0
        .to_owned();
    let digest = tokens.lock().unwrap()[0].clone();
    assert_eq!(digest.id, id);
    assert_eq!(
        digest.scope,
        levelrail_proto::auth::v1::ApiTokenScope::Admin as i32,
        "the replica is not told the token's scope"
    );
    assert_eq!(digest.expires_at, None, "the bootstrap token expires");
    watch.abort();
    r.stop.send_replace(true);
}

#[tokio::test]
async fn another_certificate_of_the_internal_ca_is_refused() {
    let r = start().await;
    let (ca, _) = ControlPlaneCa::load_or_create_named(
        r.pki.ca.parent().expect("pki dir"),
        "internal-ca",
        "unused",
    )
    .expect("the internal CA");
    let intruder = ca
        .issue_client_cert("intruder", "urn:levelrail:service:intruder")
        .expect("a client certificate");
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(&r.pki.ca)))
        .identity(Identity::from_pem(intruder.chain_pem, intruder.key_pem))
        .domain_name(pki::CREDENTIALS_HOST);
    let channel = Endpoint::from_shared(format!("https://{}", r.broker))
        .expect("url")
        .tls_config(tls)
        .expect("tls")
        .connect()
        .await
        .expect("the handshake completes: the chain is valid");
    let status = CredentialBrokerClient::new(channel)
        .issue_access(bpb::IssueAccessRequest {
            provider: levelrail_proto::credentials::v1::Provider::Hetzner as i32,
            purpose: "intrude".into(),
            fresh: false,
        })
        .await
        .expect_err("refused");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");

    let anonymous = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(&r.pki.ca)))
        .domain_name(pki::CREDENTIALS_HOST);
    let refused = async {
        let channel = Endpoint::from_shared(format!("https://{}", r.broker))
            .expect("url")
            .tls_config(anonymous)
            .expect("tls")
            .connect()
            .await?;
        CredentialBrokerClient::new(channel)
            .issue_access(bpb::IssueAccessRequest::default())
            .await
            .map_err(|s| anyhow::anyhow!("{s}"))?;
        anyhow::Ok(())
    };
    assert!(
        refused.await.is_err(),
        "a client without a certificate was served"
    );
    r.stop.send_replace(true);
}
