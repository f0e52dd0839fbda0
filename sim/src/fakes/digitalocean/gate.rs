//! What stands in front of every handler: the request log (outermost, so it sees every
//! answer), bearer authentication (401 `unauthorized`), the per-token rate limit (429
//! `too_many_requests` with `Retry-After`), the token's scopes (403 `forbidden` for an
//! operation whose scope a read-only or custom-scoped token lacks) and the fault plan.
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;
use serde_json::Value;
use tokio::time::Instant;

use super::limits::Taken;
use super::scopes;
use super::state::{LoggedRequest, REGION_UNAVAILABLE, Shared, error, unprocessable};
use crate::fakes::Fault;

/// Marks an answer whose connection the fake drops (the log records no status).
#[derive(Debug, Clone, Copy)]
struct Dropped;

/// Largest body the fake reads (DigitalOcean caps user-data at 64 KiB).
const MAX_BODY: usize = 1 << 20;

/// Logs the request when it arrives, then the answer the client received. A request whose
/// client went away before the answer (the handler is dropped) keeps `status: None`.
pub(super) async fn record(
    State(shared): State<Arc<Shared>>,
    req: Request,
    next: Next,
) -> Response {
    let at = Instant::now();
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .unwrap_or_default();
    let index = {
        let mut log = shared.log.lock().unwrap_or_else(|e| e.into_inner());
        log.push(LoggedRequest {
            at,
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().unwrap_or_default().to_owned(),
            body: as_json(&bytes),
            status: None,
            response: Value::Null,
        });
        log.len() - 1
    };
    let resp = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if resp.extensions().get::<Dropped>().is_some() {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .unwrap_or_default();
    if let Some(entry) = shared
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(index)
    {
        entry.status = Some(parts.status.as_u16());
        entry.response = as_json(&bytes);
    }
    Response::from_parts(parts, Body::from(bytes))
}

fn as_json(bytes: &Bytes) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// Authentication, rate limit, faults, then the handler.
pub(super) async fn gate(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let Some(access) = presented.and_then(|t| shared.tokens.get(&t).cloned()) else {
        return error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Unable to authenticate you",
        );
    };
    let taken = shared
        .limits
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let headers = match taken {
        Taken::Allowed(h) => h,
        Taken::Limited(wait, h) => {
            let mut resp = error(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                "API Rate limit exceeded.",
            );
            resp.headers_mut().extend(h);
            resp.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(wait.as_secs_f64().ceil().max(1.0) as u64),
            );
            return resp;
        }
    };
    // The scope is checked before the body is read or the resource looked up.
    let needed = scopes::required(req.method().as_str(), req.uri().path());
    if !access.allows(&needed) {
        let mut resp = error(
            StatusCode::FORBIDDEN,
            "forbidden",
            "You are not authorized to perform this operation",
        );
        resp.headers_mut().extend(headers);
        return resp;
    }
    let fault = shared.faults.take(req.method().as_str(), req.uri().path());
    let is_create = req.method() == Method::POST && req.uri().path() == "/v2/droplets";
    let mut resp = match fault {
        None => next.run(req).await,
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            next.run(req).await
        }
        Some(Fault::ProcessThenDrop) => dropped(next.run(req).await),
        Some(Fault::DropConnection) => dropped(Response::new(Body::empty())),
        Some(Fault::RateLimited { retry_after_secs }) => {
            let mut resp = error(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_requests",
                "API Rate limit exceeded.",
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
            let mut h = shared
                .limits
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .headers_now();
            h.insert("ratelimit-remaining", HeaderValue::from(0u32));
            resp.headers_mut().extend(h);
            return resp;
        }
        Some(Fault::InternalError) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "Unexpected server-side error",
        ),
        Some(Fault::Unavailable) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "service_unavailable",
            "The service is temporarily unavailable. Please try again later.",
        ),
        // Only a droplet create can meet a capacity shortage; other calls proceed.
        Some(Fault::Capacity) if is_create => unprocessable(REGION_UNAVAILABLE),
        Some(Fault::Capacity) => next.run(req).await,
    };
    resp.headers_mut().extend(headers);
    resp
}

/// The answer's status line and headers go out, then the connection is cut mid-body.
fn dropped(resp: Response) -> Response {
    let (mut parts, _) = resp.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.extensions.insert(Dropped);
    let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
        Ok(Bytes::from_static(b"{\"")),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "fault: connection dropped",
        )),
    ];
    let stream = futures::stream::iter(chunks).then(|c| async move {
        // Let the first chunk reach the socket before the connection is torn down.
        tokio::time::sleep(Duration::from_millis(1)).await;
        c
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
