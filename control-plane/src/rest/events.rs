//! `GET /api/v1/node-provisions/{id}/events`: `WatchProvision` as Server-Sent Events.
//!
//! Each state is one `provision` event whose data is the provision (as `GetProvision`
//! answers it) and whose id is its `generation`. A client that reconnects with
//! `Last-Event-ID` receives only states with a later generation (the current one first),
//! so nothing is seen twice and nothing is missed: coalesced changes arrive as the latest
//! state, as over gRPC; when there is none and the provision is finished, the answer is
//! `204 No Content`, which tells an EventSource to stop reconnecting. The stream ends after
//! `ready` or `failed`; a failure of the stream itself is an `error` event with the error
//! JSON, then the end.
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{RawPathParams, Request};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use prost_reflect::{DynamicMessage, MessageDescriptor, MethodDescriptor};

use super::call::{self, ErrorBody};
use super::{Rest, Route};
use levelrail_rest_json::{self as json, Json};

/// How often an idle stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The stream's answer: the events, or 204 when nothing is newer and the provision is
/// finished.
pub(super) async fn open(
    rest: &Rest,
    route: &Route,
    method: &MethodDescriptor,
    params: &RawPathParams,
    req: Request,
) -> Result<Response, ErrorBody> {
    let (parts, _) = req.into_parts();
    // Held until the stream's first answer, as a gRPC stream's permit is until its headers.
    let permit = call::admit(rest, &parts, &format!("/{}", route.rpc))?;
    let after = last_event_id(&parts.headers)?;
    let params = call::path_params(params);
    let message = json::request(method.input(), &params, parts.uri.query(), None)?;
    let req = call::grpc_request(route.rpc, &parts, &message);
    let resp = match tower::ServiceExt::oneshot(rest.grpc.clone(), req).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    };
    let (head, body) = resp.into_parts();
    // Refused before the stream began (unknown id, token, scope): an HTTP error.
    if let Some(status) = tonic::Status::from_header_map(&head.headers)
        && status.code() != tonic::Code::Ok
    {
        return Err(ErrorBody::from_status(&status, &head.headers));
    }
    let mut events = Box::pin(events(body, method.output(), after));
    let first = events.next().await;
    drop(permit);
    // Nothing later than the client's last event, and the stream is over (the provision
    // is finished): 204 tells an EventSource not to reconnect.
    let Some(first) = first else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let all = futures::stream::once(async move { first }).chain(events);
    Ok(Sse::new(all)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

/// The generation a reconnecting client saw last (`Last-Event-ID`), if any.
fn last_event_id(headers: &HeaderMap) -> Result<Option<u64>, ErrorBody> {
    let Some(v) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = v.to_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<u64>().map(Some).map_err(|_| {
        ErrorBody::invalid(
            "Last-Event-ID",
            "must be the id of an event of this stream (a generation)",
        )
    })
}

struct Reading {
    body: Body,
    buffer: Vec<u8>,
    desc: MessageDescriptor,
    after: Option<u64>,
    done: bool,
}

/// The stream's events, read from the RPC's answer as its frames arrive.
fn events(
    body: Body,
    desc: MessageDescriptor,
    after: Option<u64>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let state = Reading {
        body,
        buffer: Vec::new(),
        desc,
        after,
        done: false,
    };
    futures::stream::unfold(state, |mut s| async move {
        loop {
            if s.done {
                return None;
            }
            if let Some(frame) = call::next_frame(&s.buffer) {
                let (decoded, used) = match frame {
                    Ok((message, used)) => (
                        DynamicMessage::decode(s.desc.clone(), message).map_err(|_| ()),
                        used,
                    ),
                    Err(()) => (Err(()), s.buffer.len()),
                };
                s.buffer.drain(..used);
                let Ok(event) = decoded else {
                    s.done = true;
                    return Some((
                        Ok(error_event(&call::internal("a state could not be read"))),
                        s,
                    ));
                };
                let generation = generation_of(&event);
                if let (Some(after), Some(g)) = (s.after, generation)
                    && g <= after
                {
                    continue;
                }
                let data = serde_json::to_string(&Json(provision_of(event)));
                let mut sse = Event::default().event("provision");
                if let Some(g) = generation {
                    sse = sse.id(g.to_string());
                }
                return Some((Ok(sse.data(data.unwrap_or_default())), s));
            }
            match s.body.frame().await {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => s.buffer.extend_from_slice(&data),
                    Err(frame) => {
                        s.done = true;
                        let trailers = frame.into_trailers().ok();
                        if let Some(status) = call::status_in(&HeaderMap::new(), trailers.as_ref())
                        {
                            let error = ErrorBody::from_status(&status, &HeaderMap::new());
                            return Some((Ok(error_event(&error)), s));
                        }
                        return None;
                    }
                },
                Some(Err(_)) => {
                    s.done = true;
                    let error =
                        call::internal("the stream broke off; reconnect with Last-Event-ID");
                    return Some((Ok(error_event(&error)), s));
                }
                None => return None,
            }
        }
    })
}

/// An `error` event with the error's JSON.
fn error_event(error: &ErrorBody) -> Event {
    Event::default()
        .event("error")
        .data(serde_json::to_string(error).unwrap_or_default())
}

/// The provision a `ProvisionEvent` carries.
fn provision_of(event: DynamicMessage) -> DynamicMessage {
    event
        .get_field_by_name("provision")
        .and_then(|v| v.as_message().cloned())
        .unwrap_or(event)
}

/// The provision's `generation`.
fn generation_of(event: &DynamicMessage) -> Option<u64> {
    let provision = event.get_field_by_name("provision")?;
    let provision = provision.as_message()?;
    provision.get_field_by_name("generation")?.as_u64()
}

#[cfg(test)]
mod tests {
    use prost_reflect::ReflectMessage as _;

    use super::*;

    #[test]
    fn last_event_id_is_a_generation_or_refused_naming_the_header() {
        let mut h = HeaderMap::new();
        assert_eq!(last_event_id(&h).ok(), Some(None));
        h.insert("last-event-id", "12".parse().expect("value"));
        assert_eq!(last_event_id(&h).ok(), Some(Some(12)));
        h.insert("last-event-id", "x".parse().expect("value"));
        let e = last_event_id(&h).expect_err("refused");
        assert_eq!(e.error.field.as_deref(), Some("Last-Event-ID"));
    }

    #[test]
    fn a_provision_event_reads_as_its_provision_and_generation() {
        let pool = super::super::descriptors();
        let desc = pool
            .get_message_by_name("levelrail.provisioner.v1.ProvisionEvent")
            .expect("event");
        let event = DynamicMessage::deserialize(
            desc.clone(),
            serde_json::json!({"provision": {"id": "p1", "generation": "7"}}),
        )
        .expect("event");
        assert_eq!(generation_of(&event), Some(7));
        let provision = provision_of(event);
        assert_eq!(provision.descriptor().name(), "Provision");
    }
}
