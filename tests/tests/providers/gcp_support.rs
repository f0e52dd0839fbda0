//! Shared set-up of the GCP tests: a fake, a client pointed at it with a minted token,
//! create requests, and a small validator of request bodies against the Compute v1
//! discovery document in `tests/specs`.
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use levelrail_clouds::gcp::{self, GcpEndpoints, GcpProvider};
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::registry::GrantContext;
use levelrail_clouds::{CloudProvider as _, CreateServer, Ownership, ServerInfo, ServerState};
use levelrail_sim::fakes::gcp::{FakeGcp, FakeGcpConfig, FakeGcpHandle};
use secrecy::SecretString;
use serde_json::Value;

pub(crate) use crate::hetzner_support::operator_key;

/// The zone of the tests.
pub(crate) const ZONE: &str = "us-central1-a";

/// A fake with 100 ms states; `tune` adjusts the rest.
pub(crate) async fn start_fake(tune: impl FnOnce(&mut FakeGcpConfig)) -> FakeGcpHandle {
    let mut config = FakeGcpConfig {
        state_step: Duration::from_millis(100),
        ..FakeGcpConfig::default()
    };
    tune(&mut config);
    FakeGcp::start(config).await.expect("the fake starts")
}

/// Quick retries, a 5 s timeout.
pub(crate) fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(500),
        max_retry_after: Duration::from_secs(5),
        timeout: Duration::from_secs(5),
    }
}

/// A client of `fake` with a freshly minted token.
pub(crate) fn client(fake: &FakeGcpHandle) -> GcpProvider {
    client_with(fake, &fake.mint_token())
}

/// A client of `fake` with `token`.
pub(crate) fn client_with(fake: &FakeGcpHandle, token: &str) -> GcpProvider {
    let context = GrantContext {
        project_id: Some(fake.config().project_id.clone()),
        ..GrantContext::default()
    };
    GcpProvider::new(
        GcpEndpoints {
            compute: &fake.compute_url(),
            resource_manager: &fake.resource_manager_url(),
            billing: &fake.billing_url(),
        },
        SecretString::from(token.to_owned()),
        &context,
        Arc::new(gcp::limiter()),
        fast_policy(),
        None,
    )
    .expect("the client builds")
}

/// Ownership of provision `provision` of control plane `cp-test`.
pub(crate) fn ownership(provision: &str) -> Ownership {
    Ownership {
        control_plane: "cp-test".into(),
        provision_id: provision.into(),
        node_name: format!("node-{provision}"),
    }
}

/// A create of `name` in us-central1-a as e2-small for `provision`, with one operator key.
pub(crate) fn create_request(name: &str, provision: &str) -> CreateServer {
    CreateServer {
        name: name.into(),
        region: ZONE.into(),
        size: "e2-small".into(),
        image: None,
        user_data: "#cloud-config\nruncmd: [echo hello]\n".into(),
        ssh_public_keys: vec![operator_key(1)],
        ssh_source_cidr: None,
        ownership: ownership(provision),
    }
}

/// The fake's instances collection in `ZONE`, as requests name it (for fault injection).
pub(crate) fn instances_path(fake: &FakeGcpHandle) -> String {
    format!(
        "/compute/v1/projects/{}/zones/{ZONE}/instances",
        fake.config().project_id
    )
}

/// Polls `get_server` until the instance is running.
pub(crate) async fn wait_running(client: &GcpProvider, id: &str) -> ServerInfo {
    for _ in 0..100 {
        let info = client.get_server(id).await.expect("get_server");
        if info.state == ServerState::Running {
            return info;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("instance {id} never reached running");
}

/// The Compute v1 discovery document, loaded once.
pub(crate) fn discovery() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| levelrail_sim::specs::json("gcp-compute.v1.discovery.json"))
}

/// Every way `value` breaks schema `name` of the discovery document (unknown fields, wrong
/// types, values outside an enum, int64 not sent as a decimal string, output-only fields).
pub(crate) fn schema_violations(name: &str, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(&serde_json::json!({ "$ref": name }), value, "$", &mut out);
    out
}

fn check(schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let schemas = &discovery()["schemas"];
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => &schemas[r],
        None => schema,
    };
    if schema.is_null() {
        out.push(format!("{at}: no such schema"));
        return;
    }
    let desc = schema
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schema.get("readOnly").and_then(Value::as_bool) == Some(true)
        || desc.starts_with("[Output Only]")
        || desc.starts_with("Output only.")
    {
        out.push(format!("{at}: output-only field sent"));
    }
    let ty = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object");
    match (ty, value) {
        ("object", Value::Object(m)) => {
            let props = schema.get("properties").and_then(Value::as_object);
            for (k, v) in m {
                match (
                    props.and_then(|p| p.get(k)),
                    schema.get("additionalProperties"),
                ) {
                    (Some(s), _) => check(s, v, &format!("{at}.{k}"), out),
                    (None, Some(s)) => check(s, v, &format!("{at}.{k}"), out),
                    (None, None) => out.push(format!("{at}.{k}: unknown field")),
                }
            }
        }
        ("array", Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                check(&schema["items"], v, &format!("{at}[{i}]"), out);
            }
        }
        ("string", Value::String(s)) => {
            let format = schema
                .get("format")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if matches!(format, "int64" | "uint64") && s.parse::<i128>().is_err() {
                out.push(format!("{at}: {format} must be a decimal string"));
            }
            if let Some(e) = schema.get("enum").and_then(Value::as_array)
                && !e.iter().any(|x| x == value)
            {
                out.push(format!("{at}: {s} is not one of the enum values"));
            }
        }
        ("integer", Value::Number(n)) if n.is_i64() || n.is_u64() => {}
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) | ("any", _) => {}
        (t, v) => out.push(format!("{at}: expected {t}, got {v}")),
    }
}
