//! Malformed Azure and GCP JSON documents for the table in `malformed_tests`: broken and
//! non-object JSON, deep nesting, oversize values, duplicate and unknown keys, bad ids.
use serde_json::json;

use crate::validate::fixtures::*;

pub(super) fn azure_cases() -> Vec<Case> {
    let v = azure_value;
    let secret = format!(r#""client_secret":"{CANARY}""#);
    vec![
        case(
            "azure broken JSON",
            "azure.json",
            azure(format!("{{{secret},\"tenant_id\":")),
        ),
        case(
            "azure bare word",
            "azure.json",
            azure(format!(r#"{{"client_secret":{CANARY}}}"#)),
        ),
        case(
            "azure trailing garbage",
            "azure.json",
            azure(format!("{} {CANARY}", v())),
        ),
        case(
            "azure array",
            "azure.json",
            azure(format!("[{{{secret}}}]")),
        ),
        case("azure empty", "azure.json", azure("  \n")),
        case(
            "azure 10k-deep array",
            "azure.json",
            azure(format!("{{{secret},\"x\":{}", "[".repeat(10_000))),
        ),
        case(
            "azure 10k-deep object",
            "azure.json",
            azure(format!("{{{secret},{}", "\"a\":{".repeat(10_000))),
        ),
        case(
            "azure 1 MiB value",
            "azure.json",
            azure(with(v(), "client_secret", json!(CANARY.repeat(MIB / 22)))),
        ),
        case(
            "azure non-GUID tenant",
            "azure.json.tenant_id",
            azure(with(
                v(),
                "tenant_id",
                json!("72f988bf86f141af91ab2d7cd011db47"),
            )),
        ),
        case(
            "azure NUL in tenant",
            "azure.json.tenant_id",
            azure(with(v(), "tenant_id", json!(format!("{TENANT}\u{0}")))),
        ),
        case(
            "azure bidi in client",
            "azure.json.client_id",
            azure(with(v(), "client_id", json!(format!("\u{202e}{CLIENT}")))),
        ),
        case(
            "azure null tenant",
            "azure.json.tenant_id",
            azure(with(v(), "tenant_id", json!(null))),
        ),
        case(
            "azure number client",
            "azure.json.client_id",
            azure(with(v(), "client_id", json!(42))),
        ),
        case(
            "azure missing subscription",
            "azure.json.subscription_id",
            azure(without(v(), "subscription_id")),
        ),
        case(
            "azure trailing-dot group",
            "azure.json.resource_group",
            azure(with(v(), "resource_group", json!("rg."))),
        ),
        case(
            "azure group 91 chars",
            "azure.json.resource_group",
            azure(with(v(), "resource_group", json!("g".repeat(91)))),
        ),
        case(
            "azure empty group",
            "azure.json.resource_group",
            azure(with(v(), "resource_group", json!(""))),
        ),
        case(
            "azure empty secret",
            "azure.json.client_secret",
            azure(with(v(), "client_secret", json!(""))),
        ),
        case(
            "azure secret with tab",
            "azure.json.client_secret",
            azure(with(v(), "client_secret", json!(format!("{CANARY}\t")))),
        ),
        case(
            "azure no secret or file",
            "azure.json.client_secret",
            azure(without(v(), "client_secret")),
        ),
        case(
            "azure duplicate key",
            "azure.json.client_secret",
            azure(format!(
                r#"{{"client_secret":"{CANARY}",{}"#,
                &v().to_string()[1..]
            )),
        ),
        case(
            "azure unknown key",
            "azure.json.extra",
            azure(with(v(), "extra", json!(CANARY))),
        ),
        case(
            "azure long unknown key with controls",
            "azure.json",
            azure(with(
                v(),
                &format!("\u{1}\u{202e}{}", "k".repeat(200)),
                json!(CANARY),
            )),
        ),
        case(
            "azure relative token file",
            "azure.json.federated_token_file",
            azure(with(v(), "federated_token_file", json!("var/run/token"))),
        ),
        case(
            "azure dotdot token file",
            "azure.json.federated_token_file",
            azure(with(
                v(),
                "federated_token_file",
                json!("/var/run/../../etc/shadow"),
            )),
        ),
        case(
            "azure NUL token file",
            "azure.json.federated_token_file",
            azure(with(
                v(),
                "federated_token_file",
                json!("/var/run/tok\u{0}en"),
            )),
        ),
    ]
}

pub(super) fn gcp_cases() -> Vec<Case> {
    let v = gcp_value;
    let pem = fake_pem();
    vec![
        // A key relabelled external_account is read as a federation file: its key fields
        // are unknown there (the first in document order is named).
        case(
            "gcp key relabelled external_account",
            "gcp.json.auth_provider_x509_cert_url",
            gcp(with(v(), "type", json!("external_account"))),
        ),
        case(
            "gcp authorized_user",
            "gcp.json.type",
            gcp(with(v(), "type", json!("authorized_user"))),
        ),
        case(
            "gcp missing type",
            "gcp.json.type",
            gcp(without(v(), "type")),
        ),
        case(
            "gcp attacker token_uri",
            "gcp.json.token_uri",
            gcp(with(
                v(),
                "token_uri",
                json!("https://attacker.example/token"),
            )),
        ),
        case(
            "gcp look-alike token_uri",
            "gcp.json.token_uri",
            gcp(with(
                v(),
                "token_uri",
                json!("https://oauth2.googleapis.com/token.evil"),
            )),
        ),
        case(
            "gcp truncated PEM",
            "gcp.json.private_key",
            gcp(with(v(), "private_key", json!(&pem[..700]))),
        ),
        case(
            "gcp PEM body not base64",
            "gcp.json.private_key",
            gcp(with(
                v(),
                "private_key",
                json!(pem.replacen("MIIEvQ", "MI*EvQ", 1)),
            )),
        ),
        case(
            "gcp RSA PEM header",
            "gcp.json.private_key",
            gcp(with(
                v(),
                "private_key",
                json!(pem.replace("PRIVATE KEY", "RSA PRIVATE KEY")),
            )),
        ),
        case(
            "gcp missing private key",
            "gcp.json.private_key",
            gcp(without(v(), "private_key")),
        ),
        case(
            "gcp uppercase project",
            "gcp.json.project_id",
            gcp(with(v(), "project_id", json!("Levelrail-prod"))),
        ),
        case(
            "gcp emoji project",
            "gcp.json.project_id",
            gcp(with(v(), "project_id", json!("levelrail-\u{1F600}"))),
        ),
        case(
            "gcp empty project",
            "gcp.json.project_id",
            gcp(with(v(), "project_id", json!(""))),
        ),
        case(
            "gcp non-hex key id",
            "gcp.json.private_key_id",
            gcp(with(v(), "private_key_id", json!("z".repeat(40)))),
        ),
        case(
            "gcp personal email",
            "gcp.json.client_email",
            gcp(with(v(), "client_email", json!("me@gmail.com"))),
        ),
        case(
            "gcp email suffix trick",
            "gcp.json.client_email",
            gcp(with(
                v(),
                "client_email",
                json!("sa@evil.com.gserviceaccount.com.evil"),
            )),
        ),
        case(
            "gcp unknown key",
            "gcp.json.audience",
            gcp(with(v(), "audience", json!(CANARY))),
        ),
        case(
            "gcp other universe",
            "gcp.json.universe_domain",
            gcp(with(v(), "universe_domain", json!("example.com"))),
        ),
        case(
            "gcp number client_id",
            "gcp.json.client_id",
            gcp(with(v(), "client_id", json!(109876543210u64))),
        ),
        case(
            "gcp duplicate private_key",
            "gcp.json.private_key",
            gcp(format!(
                r#"{{"private_key":"{CANARY}",{}"#,
                &v().to_string()[1..]
            )),
        ),
        case(
            "gcp string not object",
            "gcp.json",
            gcp(json!(pem).to_string()),
        ),
        case("gcp number not object", "gcp.json", gcp("42")),
        case(
            "gcp truncated JSON",
            "gcp.json",
            gcp(v().to_string()[..900].to_owned()),
        ),
    ]
}
