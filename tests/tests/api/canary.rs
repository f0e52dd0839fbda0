//! A canary secret stored through every path never comes back out: not in any response,
//! error, CLI output, the database files, or the server's log at `trace` level.
use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::harness::{Bearer, ServerProcess, bin};
use levelrail_proto::credentials::v1 as pb;
use levelrail_proto::credentials::v1::credentials_service_client::CredentialsServiceClient;
use levelrail_sim::secrets::Canary;
use tonic::transport::Endpoint;

use crate::credentials_api::{PROVIDERS, valid_request};

fn cli(server: &ServerProcess, args: &[&str], stdin: &str) -> (bool, Vec<u8>) {
    let mut child = Command::new(bin("levelrail-cli"))
        .args(["--api-url", &server.url()])
        .args(args)
        .env("LEVELRAIL_TOKEN", server.admin_token())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("levelrail-cli starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut all = out.stdout;
    all.extend_from_slice(&out.stderr);
    (out.status.success(), all)
}

#[tokio::test]
async fn a_canary_secret_never_leaves_the_service() {
    let tmp = tempfile::tempdir().unwrap();
    let data_dir = tmp.path().join("data");
    let server = ServerProcess::start(&data_dir, "trace", &[]);
    let canary = Canary::new();
    let channel = Endpoint::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client =
        CredentialsServiceClient::with_interceptor(channel, Bearer(server.admin_token()));
    let mut seen = Vec::<u8>::new();

    // gRPC: every provider, plus failures that carry the canary.
    for provider in PROVIDERS {
        let resp = client
            .set_credential(valid_request(provider, &canary))
            .await
            .unwrap();
        seen.extend(format!("{:?}", resp.into_inner()).bytes());
        let verify = client
            .verify_credential(pb::VerifyCredentialRequest {
                provider: provider as i32,
            })
            .await;
        seen.extend(format!("{verify:?}").bytes());
    }
    let mut bad = valid_request(pb::Provider::Azure, &canary);
    if let Some(pb::set_credential_request::Credential::Azure(doc)) = bad.credential.as_mut() {
        doc.json = doc.json.replace("72f988bf", "zzzzzzzz");
    }
    let err = client.set_credential(bad).await.unwrap_err();
    seen.extend(format!("{err:?}").bytes());
    let err = client
        .set_credential(pb::SetCredentialRequest {
            provider: pb::Provider::Hetzner as i32,
            credential: Some(pb::set_credential_request::Credential::Hetzner(
                pb::ApiToken {
                    token: format!("{} \u{7}", canary.value()),
                },
            )),
        })
        .await
        .unwrap_err();
    seen.extend(format!("{err:?}").bytes());
    let list = client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap();
    seen.extend(format!("{:?}", list.into_inner()).bytes());

    // The CLI: pipe paths and output, success and failure.
    let (ok, out) = cli(
        &server,
        &[
            "nodes",
            "providers",
            "set-credential",
            "--provider",
            "hetzner",
        ],
        &format!("{}\n", canary.hetzner_token()),
    );
    assert!(ok, "{}", String::from_utf8_lossy(&out));
    seen.extend(out);
    let (ok, out) = cli(
        &server,
        &["nodes", "providers", "set-credential", "--provider", "gcp"],
        &canary.gcp_json(),
    );
    assert!(ok, "{}", String::from_utf8_lossy(&out));
    seen.extend(out);
    let (ok, out) = cli(
        &server,
        &[
            "nodes",
            "providers",
            "set-credential",
            "--provider",
            "aws",
            "--provider-token",
            "AKIAIOSFODNN7EXAMPLE",
        ],
        &format!("{}\n", canary.aws_secret()),
    );
    assert!(ok, "{}", String::from_utf8_lossy(&out));
    seen.extend(out);
    let (ok, out) = cli(
        &server,
        &[
            "nodes",
            "providers",
            "set-credential",
            "--provider",
            "digitalocean",
        ],
        &format!("{}xyz\n", canary.value()),
    );
    assert!(!ok, "a malformed token is refused");
    seen.extend(out);
    for args in [
        &["nodes", "providers", "list"][..],
        &["--json", "nodes", "providers", "list"][..],
    ] {
        let (ok, out) = cli(&server, args, "");
        assert!(ok);
        seen.extend(out);
    }

    let log_path = server.log_path.clone();
    server.stop().unwrap();
    canary.assert_absent("RPC responses, errors and CLI output", &seen);
    let log = std::fs::read(&log_path).unwrap();
    assert!(
        log.len() > 1000 && String::from_utf8_lossy(&log).contains("TRACE"),
        "trace logging was on"
    );
    canary.assert_absent("the server log at trace level", &log);
    for entry in std::fs::read_dir(&data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            canary.assert_absent(&format!("data file {}", path.display()), &bytes);
        }
    }
}
