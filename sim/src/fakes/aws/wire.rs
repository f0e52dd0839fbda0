//! What the fake's HTTP edge (`api.rs`), its EC2 dispatcher (`ec2.rs`), the EC2 handlers
//! and STS share: the fake's state, one authenticated call, the answer with EC2's and
//! STS's error documents, and EC2's filter matching. A leaf: it imports neither the edge
//! nor the dispatcher nor a handler.
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::task::AbortHandle;

use super::AwsRequest;
use super::catalog::glob;
use super::query::Params;
use super::state::Inventory;
use super::xml::{self, Xml};
use crate::fakes::{BootHook, FaultPlan};

/// State shared by the handlers, the timers and the handle.
pub(crate) struct Shared {
    pub(crate) account_id: String,
    /// Long-term keys: (access key id, secret).
    pub(crate) access_keys: Vec<(String, String)>,
    pub(crate) denied_actions: Vec<String>,
    pub(crate) boot_hook: Option<BootHook>,
    pub(crate) state_step: Duration,
    pub(crate) session_lifetime: Option<Duration>,
    /// The most items a paginated answer holds.
    pub(crate) page_limit: usize,
    pub(crate) faults: FaultPlan,
    pub(crate) inventory: Mutex<Inventory>,
    pub(crate) log: Mutex<Vec<AwsRequest>>,
    pub(crate) tasks: Mutex<Vec<AbortHandle>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("account_id", &self.account_id)
            .finish_non_exhaustive()
    }
}

/// Who is calling.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) arn: String,
    pub(crate) user_id: String,
    /// Signed with session credentials from STS.
    pub(crate) session: bool,
}

/// One authenticated call.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) action: String,
    pub(crate) region: String,
    pub(crate) caller: Caller,
    pub(crate) params: Params,
    /// The body of a JSON-protocol call (the Price List); `Null` for the Query protocol.
    pub(crate) json: serde_json::Value,
    pub(crate) request_id: String,
}

/// An answer: status and XML body.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: String,
    pub(crate) error_code: Option<String>,
}

impl Reply {
    pub(crate) fn ok(body: String) -> Self {
        Self {
            status: 200,
            body,
            error_code: None,
        }
    }

    /// An EC2 error document.
    pub(crate) fn ec2_error(status: u16, code: &str, message: &str) -> Self {
        Self {
            status,
            body: xml::ec2_error(code, message, "00000000-fake-0000-0000-000000000000"),
            error_code: Some(code.to_owned()),
        }
    }

    /// A JSON 1.1 error document (`{"__type", "Message"}`: the Price List).
    pub(crate) fn json_error(status: u16, code: &str, message: &str) -> Self {
        Self {
            status,
            body: serde_json::json!({ "__type": code, "Message": message }).to_string(),
            error_code: Some(code.to_owned()),
        }
    }

    /// An STS error document.
    pub(crate) fn sts_error(status: u16, code: &str, message: &str) -> Self {
        Self {
            status,
            body: xml::sts_error(
                status,
                code,
                message,
                "00000000-fake-0000-0000-000000000000",
            ),
            error_code: Some(code.to_owned()),
        }
    }

    /// An STS error document for `sts`, a JSON 1.1 one for `pricing`, an EC2 one
    /// otherwise.
    pub(crate) fn error(service: &str, status: u16, code: &str, message: &str) -> Self {
        match service {
            "sts" => Self::sts_error(status, code, message),
            "pricing" => Self::json_error(status, code, message),
            _ => Self::ec2_error(status, code, message),
        }
    }
}

/// The result of a handler: the response's children, or an error answer.
pub(crate) type Handled = Result<Vec<Xml>, Reply>;

pub(crate) fn bad(code: &str, message: &str) -> Reply {
    Reply::ec2_error(400, code, message)
}

/// Whether a resource passes every filter; `values(name)` gives the resource's values for
/// a filter name (`None`: the filter is not supported there).
pub(crate) fn passes(
    filters: &[(String, Vec<String>)],
    tags: &BTreeMap<String, String>,
    values: impl Fn(&str) -> Option<Vec<String>>,
) -> Result<bool, Reply> {
    for (name, wanted) in filters {
        let have = match name.strip_prefix("tag:") {
            Some(key) => tags.get(key).cloned().into_iter().collect(),
            None if name == "tag-key" => tags.keys().cloned().collect(),
            None => values(name).ok_or_else(|| {
                bad(
                    "InvalidParameterValue",
                    &format!("The filter '{name}' is invalid"),
                )
            })?,
        };
        if !have.iter().any(|h| wanted.iter().any(|w| glob(w, h))) {
            return Ok(false);
        }
    }
    Ok(true)
}

pub(crate) fn one(v: &str) -> Option<Vec<String>> {
    Some(vec![v.to_owned()])
}
