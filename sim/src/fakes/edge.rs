//! The HTTP edge shared by the Azure and GCP fakes: every request is logged (method, path
//! with query, content type, raw and JSON body, then the answer), offered to the fault plan,
//! then handled in its own task, so a client that gives up (timeout) does not cancel a
//! create half-way, as with a real cloud. `ProcessThenDrop` handles the call and aborts
//! the connection; `Delay` answers late but processes the call anyway.
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::{Fault, FaultPlan};

/// One request a fake received, for contract tests.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// Path with the query string as sent.
    pub path: String,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The body as sent (UTF-8, lossy).
    pub raw_body: String,
    /// The body as JSON (`Null` when empty or not JSON).
    pub body: Value,
    /// The answer's status; `None` when the connection was dropped instead.
    pub status: Option<u16>,
    /// The answer's JSON body (`Null` when none).
    pub response: Value,
}

/// A parsed request (no `Debug`: it may hold a bearer token or a client secret).
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) authorization: Option<String>,
    pub(crate) content_type: String,
    pub(crate) raw: String,
    pub(crate) json: Value,
}

impl Call {
    /// The first value of query parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as an `application/x-www-form-urlencoded` form, in order.
    pub(crate) fn form(&self) -> Vec<(String, String)> {
        url_decode_pairs(&self.raw)
    }

    /// The path's segments.
    pub(crate) fn segments(&self) -> Vec<&str> {
        self.path.split('/').filter(|s| !s.is_empty()).collect()
    }
}

/// An answer: status, JSON body (`Null` for none) and extra headers.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Value,
    pub(crate) headers: Vec<(String, String)>,
    /// A long poll: handle the call again after this long instead of answering (up to
    /// `LONG_POLL_ROUNDS` times, then this answer is sent).
    pub(crate) again_after: Option<Duration>,
}

/// How many times a long poll is retried before it answers anyway.
const LONG_POLL_ROUNDS: u32 = 40;

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            headers: Vec::new(),
            again_after: None,
        }
    }

    /// Asks the edge to handle the call again after `d` (a long poll).
    pub(crate) fn again_after(mut self, d: Duration) -> Self {
        self.again_after = Some(d);
        self
    }

    pub(crate) fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }
}

/// What a fake cloud plugs into the edge.
pub(crate) trait Cloud: Send + Sync + 'static {
    /// The fault plan.
    fn faults(&self) -> &FaultPlan;
    /// The request log.
    fn log(&self) -> &Mutex<Vec<LoggedRequest>>;
    /// The provider's answer for `fault` (`None`: the fault does not apply to this call).
    fn fault_reply(&self, fault: &Fault, call: &Call) -> Option<Reply>;
    /// Handles a call (`capacity`: the call was hit by a `Capacity` fault the provider
    /// reports asynchronously).
    fn handle(self: &Arc<Self>, call: &Call, capacity: bool) -> Reply;
}

/// Locks, ignoring poisoning.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The single handler behind every path of a fake.
pub(crate) async fn entry<C: Cloud>(State(cloud): State<Arc<C>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 4 << 20)
        .await
        .unwrap_or_default();
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header("content-type").unwrap_or_default();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let call = Call {
        method: parts.method.as_str().to_ascii_uppercase(),
        path: parts.uri.path().to_owned(),
        query: url_decode_pairs(parts.uri.query().unwrap_or_default()),
        authorization: header("authorization"),
        content_type: content_type.clone(),
        raw: raw.clone(),
        json: json.clone(),
    };
    let index = {
        let mut log = lock(cloud.log());
        log.push(LoggedRequest {
            method: call.method.clone(),
            path: path_and_query,
            content_type,
            raw_body: raw,
            body: json,
            status: None,
            response: Value::Null,
        });
        log.len() - 1
    };
    let run = |cloud: Arc<C>, call: Call, delay: Duration, capacity: bool| async move {
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let mut rounds = 0;
            loop {
                let reply = cloud.handle(&call, capacity);
                match reply.again_after {
                    Some(d) if rounds < LONG_POLL_ROUNDS => {
                        rounds += 1;
                        tokio::time::sleep(d).await;
                    }
                    _ => return reply,
                }
            }
        });
        task.await.unwrap_or_else(|_| Reply::json(500, Value::Null))
    };
    let fault = cloud.faults().take(&call.method, &call.path);
    let reply = match fault {
        Some(Fault::DropConnection) => None,
        Some(Fault::ProcessThenDrop) => {
            run(cloud.clone(), call, Duration::ZERO, false).await;
            None
        }
        Some(Fault::Delay(d)) => Some(run(cloud.clone(), call, d, false).await),
        Some(f) => match cloud.fault_reply(&f, &call) {
            Some(r) => Some(r),
            None => Some(run(cloud.clone(), call, Duration::ZERO, f == Fault::Capacity).await),
        },
        None => Some(run(cloud.clone(), call, Duration::ZERO, false).await),
    };
    let Some(reply) = reply else { return dropped() };
    if let Some(entry) = lock(cloud.log()).get_mut(index) {
        entry.status = Some(reply.status);
        entry.response = reply.body.clone();
    }
    to_response(&reply)
}

fn to_response(reply: &Reply) -> Response {
    let body = if reply.body.is_null() {
        Body::empty()
    } else {
        Body::from(reply.body.to_string())
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if !reply.body.is_null() {
        response.headers_mut().insert(
            "content-type",
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
    }
    for (name, value) in &reply.headers {
        if let (Ok(n), Ok(v)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(n, v);
        }
    }
    response
}

/// A response whose body fails at once: the connection is aborted without a full answer.
fn dropped() -> Response {
    let failing = futures::stream::once(async {
        Err::<Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "fault: connection dropped",
        ))
    });
    let mut response = Response::new(Body::from_stream(failing));
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    response
}

/// `a=1&b=x%20y` → pairs, `+` as space, percent-decoded.
pub(crate) fn url_decode_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_and_queries_decode() {
        assert_eq!(
            url_decode_pairs("a=1&b=x%20y+z&c"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y z".into()),
                ("c".into(), "".into())
            ]
        );
        assert_eq!(url_decode_pairs("s=%2"), vec![("s".into(), "%2".into())]);
    }
}
