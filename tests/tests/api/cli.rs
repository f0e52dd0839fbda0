//! `levelrail-cli nodes providers …` against a real control plane: pipe and prompt paths,
//! JSON output, removal.
use std::io::Write as _;
use std::process::{Command, Stdio};

use crate::harness::{TestApp, bin};
use levelrail_sim::secrets::Canary;

pub(crate) struct Run {
    pub(crate) ok: bool,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

fn run(app: &TestApp, args: &[&str], stdin: &str) -> Run {
    run_as(app, &app.token, args, stdin)
}

/// `levelrail-cli` against `app` with the API token `token`, fed `stdin`.
pub(crate) fn run_as(app: &TestApp, token: &str, args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(bin("levelrail-cli"))
        .args(["--api-url", &app.url()])
        .args(args)
        .env("LEVELRAIL_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test]
async fn the_cli_stores_lists_and_removes_every_provider_through_a_pipe() {
    let tmp = tempfile::tempdir().unwrap();
    let app = std::sync::Arc::new(TestApp::spawn(tmp.path()).await);
    let canary = Canary::new();
    let inputs = [
        ("hetzner", format!("{}\n", canary.hetzner_token())),
        ("digitalocean", format!("{}\n", canary.digitalocean_token())),
        (
            "aws",
            format!("AKIAIOSFODNN7EXAMPLE\n{}\n", canary.aws_secret()),
        ),
        ("azure", canary.azure_json()),
        ("gcp", canary.gcp_json()),
    ];
    for (provider, stdin) in inputs {
        let a = app.clone();
        let r = blocking(move || {
            run(
                &a,
                &[
                    "nodes",
                    "providers",
                    "set-credential",
                    "--provider",
                    provider,
                ],
                &stdin,
            )
        })
        .await;
        assert!(r.ok, "{provider}: {}", r.stderr);
        assert_eq!(
            r.stdout.trim(),
            format!("provider \"{provider}\" credential stored")
        );
        canary.assert_absent("cli output", format!("{}{}", r.stdout, r.stderr).as_bytes());
    }
    let a = app.clone();
    let r = blocking(move || run(&a, &["--json", "nodes", "providers", "list"], "")).await;
    assert!(r.ok, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json output");
    let providers = v["providers"].as_array().expect("providers array");
    assert_eq!(providers.len(), 5);
    assert!(providers.iter().all(|p| p["connected"] == true), "{v}");
    canary.assert_absent("cli json", r.stdout.as_bytes());

    let a = app.clone();
    let r = blocking(move || {
        run(
            &a,
            &["nodes", "providers", "remove", "--provider", "azure"],
            "",
        )
    })
    .await;
    assert!(r.ok, "{}", r.stderr);
    let a = app.clone();
    let r = blocking(move || run(&a, &["nodes", "providers", "list"], "")).await;
    let azure_line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("azure"))
        .expect("azure row");
    assert!(azure_line.contains("not connected"), "{azure_line}");
    match std::sync::Arc::try_unwrap(app) {
        Ok(app) => app.stop().await,
        Err(_) => panic!("app still shared"),
    }
}

#[tokio::test]
async fn the_cli_prompts_without_echo_when_stdin_is_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let app = TestApp::spawn(tmp.path()).await;
    let canary = Canary::new();
    let cmd = format!(
        "{} --api-url {} nodes providers set-credential --provider hetzner",
        bin("levelrail-cli").display(),
        app.url()
    );
    let token = app.token.clone();
    let secret = canary.hetzner_token();
    // `script` gives the CLI a pseudo-terminal, so it takes the no-echo prompt path.
    let out = blocking(move || {
        let mut child = Command::new("script")
            .args(["-q", "-e", "-c", &cmd, "/dev/null"])
            .env("LEVELRAIL_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script(1) from util-linux");
        std::thread::sleep(std::time::Duration::from_millis(700));
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{secret}\r").as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    })
    .await;
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{screen}");
    assert!(screen.contains("Provider token:"), "prompt shown: {screen}");
    assert!(screen.contains("credential stored"), "{screen}");
    canary.assert_absent("terminal (no echo)", screen.as_bytes());
    let list = app.credentials.list_providers().await.unwrap();
    assert!(list[0].stored.is_some());
    app.stop().await;
}

#[tokio::test]
async fn a_token_on_the_command_line_works_but_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let app = std::sync::Arc::new(TestApp::spawn(tmp.path()).await);
    let canary = Canary::new();
    let token = canary.hetzner_token();
    let a = app.clone();
    let r = blocking(move || {
        run(
            &a,
            &[
                "nodes",
                "providers",
                "set-credential",
                "--provider",
                "hetzner",
                "--provider-token",
                &token,
            ],
            "",
        )
    })
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stderr.contains("shell history"), "{}", r.stderr);
    canary.assert_absent("cli output", format!("{}{}", r.stdout, r.stderr).as_bytes());
}
