//! The fake's HTTP edge: every request is logged, charged to the project's rate-limit bucket
//! (`RateLimit-*` headers on every answer, 429 `rate_limit_exceeded` when empty), offered to
//! the fault plan, authenticated, then handled. Handling runs in its own task, so a client
//! that gives up (timeout) does not cancel a create half-way, as with a real cloud.
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;
use tokio::time::Instant;

use super::bucket::Bucket;
use super::wire::{Call, Reply, Shared};
use super::{LoggedRequest, routes};
use crate::fakes::Fault;
use crate::fakes::edge::lock;

enum Outcome {
    Answer(Reply),
    Drop,
}

/// The single handler behind every path.
pub(crate) async fn entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let method = parts.method.as_str().to_ascii_uppercase();
    let full = parts.uri.path();
    let rel = full
        .strip_prefix("/v1")
        .filter(|r| r.is_empty() || r.starts_with('/'))
        .unwrap_or(full)
        .to_owned();
    let target = parts
        .uri
        .query()
        .map_or_else(|| rel.clone(), |q| format!("{rel}?{q}"));
    let parsed: Result<Value, ()> = if bytes.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice(&bytes).map_err(|_| ())
    };
    let logged_body = parsed
        .clone()
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    let index = {
        let mut log = lock(&shared.log);
        log.push(LoggedRequest {
            at: Instant::now(),
            method: method.clone(),
            path: target,
            body: logged_body,
            status: None,
            response: Value::Null,
        });
        log.len() - 1
    };
    let (allowed, headers, limit) = match lock(&shared.bucket).as_mut() {
        Some(b) => {
            let (ok, h) = b.take();
            (ok, Some(h), b.limit())
        }
        None => (true, None, 0),
    };
    let query = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
        .map(|q| q.0)
        .unwrap_or_default();
    let segments = rel
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let outcome = if !full.starts_with("/v1/") {
        Outcome::Answer(Reply::error(404, "not_found", "not found"))
    } else if !allowed {
        Outcome::Answer(rate_limited(limit))
    } else {
        match parsed {
            Err(()) => Outcome::Answer(Reply::error(
                400,
                "json_error",
                "invalid JSON in the request body",
            )),
            Ok(body) => {
                let authorization = parts
                    .headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                serve(
                    &shared,
                    Call {
                        method: method.clone(),
                        authorization,
                        segments,
                        query,
                        body,
                    },
                    &rel,
                )
                .await
            }
        }
    };
    let mut response = match &outcome {
        Outcome::Drop => dropped(),
        Outcome::Answer(reply) => {
            let mut log = lock(&shared.log);
            if let Some(entry) = log.get_mut(index) {
                entry.status = Some(reply.status);
                entry.response = reply.body.clone();
            }
            to_response(reply)
        }
    };
    for (name, value) in headers.into_iter().flatten() {
        if let Ok(v) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, v);
        }
    }
    response
}

/// Hetzner's 429 answer when the project's `limit` (requests per hour) is spent.
fn rate_limited(limit: u64) -> Reply {
    Reply::error(
        429,
        "rate_limit_exceeded",
        &format!("limit of {limit} requests per hour reached"),
    )
}

/// Applies the fault plan, then handles the call.
async fn serve(shared: &Arc<Shared>, call: Call, rel: &str) -> Outcome {
    let handle_in_task = |shared: Arc<Shared>, call: Call, delay: Duration| async move {
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            routes::handle(&shared, &call)
        });
        task.await
            .unwrap_or_else(|_| Reply::error(500, "server_error", "handler failed"))
    };
    match shared.faults.take(&call.method, rel) {
        Some(Fault::RateLimited { retry_after_secs }) => {
            let limit = lock(&shared.bucket).as_ref().map_or(3600, Bucket::limit);
            let mut r = rate_limited(limit);
            r.retry_after = Some(retry_after_secs);
            Outcome::Answer(r)
        }
        Some(Fault::InternalError) => Outcome::Answer(Reply::error(
            500,
            "server_error",
            "error within the API backend",
        )),
        Some(Fault::Unavailable) => Outcome::Answer(Reply::error(
            503,
            "unavailable",
            "the service is currently not available",
        )),
        Some(Fault::DropConnection) => Outcome::Drop,
        Some(Fault::Capacity) if call.method == "POST" => {
            Outcome::Answer(Reply::resource_unavailable())
        }
        Some(Fault::Delay(d)) => Outcome::Answer(handle_in_task(shared.clone(), call, d).await),
        Some(Fault::ProcessThenDrop) => {
            handle_in_task(shared.clone(), call, Duration::ZERO).await;
            Outcome::Drop
        }
        Some(Fault::Capacity) | None => {
            Outcome::Answer(handle_in_task(shared.clone(), call, Duration::ZERO).await)
        }
    }
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
        response
            .headers_mut()
            .insert("content-type", HeaderValue::from_static("application/json"));
    }
    if let Some(secs) = reply.retry_after {
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from(secs));
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
