//! One unary REST call: the request message from the path, query and body; the RPC through
//! the guarded gRPC router; its answer as JSON, or its status as an HTTP error.
use std::net::SocketAddr;

use axum::body::Body;
use axum::body::Bytes;
use axum::extract::{RawPathParams, Request};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};
use http_body_util::BodyExt;
use prost::Message as _;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use serde::Serialize;
use tonic::Code;

use levelrail_rest_json::{self as json, FieldError};

use super::{Rest, Route};
use crate::listener::{BODY_DEADLINE, RestAdmitted, check_caller, message_limit, peer_of};

/// Every error's JSON: `{"error": {"code", "message", "field"}}`. `code` is the gRPC code's
/// name in lower case (`invalid_argument`, `already_exists`, …); `field` names the request
/// field at fault when one is.
#[derive(Debug, Serialize)]
pub(crate) struct ErrorBody {
    #[serde(skip)]
    pub(crate) status: StatusCode,
    #[serde(skip)]
    pub(crate) retry_after: Option<HeaderValue>,
    pub(crate) error: ErrorDetail,
}

#[derive(Debug, Serialize)]
pub(crate) struct ErrorDetail {
    pub(crate) code: String,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) field: Option<String>,
}

impl ErrorBody {
    pub(crate) fn new(
        status: StatusCode,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            retry_after: None,
            error: ErrorDetail {
                code: code.into(),
                message: message.into(),
                field: None,
            },
        }
    }

    /// A 400 naming `field`.
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        let mut e = Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            format!("{field}: {}", message.into()),
        );
        e.error.field = Some(field);
        e
    }

    /// The HTTP form of a gRPC status.
    pub(crate) fn from_status(status: &tonic::Status, headers: &HeaderMap) -> Self {
        let code = status.code();
        let field = status
            .metadata()
            .get("x-levelrail-field")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| {
                (code == Code::InvalidArgument)
                    .then(|| field_of(status.message()))
                    .flatten()
            });
        let mut body = Self::new(
            http_status(code),
            crate::audit::outcome(code).to_ascii_lowercase(),
            status.message(),
        );
        body.error.field = field;
        body.retry_after = headers.get(http::header::RETRY_AFTER).cloned();
        if body.status == StatusCode::TOO_MANY_REQUESTS && body.retry_after.is_none() {
            body.retry_after = Some(HeaderValue::from_static("1"));
        }
        body
    }
}

impl From<FieldError> for ErrorBody {
    fn from(e: FieldError) -> Self {
        Self::invalid(e.field, e.message)
    }
}

/// A route's path parameters, percent-decoded.
pub(super) fn path_params(params: &RawPathParams) -> Vec<(&str, &str)> {
    params.iter().collect()
}

impl IntoResponse for ErrorBody {
    fn into_response(self) -> Response {
        let status = self.status;
        let retry_after = self.retry_after.clone();
        let mut resp = (status, axum::Json(self)).into_response();
        if let Some(v) = retry_after {
            resp.headers_mut().insert(http::header::RETRY_AFTER, v);
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}

/// The field a `field.path: message` status message names.
fn field_of(message: &str) -> Option<String> {
    let (field, _) = message.split_once(": ")?;
    let is_path = !field.is_empty()
        && field
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'));
    is_path.then(|| field.to_owned())
}

/// The HTTP status of a gRPC code (as Google's API gateways map them).
pub(crate) fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => {
            StatusCode::BAD_REQUEST
        }
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Cancelled => StatusCode::from_u16(499).unwrap_or(StatusCode::BAD_REQUEST),
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Unknown | Code::Internal | Code::DataLoss => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A unary route: the RPC's answer as JSON.
pub(super) async fn call(
    rest: &Rest,
    route: &Route,
    method: &MethodDescriptor,
    params: &RawPathParams,
    req: Request,
) -> Result<Response, ErrorBody> {
    let (parts, body) = req.into_parts();
    let path = format!("/{}", route.rpc);
    // Held until the answer is sent, as a gRPC call's is until its headers are.
    let _permit = admit(rest, &parts, &path)?;
    let body = if route.body {
        Some(read_body(&parts.headers, body, message_limit(&path)).await?)
    } else {
        None
    };
    let message = json::request(
        method.input(),
        &path_params(params),
        parts.uri.query(),
        body.as_deref(),
    )?;
    let answer = rpc(rest, route.rpc, &parts, &message).await?;
    if let Some(status) = status_in(&answer.headers, answer.trailers.as_ref()) {
        return Err(ErrorBody::from_status(&status, &answer.headers));
    }
    let reply = decode_frame(method.output(), &answer.data)
        .ok_or_else(|| internal("the service's answer could not be read"))?;
    let status = if route.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, axum::Json(json::Json(reply))).into_response())
}

/// Admits a REST call before its body is read, as the limit and the guard admit a gRPC
/// call: a permit of the listener's limit, then the token, its budget and its scope for
/// the RPC. The permit is the caller's to hold; the in-process call is marked [`RestAdmitted`].
pub(super) fn admit(
    rest: &Rest,
    parts: &http::request::Parts,
    path: &str,
) -> Result<tokio::sync::OwnedSemaphorePermit, ErrorBody> {
    let permit = rest.limit.admit().map_err(|r| refusal_of(&r))?;
    check_caller(
        &rest.guard,
        &parts.headers,
        path,
        peer_of(&parts.extensions),
        true,
    )
    .map_err(|r| refusal_of(&r))?;
    Ok(permit)
}

/// The JSON form of a refusal the limit or the guard answered in gRPC's form.
fn refusal_of(resp: &Response) -> ErrorBody {
    let headers = resp.headers();
    match tonic::Status::from_header_map(headers) {
        Some(status) => ErrorBody::from_status(&status, headers),
        None => internal("the call was refused"),
    }
}

/// The JSON body: `application/json` (a body of another declared type is refused before
/// it is read), at most `limit` bytes, within the body deadline.
async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, ErrorBody> {
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    let json = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| {
            ct.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .eq_ignore_ascii_case("application/json")
        });
    if json == Some(false) {
        return Err(not_json());
    }
    let read = tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, limit)).await;
    let bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => {
            let over = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            return Err(if over {
                too_large(limit)
            } else {
                ErrorBody::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_argument",
                    "the request body broke off",
                )
            });
        }
        Err(_) => {
            return Err(ErrorBody::new(
                StatusCode::REQUEST_TIMEOUT,
                "deadline_exceeded",
                format!(
                    "the request body did not arrive within {} s",
                    BODY_DEADLINE.as_secs()
                ),
            ));
        }
    };
    Ok(bytes)
}

fn not_json() -> ErrorBody {
    ErrorBody::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "invalid_argument",
        "the request body must be application/json",
    )
}

fn too_large(limit: usize) -> ErrorBody {
    ErrorBody::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "resource_exhausted",
        format!("request body larger than the {limit}-byte limit of this API"),
    )
}

pub(crate) fn internal(message: &str) -> ErrorBody {
    ErrorBody::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
}

/// The gRPC request of `message` to `rpc`, with the caller's token and address.
pub(super) fn grpc_request(
    rpc: &str,
    parts: &http::request::Parts,
    message: &DynamicMessage,
) -> Request {
    let encoded = message.encode_to_vec();
    let mut framed = Vec::with_capacity(encoded.len() + 5);
    framed.push(0);
    framed.extend_from_slice(
        &u32::try_from(encoded.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    framed.extend_from_slice(&encoded);
    let mut req = Request::new(Body::from(framed));
    *req.method_mut() = http::Method::POST;
    *req.uri_mut() = format!("/{rpc}")
        .parse()
        .unwrap_or_else(|_| http::Uri::from_static("/"));
    let headers = req.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert(http::header::TE, HeaderValue::from_static("trailers"));
    if let Some(v) = parts.headers.get(http::header::AUTHORIZATION) {
        headers.insert(http::header::AUTHORIZATION, v.clone());
    }
    if let Some(peer) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
    {
        req.extensions_mut().insert(*peer);
    }
    req.extensions_mut().insert(RestAdmitted);
    req
}

/// A unary RPC's whole answer.
struct Answer {
    headers: HeaderMap,
    data: Bytes,
    trailers: Option<HeaderMap>,
}

async fn rpc(
    rest: &Rest,
    rpc: &str,
    parts: &http::request::Parts,
    message: &DynamicMessage,
) -> Result<Answer, ErrorBody> {
    let req = grpc_request(rpc, parts, message);
    let resp = match tower::ServiceExt::oneshot(rest.grpc.clone(), req).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    };
    let (head, body) = resp.into_parts();
    let collected = body
        .collect()
        .await
        .map_err(|_| internal("the service's answer broke off"))?;
    let trailers = collected.trailers().cloned();
    Ok(Answer {
        headers: head.headers,
        data: collected.to_bytes(),
        trailers,
    })
}

/// The call's status unless it is OK: from the trailers, or from the headers of a
/// trailers-only answer.
pub(super) fn status_in(
    headers: &HeaderMap,
    trailers: Option<&HeaderMap>,
) -> Option<tonic::Status> {
    let status = trailers
        .and_then(tonic::Status::from_header_map)
        .or_else(|| tonic::Status::from_header_map(headers));
    match status {
        Some(s) if s.code() == Code::Ok => None,
        Some(s) => Some(s),
        None => Some(tonic::Status::internal(
            "the service's answer had no status",
        )),
    }
}

/// The one message of a unary answer (`[flag][length][message]`).
fn decode_frame(desc: prost_reflect::MessageDescriptor, data: &[u8]) -> Option<DynamicMessage> {
    match next_frame(data) {
        Some(Ok((message, _))) => DynamicMessage::decode(desc, message).ok(),
        _ => None,
    }
}

/// The first whole message of `data`, and how many bytes its frame took; `None` until a
/// whole frame is there; an error for a compressed one (this caller asks for none).
pub(super) fn next_frame(data: &[u8]) -> Option<Result<(&[u8], usize), ()>> {
    let (&flag, rest) = data.split_first()?;
    let len = usize::try_from(u32::from_be_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
    let message = rest.get(4..4 + len)?;
    Some(if flag == 0 {
        Ok((message, 5 + len))
    } else {
        Err(())
    })
}
