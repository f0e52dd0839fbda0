//! Shared set-up of the AWS tests: the fake EC2 + STS, a provider client signing with the
//! fake's key, create requests, and moto (`moto_server` on a free loopback port with its
//! validation flags on) for the same tests against an independent EC2 implementation.
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use levelrail_clouds::aws::{AwsProvider, AwsSettings};
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::ratelimit::RateLimiter;
use levelrail_clouds::registry::AwsKeys;
use levelrail_clouds::{CloudProvider as _, CreateServer, Ownership};
use levelrail_credentials::broker::GrantIssuer as _;
use levelrail_credentials::broker::aws::AwsGrantIssuer;
use levelrail_credentials::model::CredentialSecret;
use levelrail_sim::fakes::aws::{
    ACCESS_KEY_ID, FakeAws, FakeAwsConfig, FakeAwsHandle, SECRET_ACCESS_KEY,
};
use secrecy::SecretString;

pub(crate) use crate::hetzner_support::operator_key;

/// The region the tests work in.
pub(crate) const REGION: &str = "eu-west-1";
/// An Ubuntu image moto registers (moto has no 24.04 image).
pub(crate) const MOTO_IMAGE: &str = "ami-785db401";

/// A fake with 200 ms states; `tune` adjusts the rest.
pub(crate) async fn start_fake(tune: impl FnOnce(&mut FakeAwsConfig)) -> FakeAwsHandle {
    let mut config = FakeAwsConfig {
        state_step: Duration::from_millis(200),
        ..FakeAwsConfig::default()
    };
    tune(&mut config);
    FakeAws::start(config).await.expect("the fake starts")
}

/// Quick retries, a 5 s timeout.
pub(crate) fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        max_retry_after: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    }
}

/// Settings pointing EC2, STS and the Price List at `endpoint`, with quick polling.
pub(crate) fn settings(endpoint: &str) -> AwsSettings {
    AwsSettings {
        ec2_endpoint: Some(endpoint.to_owned()),
        sts_endpoint: Some(endpoint.to_owned()),
        pricing_endpoint: Some(endpoint.to_owned()),
        release_timeout: Duration::from_secs(10),
        poll_interval: Duration::from_millis(100),
        ..AwsSettings::default()
    }
}

/// Keys of a long-term identity.
pub(crate) fn keys(id: &str, secret: &str) -> AwsKeys {
    AwsKeys {
        access_key_id: id.into(),
        secret_access_key: SecretString::from(secret.to_owned()),
        session_token: None,
    }
}

/// A client of `fake` with its default key.
pub(crate) fn client(fake: &FakeAwsHandle) -> AwsProvider {
    client_with(settings(&fake.endpoint()), fast_policy())
}

/// A client with the fake's default key, `settings` and `policy`.
pub(crate) fn client_with(settings: AwsSettings, policy: RetryPolicy) -> AwsProvider {
    AwsProvider::new(
        &keys(ACCESS_KEY_ID, SECRET_ACCESS_KEY),
        Some(REGION),
        settings,
        Arc::new(RateLimiter::unlimited()),
        policy,
    )
    .expect("the client builds")
}

/// Ownership of provision `provision` of control plane `cp`.
pub(crate) fn ownership(cp: &str, provision: &str) -> Ownership {
    Ownership {
        control_plane: cp.into(),
        provision_id: provision.into(),
        node_name: format!("node-{provision}"),
    }
}

/// A t3.micro in the test region for `provision`, with one operator key.
pub(crate) fn create_request(cp: &str, name: &str, provision: &str) -> CreateServer {
    CreateServer {
        name: name.into(),
        region: REGION.into(),
        size: "t3.micro".into(),
        image: None,
        user_data: "#cloud-config\nruncmd: [echo hello]\n".into(),
        ssh_public_keys: vec![operator_key(1)],
        ssh_source_cidr: None,
        ownership: ownership(cp, provision),
    }
}

/// A `moto_server` child process, killed when dropped.
#[derive(Debug)]
pub(crate) struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// Starts moto with validation on, or `None` (with a note) when `moto_server` is not
    /// installed; with `LEVELRAIL_REQUIRE_MOTO=1` a missing moto fails the test instead.
    pub(crate) fn start() -> Option<Moto> {
        let required = std::env::var_os("LEVELRAIL_REQUIRE_MOTO").is_some_and(|v| v == "1");
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let spawned = Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env("MOTO_ENABLE_AMI_VALIDATION", "true")
            .env("MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION", "true")
            .env("MOTO_ENABLE_KEYPAIR_VALIDATION", "true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(c) => c,
            Err(e) if !required => {
                println!(
                    "SKIPPED: moto_server is not installed ({e}); `pip install 'moto[server,ec2]'` runs these tests"
                );
                return None;
            }
            Err(e) => panic!("LEVELRAIL_REQUIRE_MOTO=1 but moto_server cannot start: {e}"),
        };
        let mut moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = moto.child.try_wait() {
                panic!("moto_server exited early: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "moto_server did not listen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        moto.port = port;
        Some(moto)
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A client of moto (any key is accepted there).
    pub(crate) fn client(&self) -> AwsProvider {
        AwsProvider::new(
            &keys(
                "AKIAMOTOTESTKEY00001",
                "motoSecretAccessKey000000000000000000000",
            ),
            Some(REGION),
            settings(&self.endpoint()),
            Arc::new(RateLimiter::unlimited()),
            fast_policy(),
        )
        .expect("the client builds")
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn aws_secret(role_arn: &str) -> CredentialSecret {
    CredentialSecret::Aws {
        access_key_id: ACCESS_KEY_ID.into(),
        secret_access_key: Some(SecretString::from(SECRET_ACCESS_KEY)),
        session_token: None,
        region: REGION.into(),
        role_arn: role_arn.into(),
        ambient: false,
    }
}

/// Runs every path of the STS exchange and of the client against `fake`: sessions, a
/// role, catalog, probe, creates (shared group, SSH opt-in, reuse with a revoke), get,
/// list and a delete with cleanup.
pub(crate) async fn exercise_everything(fake: &FakeAwsHandle) {
    // The exchange: a session for the key, and a role session.
    let issuer = AwsGrantIssuer::new(Some(fake.endpoint()));
    issuer
        .issue("cred_iam", &aws_secret(""))
        .await
        .expect("GetSessionToken");
    issuer
        .issue(
            "cred_iam",
            &aws_secret("arn:aws:iam::123456789012:role/levelrail"),
        )
        .await
        .expect("AssumeRole");
    // Every client path: catalog, probe, create (shared group, reuse with revoke, SSH
    // opt-in), get, list, delete with cleanup.
    let aws = client(fake);
    aws.list_regions().await.expect("regions");
    aws.list_sizes(REGION).await.expect("sizes");
    aws.probe().await.expect("probe");
    let plain = create_request("cp-iam", "iam-1", "npv_iam1");
    let a = aws.create_server(&plain).await.expect("create");
    fake.add_ingress(&fake.groups()[0].id, 22, "0.0.0.0/0");
    let mut ssh = create_request("cp-iam", "iam-2", "npv_iam2");
    ssh.ssh_source_cidr = Some("198.51.100.0/24".into());
    let b = aws.create_server(&ssh).await.expect("create with SSH");
    let mut reuse = create_request("cp-iam", "iam-3", "npv_iam3");
    reuse.ssh_public_keys.clear();
    aws.create_server(&reuse)
        .await
        .expect("create reusing the shared group");
    aws.get_server(&a.id).await.expect("get");
    aws.list_servers("cp-iam").await.expect("list");
    aws.delete_provision_resources(Some(&b.id), &ssh.ownership)
        .await
        .expect("delete");
}
