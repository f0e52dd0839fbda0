//! Operator API tokens through the real listener and `levelrail-cli tokens`: a token's scope
//! decides what it may call, an expiry and a revocation end it, the last admin token cannot
//! be revoked, and the bootstrap admin token is saved to a file only when asked.
use levelrail_proto::credentials::v1 as cpb;
use levelrail_proto::provisioner::v1 as ppb;
use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;

use std::sync::Arc;

use crate::cli::{Run, run_as};
use crate::harness::{Bearer, TestApp, test_config};

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

/// `levelrail-cli <args>` against `app` with `token` (`None`: the admin's), off the
/// runtime's threads.
async fn cli(app: &Arc<TestApp>, token: Option<&str>, args: &[&str]) -> Run {
    let app = Arc::clone(app);
    let token = token.map_or_else(|| app.token.clone(), str::to_owned);
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_as(&app, &token, &args, "")
    })
    .await
}

/// `levelrail-cli tokens create` as the admin: the token printed alone on stdout.
fn create(app: &TestApp, name: &str, scope: &str, expires: &str) -> String {
    let r = run_as(
        app,
        &app.token,
        &[
            "tokens",
            "create",
            "--name",
            name,
            "--scope",
            scope,
            "--expires",
            expires,
        ],
        "",
    );
    assert!(r.ok, "tokens create failed: {}", r.stderr);
    assert!(
        r.stderr.contains(&format!("scope {scope}")),
        "stderr does not say the scope: {}",
        r.stderr
    );
    let token = r.stdout.trim().to_owned();
    assert!(
        token.starts_with("lrt_") && !token.contains('\n'),
        "{token}"
    );
    token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_scope_decides_what_it_may_call_and_the_cli_manages_tokens() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let app = Arc::new(TestApp::spawn(tmp.path()).await);

    let a = app.clone();
    let (read, provision) = blocking(move || {
        (
            create(&a, "dashboard", "read", "30d"),
            create(&a, "ci", "provision", "12h"),
        )
    })
    .await;

    // A read token reads, and is refused everything else, naming the scope needed.
    let mut as_read = app.credentials_client_with(&read).await;
    as_read
        .list_providers(cpb::ListProvidersRequest {})
        .await
        .expect("a read token lists the providers");
    let refused = as_read
        .delete_credential(cpb::DeleteCredentialRequest {
            provider: cpb::Provider::Hetzner as i32,
        })
        .await
        .expect_err("a read token deleted a credential");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert!(
        refused.message().contains("`credentials-admin`"),
        "{}",
        refused.message()
    );
    let mut provisions_as_read =
        ProvisionerServiceClient::with_interceptor(app.channel().await, Bearer(read.clone()));
    provisions_as_read
        .list_provisions(ppb::ListProvisionsRequest::default())
        .await
        .expect("a read token lists provisions");
    let refused = provisions_as_read
        .provision(ppb::ProvisionRequest {
            provider: cpb::Provider::Hetzner as i32,
            region: "fsn1".into(),
            size: "cx22".into(),
            name: "not-allowed".into(),
            ..Default::default()
        })
        .await
        .expect_err("a read token provisioned");
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert!(
        refused.message().contains("`provision`"),
        "{}",
        refused.message()
    );

    // A provision token gets past the scope check (this app has no Hetzner credential, so
    // the call fails for that, not for its scope), but may not manage tokens.
    let mut provisions =
        ProvisionerServiceClient::with_interceptor(app.channel().await, Bearer(provision.clone()));
    let answer = provisions
        .provision(ppb::ProvisionRequest {
            provider: cpb::Provider::Hetzner as i32,
            region: "fsn1".into(),
            size: "cx22".into(),
            name: "scoped-1".into(),
            ..Default::default()
        })
        .await;
    assert!(
        !matches!(&answer, Err(e) if e.code() == tonic::Code::PermissionDenied),
        "a provision token was refused a provision: {answer:?}"
    );
    let r = cli(&app, Some(&provision), &["tokens", "list"]).await;
    assert!(!r.ok, "a provision token listed the API tokens");
    assert!(r.stderr.contains("`admin`"), "{}", r.stderr);

    // The admin lists every token with its scope, state and expiry, and never a secret.
    let r = cli(&app, None, &["tokens", "list", "--json"]).await;
    assert!(r.ok, "{}", r.stderr);
    let listed: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let tokens = listed["tokens"].as_array().expect("tokens");
    assert_eq!(tokens.len(), 3, "{listed}");
    let dashboard = tokens
        .iter()
        .find(|t| t["name"] == "dashboard")
        .expect("the read token is listed");
    assert_eq!(dashboard["scope"], "read");
    assert!(dashboard["expires_at"].is_string(), "{dashboard}");
    let admin = tokens.iter().find(|t| t["name"] == "admin").expect("admin");
    assert_eq!(admin["scope"], "admin");
    assert!(admin["expires_at"].is_null(), "{admin}");
    for secret in [&read, &provision, &app.token] {
        let secret_part = secret.split_once('.').expect("token").1;
        assert!(!r.stdout.contains(secret_part), "a secret was listed");
    }

    // The last admin token cannot be revoked; a revoked token is refused at once.
    let admin_id = admin["id"].as_str().expect("id").to_owned();
    let r = cli(&app, None, &["tokens", "revoke", &admin_id]).await;
    assert!(!r.ok, "the last admin token was revoked");
    assert!(r.stderr.contains("last live admin token"), "{}", r.stderr);
    let read_id = dashboard["id"].as_str().expect("id").to_owned();
    let r = cli(&app, None, &["tokens", "revoke", &read_id]).await;
    assert!(r.ok, "{}", r.stderr);
    let refused = as_read
        .list_providers(cpb::ListProvidersRequest {})
        .await
        .expect_err("a revoked token still reads");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    // Bad input is refused before anything is made, naming the flag.
    for (scope, expires, flag) in [("root", "1d", "--scope"), ("read", "10s", "--expires")] {
        let args = [
            "tokens",
            "create",
            "--name",
            "x",
            "--scope",
            scope,
            "--expires",
            expires,
        ];
        let r = cli(&app, None, &args).await;
        assert!(!r.ok && r.stderr.contains(flag), "{}", r.stderr);
    }

    // Every state-changing call is in the audit log with its token, target and outcome,
    // and so is the call refused for its scope (written a moment after the answer).
    let provision_id = provision.split_once('.').expect("token").0.to_owned();
    let mut seen = serde_json::Value::Null;
    for _ in 0..50 {
        let r = cli(&app, None, &["audit", "list", "--json"]).await;
        assert!(r.ok, "{}", r.stderr);
        seen = serde_json::from_str(&r.stdout).expect("JSON");
        let has = |action: &str, token: &str, target: &str, outcome: &str| {
            seen["events"].as_array().is_some_and(|events| {
                events.iter().any(|e| {
                    e["action"] == action
                        && e["token_id"] == token
                        && e["target"] == target
                        && (outcome.is_empty() || e["outcome"] == outcome)
                })
            })
        };
        // The provision's own outcome depends on this app's (missing) Hetzner credential.
        if has(
            "ProvisionerService/Provision",
            &provision_id,
            "scoped-1",
            "",
        ) && has(
            "CredentialsService/DeleteCredential",
            &read_id,
            "",
            "PERMISSION_DENIED",
        ) && has("ApiTokensService/RevokeApiToken", &admin_id, &read_id, "OK")
            && has("ApiTokensService/CreateApiToken", &admin_id, "ci", "OK")
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let events = seen["events"].as_array().expect("events");
    assert!(
        events
            .iter()
            .any(|e| e["action"] == "ProvisionerService/Provision" && e["target"] == "scoped-1"),
        "the provision is not in the audit log: {seen:#}"
    );
    assert!(
        events.iter().any(|e| e["outcome"] == "PERMISSION_DENIED"),
        "the refused call is not in the audit log: {seen:#}"
    );
    assert!(
        !events
            .iter()
            .any(|e| e["action"] == "CredentialsService/ListProviders"),
        "a read was recorded: {seen:#}"
    );
    assert!(
        events
            .windows(2)
            .all(|w| w[0]["id"].as_str() > w[1]["id"].as_str()),
        "the log is not newest first"
    );
    // A page of one, then the rest.
    let r = cli(&app, None, &["audit", "list", "--limit", "1", "--json"]).await;
    let one: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(one["events"].as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one["events"][0]["id"], events[0]["id"]);
    // Only an admin reads it.
    let r = cli(&app, Some(&provision), &["audit", "list"]).await;
    assert!(
        !r.ok && r.stderr.contains("PERMISSION_DENIED"),
        "{}",
        r.stderr
    );

    if let Ok(app) = Arc::try_unwrap(app) {
        app.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_token_is_saved_to_a_file_only_with_write_admin_token() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = test_config(tmp.path());
    cfg.write_admin_token = false;
    let app = TestApp::start(cfg).await.expect("starts");
    assert!(
        !tmp.path().join("admin.token").exists(),
        "the admin token was saved without --write-admin-token"
    );
    // It was made (and printed): it works.
    app.credentials_client()
        .await
        .list_providers(cpb::ListProvidersRequest {})
        .await
        .expect("the bootstrap token works");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_past_its_request_budget_is_told_to_retry_and_others_are_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cfg = test_config(tmp.path());
    // One call a second after a burst of ten.
    cfg.front.public.token_rate_limit = 1;
    let app = Arc::new(TestApp::start(cfg).await.expect("starts"));
    let a = app.clone();
    let other = blocking(move || create(&a, "other", "read", "1h")).await;
    let mut admin = app.credentials_client().await;
    let mut refused = None;
    for _ in 0..20 {
        if let Err(e) = admin.list_providers(cpb::ListProvidersRequest {}).await {
            refused = Some(e);
            break;
        }
    }
    let refused = refused.expect("twenty calls at once were all let through");
    assert_eq!(
        refused.code(),
        tonic::Code::ResourceExhausted,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("API token"),
        "{}",
        refused.message()
    );
    // Another token has its own budget.
    app.credentials_client_with(&other)
        .await
        .list_providers(cpb::ListProvidersRequest {})
        .await
        .expect("another token is not held back");
    if let Ok(app) = Arc::try_unwrap(app) {
        app.stop().await;
    }
}

/// An event still waiting for the audit writer's window when the server stops is written
/// before it exits, not dropped with the writer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_is_flushed_when_the_server_stops() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let app = Arc::new(
        TestApp::start(test_config(tmp.path()))
            .await
            .expect("starts"),
    );
    let token = create(&app, "flushed", "read", "never");
    assert!(!token.is_empty());
    // At once: most often inside the writer's 10 ms window (the flush alone, with the window
    // out of reach, is tested in the audit log's unit tests).
    let Ok(app) = Arc::try_unwrap(app) else {
        panic!("one owner")
    };
    app.stop().await;

    let app = Arc::new(
        TestApp::start(test_config(tmp.path()))
            .await
            .expect("restarts"),
    );
    let r = cli(&app, None, &["audit", "list", "--json"]).await;
    assert!(r.ok, "{}", r.stderr);
    let seen: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert!(
        seen["events"].as_array().is_some_and(|events| events
            .iter()
            .any(|e| e["action"] == "ApiTokensService/CreateApiToken" && e["target"] == "flushed")),
        "the last call before the stop is missing: {seen:#}"
    );
    let Ok(app) = Arc::try_unwrap(app) else {
        panic!("one owner")
    };
    app.stop().await;
}
