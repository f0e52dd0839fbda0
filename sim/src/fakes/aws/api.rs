//! The fake's HTTP edge: a form-encoded `POST /` (or, for the Price List, a JSON one
//! naming its operation in `X-Amz-Target`) is decoded, logged, authenticated (the
//! SigV4 `Authorization` header must name a known access key, and a session key must come
//! with its `X-Amz-Security-Token`), offered to the fault plan (path `/{Action}`, then
//! `/{subnet id}` when the call names one), checked against the denied actions (also for
//! `DryRun`), then handled by EC2, STS or the Price List according to the signing scope's
//! service. Handling runs in its own task, so a client that gives up
//! does not cancel a launch half-way, as with a real cloud.
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use super::query::{Params, scope};
use super::wire::{Call, Caller, Reply, Shared};
use super::{AwsRequest, ec2, sts};
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
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    // The JSON protocol (the Price List) names its operation in `X-Amz-Target`; the Query
    // protocol (EC2, STS) in the form's `Action`.
    let target = header("x-amz-target");
    let (params, json) = match &target {
        Some(_) => (
            Params::parse(""),
            serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        ),
        None => (
            Params::parse(&String::from_utf8_lossy(&bytes)),
            serde_json::Value::Null,
        ),
    };
    let scope = header("authorization").as_deref().and_then(scope);
    let action = match &target {
        Some(t) => t
            .strip_prefix("AWSPriceListService.")
            .unwrap_or(t)
            .to_owned(),
        None => params.get("Action").unwrap_or_default().to_owned(),
    };
    let service = scope
        .as_ref()
        .map(|s| s.service.clone())
        .unwrap_or_else(|| "ec2".into());
    let index = {
        let mut log = lock(&shared.log);
        log.push(AwsRequest {
            service: service.clone(),
            action: action.clone(),
            region: scope.as_ref().map(|s| s.region.clone()).unwrap_or_default(),
            access_key_id: scope
                .as_ref()
                .map(|s| s.access_key_id.clone())
                .unwrap_or_default(),
            params: params.0.clone(),
            body: json.clone(),
            status: None,
            error_code: None,
            response: String::new(),
        });
        log.len() - 1
    };
    let outcome = if parts.method != axum::http::Method::POST {
        Outcome::Answer(Reply::error(
            &service,
            400,
            "InvalidAction",
            "the Query API accepts POST only here",
        ))
    } else {
        match authenticate(
            &shared,
            scope.as_ref(),
            header("x-amz-security-token").as_deref(),
        ) {
            Err(reply) => Outcome::Answer(reply),
            Ok(caller) => {
                let call = Call {
                    action: action.clone(),
                    region: scope.map(|s| s.region).unwrap_or_default(),
                    caller,
                    params,
                    json,
                    request_id: format!("{:08x}-fake-4000-8000-{:012x}", index, index * 7919),
                };
                serve(&shared, &service, call).await
            }
        }
    };
    match outcome {
        Outcome::Drop => dropped(),
        Outcome::Answer(reply) => {
            if let Some(entry) = lock(&shared.log).get_mut(index) {
                entry.status = Some(reply.status);
                entry.error_code = reply.error_code.clone();
                entry.response = reply.body.clone();
            }
            to_response(&reply)
        }
    }
}

fn authenticate(
    shared: &Shared,
    scope: Option<&super::query::Scope>,
    token: Option<&str>,
) -> Result<Caller, Reply> {
    let Some(scope) = scope else {
        return Err(Reply::ec2_error(
            401,
            "AuthFailure",
            "AWS was not able to validate the provided access credentials",
        ));
    };
    let refuse = |service: &str| match service {
        "sts" => Reply::sts_error(
            403,
            "InvalidClientTokenId",
            "The security token included in the request is invalid.",
        ),
        "pricing" => Reply::json_error(
            400,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ),
        _ => Reply::ec2_error(
            401,
            "AuthFailure",
            "AWS was not able to validate the provided access credentials",
        ),
    };
    if !matches!(scope.service.as_str(), "ec2" | "sts" | "pricing") {
        return Err(refuse(&scope.service));
    }
    let key = &scope.access_key_id;
    if shared.access_keys.iter().any(|(k, _)| k == key) {
        return Ok(Caller {
            arn: format!("arn:aws:iam::{}:user/levelrail", shared.account_id),
            user_id: format!("AIDA{}", &key[4.min(key.len())..]),
            session: false,
        });
    }
    let inv = lock(&shared.inventory);
    match inv.sessions.get(key) {
        // EC2 answers `RequestExpired` for expired temporary credentials; STS, like most
        // services, `ExpiredToken`.
        Some(s) if Some(s.token.as_str()) == token && s.expires <= std::time::SystemTime::now() => {
            Err(match scope.service.as_str() {
                "sts" => Reply::sts_error(
                    403,
                    "ExpiredToken",
                    "The security token included in the request is expired",
                ),
                "pricing" => Reply::json_error(
                    400,
                    "ExpiredTokenException",
                    "The security token included in the request is expired",
                ),
                _ => Reply::ec2_error(400, "RequestExpired", "Request has expired."),
            })
        }
        Some(s) if Some(s.token.as_str()) == token => Ok(Caller {
            arn: s.arn.clone(),
            user_id: s.user_id.clone(),
            session: true,
        }),
        _ => Err(refuse(&scope.service)),
    }
}

/// Applies the fault plan, the denied actions and `DryRun`, then handles the call.
async fn serve(shared: &Arc<Shared>, service: &str, call: Call) -> Outcome {
    let handle_in_task = |shared: Arc<Shared>, service: String, call: Call, delay: Duration| async move {
        let task = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            handle(&shared, &service, &call)
        });
        task.await
            .unwrap_or_else(|_| Reply::error("ec2", 500, "InternalError", "handler failed"))
    };
    match shared.faults.take("POST", &fault_path(&call)) {
        Some(Fault::RateLimited { .. }) => {
            let (status, code) = match service {
                "sts" => (400, "Throttling"),
                "pricing" => (400, "ThrottlingException"),
                _ => (503, "RequestLimitExceeded"),
            };
            Outcome::Answer(Reply::error(
                service,
                status,
                code,
                "Request limit exceeded.",
            ))
        }
        Some(Fault::InternalError) => Outcome::Answer(Reply::error(
            service,
            500,
            "InternalError",
            "An internal error has occurred",
        )),
        Some(Fault::Unavailable) => Outcome::Answer(Reply::error(
            service,
            503,
            "Unavailable",
            "The server is overloaded and can't handle the request.",
        )),
        Some(Fault::DropConnection) => Outcome::Drop,
        Some(Fault::Capacity) if call.action == "RunInstances" => {
            Outcome::Answer(Reply::ec2_error(
                500,
                "InsufficientInstanceCapacity",
                "We currently do not have sufficient capacity in the Availability Zone you requested.",
            ))
        }
        Some(Fault::Delay(d)) => {
            Outcome::Answer(handle_in_task(shared.clone(), service.to_owned(), call, d).await)
        }
        Some(Fault::ProcessThenDrop) => {
            handle_in_task(shared.clone(), service.to_owned(), call, Duration::ZERO).await;
            Outcome::Drop
        }
        Some(Fault::Capacity) | None => Outcome::Answer(
            handle_in_task(shared.clone(), service.to_owned(), call, Duration::ZERO).await,
        ),
    }
}

/// `/{Action}`, then `/{subnet id}` when the call names a subnet, so a fault can hit the
/// launches in one subnet only (`/RunInstances/subnet-…`) or every call of an action.
fn fault_path(call: &Call) -> String {
    let subnet = call
        .params
        .str("NetworkInterface.1.SubnetId")
        .or(call.params.str("SubnetId"));
    match subnet {
        Some(s) => format!("/{}/{s}", call.action),
        None => format!("/{}", call.action),
    }
}

fn handle(shared: &Arc<Shared>, service: &str, call: &Call) -> Reply {
    if shared.denied_actions.contains(&call.action) {
        return match service {
            "pricing" => Reply::json_error(
                400,
                "AccessDeniedException",
                &format!(
                    "User: {} is not authorized to perform: pricing:{}",
                    call.caller.arn, call.action
                ),
            ),
            "sts" => Reply::sts_error(
                403,
                "AccessDenied",
                &format!(
                    "{} is not authorized to perform: sts:{}",
                    call.caller.arn, call.action
                ),
            ),
            _ => Reply::ec2_error(
                403,
                "UnauthorizedOperation",
                "You are not authorized to perform this operation.",
            ),
        };
    }
    if service == "ec2" && call.params.flag("DryRun") {
        return Reply::ec2_error(
            412,
            "DryRunOperation",
            "Request would have succeeded, but DryRun flag is set.",
        );
    }
    match service {
        "sts" => sts::handle(shared, call),
        "pricing" => super::pricing::handle(call, shared.page_limit),
        _ => ec2::handle(shared, call),
    }
}

fn to_response(reply: &Reply) -> Response {
    let mut response = Response::new(Body::from(reply.body.clone()));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let content_type = if reply.body.starts_with('{') {
        "application/x-amz-json-1.1"
    } else {
        "text/xml;charset=UTF-8"
    };
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
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
        .insert("content-type", HeaderValue::from_static("text/xml"));
    response
}
