//! The fake GCP project's inventory: instances, firewalls, operations (with the request ids
//! that deduplicate retried calls), the default network, and the access tokens issued by
//! the fake OAuth, STS and IAM Credentials endpoints.
use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

use serde_json::{Value, json};

/// Where a token came from (Compute accepts federated STS tokens only with direct access).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    /// A service-account JWT exchanged at the OAuth endpoint.
    ServiceAccount,
    /// A federated token from STS.
    Federated,
    /// A service-account token from `generateAccessToken` (impersonation).
    Impersonated,
}

#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) zone: String,
    pub(crate) status: String,
    /// The body as inserted (name, machineType, disks, networkInterfaces, metadata, …).
    pub(crate) body: Value,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) nat_ip: String,
    pub(crate) booted: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) name: String,
    /// Empty for global operations.
    pub(crate) zone: String,
    pub(crate) kind: String,
    pub(crate) target: String,
    pub(crate) status: String,
    /// (code, message, HTTP status) when it failed.
    pub(crate) error: Option<(String, String, u16)>,
}

/// Everything in the fake project.
#[derive(Debug, Default)]
pub(crate) struct Inventory {
    next: u64,
    /// Instances by `<zone>/<name>`.
    pub(crate) instances: BTreeMap<String, Instance>,
    /// Firewalls by name, as the API renders them.
    pub(crate) firewalls: BTreeMap<String, Value>,
    pub(crate) operations: HashMap<String, Operation>,
    /// requestId → operation name.
    pub(crate) request_ids: HashMap<String, String>,
    pub(crate) default_network: bool,
    pub(crate) tokens: HashMap<String, (SystemTime, TokenKind)>,
    /// The tokens whose scopes let them read the Cloud Billing catalog.
    pub(crate) billing_tokens: std::collections::HashSet<String>,
    /// Labels of every instance ever created (deleted ones included).
    pub(crate) created_labels: Vec<BTreeMap<String, String>>,
}

impl Inventory {
    pub(crate) fn next(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// A new operation on `target`; returns its name.
    pub(crate) fn start(&mut self, zone: &str, kind: &str, target: &str, done: bool) -> String {
        let name = format!(
            "operation-{}-{:016x}",
            1_700_000_000 + self.next(),
            self.next() * 0x9e37_79b9
        );
        let status = if done { "DONE" } else { "RUNNING" };
        self.operations.insert(
            name.clone(),
            Operation {
                name: name.clone(),
                zone: zone.to_owned(),
                kind: kind.to_owned(),
                target: target.to_owned(),
                status: status.into(),
                error: None,
            },
        );
        name
    }

    pub(crate) fn finish(&mut self, op: &str, error: Option<(&str, &str, u16)>) {
        if let Some(o) = self.operations.get_mut(op) {
            o.status = "DONE".into();
            o.error = error.map(|(c, m, s)| (c.to_owned(), m.to_owned(), s));
        }
    }
}

/// `operation` as the API renders it.
pub(crate) fn operation_json(base: &str, project: &str, o: &Operation) -> Value {
    let scope = if o.zone.is_empty() {
        "global".to_owned()
    } else {
        format!("zones/{}", o.zone)
    };
    let mut v = json!({
        "kind": "compute#operation",
        "id": format!("{}", o.name.len() as u64 * 1_000_003),
        "name": o.name,
        "operationType": o.kind,
        "targetLink": format!("{base}/projects/{project}/{}", o.target),
        "status": o.status,
        "progress": if o.status == "DONE" { 100 } else { 0 },
        "insertTime": "2026-01-01T00:00:00.000-08:00",
        "selfLink": format!("{base}/projects/{project}/{scope}/operations/{}", o.name),
    });
    if !o.zone.is_empty() {
        v["zone"] = json!(format!("{base}/projects/{project}/zones/{}", o.zone));
    }
    if let Some((code, message, status)) = &o.error {
        v["error"] = json!({ "errors": [{ "code": code, "message": message }] });
        v["httpErrorStatusCode"] = json!(status);
        v["httpErrorMessage"] = json!(if *status == 409 {
            "CONFLICT"
        } else {
            "SERVICE UNAVAILABLE"
        });
    }
    v
}

/// The Compute error envelope.
pub(crate) fn error(code: u16, reason: &str, message: &str) -> Value {
    let status = match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ALREADY_EXISTS",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({ "error": { "code": code, "message": message, "errors": [{ "message": message, "domain": "global", "reason": reason }], "status": status } })
}

/// The external address of instance number `n` (34.118.0.0/16, documentation-style).
pub(crate) fn nat_ip(n: u64) -> String {
    format!("34.118.{}.{}", (n >> 8) & 0xff, n & 0xff)
}
