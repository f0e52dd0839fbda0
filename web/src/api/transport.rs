//! gRPC-web over the browser's `fetch`: a call is a `POST` of one framed message to
//! `/<package>.<Service>/<Method>` on this page's origin, with the bearer token; the answer
//! is read frame by frame (`logic::grpc_web`). A streaming answer is read as it arrives and
//! its fetch is aborted when the stream is dropped.
use std::marker::PhantomData;

use js_sys::{Object, Reflect, Uint8Array};
use prost::Message;
use wasm_bindgen::{JsCast as _, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Headers, ReadableStreamDefaultReader, RequestInit, Response};

use crate::logic::grpc_web::{Code, Frame, FrameReader, Status, frame, lookup};

/// The content type of binary gRPC-web.
const CONTENT_TYPE: &str = "application/grpc-web+proto";

/// Calls `path` with `request` and decodes its one answer.
pub(super) async fn unary<Req: Message, Resp: Message + Default>(
    origin: &str,
    token: &str,
    path: &str,
    request: &Req,
) -> Result<Resp, Status> {
    let (response, trailers_only) = send(origin, token, path, request, None).await?;
    if trailers_only {
        return Err(Status::new(
            Code::Internal,
            "the control plane sent no answer",
        ));
    }
    let body = JsFuture::from(response.array_buffer().map_err(js_error)?)
        .await
        .map_err(cut_off)?;
    let mut reader = FrameReader::default();
    reader.push(&Uint8Array::new(&body).to_vec());
    let mut message = None;
    while let Some(f) = reader.next_frame()? {
        match f {
            Frame::Message(bytes) if message.is_none() => message = Some(decode(&bytes)?),
            Frame::Message(_) => {}
            Frame::Trailers(t) => {
                check(Status::from_metadata(|n| lookup(&t, n)))?;
                return message.ok_or_else(|| {
                    Status::new(Code::Internal, "the control plane sent no answer")
                });
            }
        }
    }
    // No trailers: the answer was cut off, whatever came before them.
    Err(Status::new(
        Code::Unavailable,
        "the answer ended before the control plane closed it",
    ))
}

/// Calls `path` with `request` and returns its stream of answers.
pub(super) async fn server_streaming<Req: Message, Resp: Message + Default>(
    origin: &str,
    token: &str,
    path: &str,
    request: &Req,
) -> Result<Streaming<Resp>, Status> {
    // Made before the fetch: a caller that goes away while it connects aborts it too.
    let abort = Abort(AbortController::new().map_err(js_error)?);
    let (response, trailers_only) = send(origin, token, path, request, Some(&abort.0)).await?;
    let reader = match response.body() {
        Some(body) => Some(
            body.get_reader()
                .dyn_into::<ReadableStreamDefaultReader>()
                .map_err(|o| js_error(o.into()))?,
        ),
        None => None,
    };
    Ok(Streaming {
        ended: trailers_only || reader.is_none(),
        reader,
        _abort: abort,
        frames: FrameReader::default(),
        _message: PhantomData,
    })
}

/// The answers of a server-streaming call.
pub(super) struct Streaming<T> {
    reader: Option<ReadableStreamDefaultReader>,
    _abort: Abort,
    frames: FrameReader,
    ended: bool,
    _message: PhantomData<T>,
}

impl<T> std::fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streaming")
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<T: Message + Default> Streaming<T> {
    /// The next answer; `Ok(None)` once the server ended the stream with success.
    pub(super) async fn message(&mut self) -> Result<Option<T>, Status> {
        loop {
            match self.frames.next_frame()? {
                Some(Frame::Message(bytes)) => return decode(&bytes).map(Some),
                Some(Frame::Trailers(t)) => {
                    self.ended = true;
                    check(Status::from_metadata(|n| lookup(&t, n)))?;
                    return Ok(None);
                }
                None if self.ended => return Ok(None),
                None => {}
            }
            let Some(reader) = &self.reader else {
                return Ok(None);
            };
            let chunk = JsFuture::from(reader.read()).await.map_err(cut_off)?;
            let done = Reflect::get(&chunk, &"done".into())
                .map_err(js_error)?
                .as_bool()
                .unwrap_or(true);
            if done {
                self.ended = true;
                // A body that ends without its trailers was cut off.
                return Err(Status::new(
                    Code::Unavailable,
                    "the stream ended before the control plane closed it",
                ));
            }
            let value = Reflect::get(&chunk, &"value".into()).map_err(js_error)?;
            self.frames.push(&Uint8Array::new(&value).to_vec());
        }
    }
}

/// Aborts its fetch when dropped (the stream, or the call before the stream existed).
struct Abort(AbortController);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Posts the framed request. An answer that is not a gRPC one, or carries a failure in its
/// headers ("trailers only"), ends the call here; `true` with the response when its headers
/// carried the (successful) status, so no trailers follow.
async fn send<Req: Message>(
    origin: &str,
    token: &str,
    path: &str,
    request: &Req,
    abort: Option<&AbortController>,
) -> Result<(Response, bool), Status> {
    let headers = Headers::new().map_err(js_error)?;
    for (name, value) in [
        ("content-type", CONTENT_TYPE),
        ("accept", CONTENT_TYPE),
        ("x-grpc-web", "1"),
        ("authorization", &format!("Bearer {token}")),
    ] {
        headers.set(name, value).map_err(js_error)?;
    }
    let init = RequestInit::new();
    init.set_method("POST");
    init.set_headers(&headers);
    let body = Uint8Array::from(frame(&request.encode_to_vec()).as_slice());
    init.set_body(&body);
    if let Some(a) = abort {
        init.set_signal(Some(&a.signal()));
    }
    let window = web_sys::window().ok_or_else(|| Status::new(Code::Internal, "no window"))?;
    let answer = JsFuture::from(window.fetch_with_str_and_init(&format!("{origin}{path}"), &init))
        .await
        // The network or the server is gone: nothing answered.
        .map_err(|_| Status::new(Code::Unavailable, "the control plane did not answer"))?;
    let response: Response = answer.dyn_into().map_err(js_error)?;
    let header = |name: &str| response.headers().get(name).ok().flatten();
    let in_headers = Status::from_metadata(header);
    let trailers_only = in_headers.is_some();
    check(in_headers)?;
    if response.status() != 200 {
        return Err(Status::new(
            Code::from_http(response.status()),
            format!("the control plane answered HTTP {}", response.status()),
        ));
    }
    let content_type = header("content-type").unwrap_or_default();
    if !trailers_only && !content_type.starts_with("application/grpc-web") {
        return Err(Status::new(
            Code::Unknown,
            format!("the server answered {content_type}, not gRPC-web"),
        ));
    }
    Ok((response, trailers_only))
}

/// `Err` unless the status is absent or OK.
fn check(status: Option<Status>) -> Result<(), Status> {
    match status {
        Some(s) if s.code != Code::Ok => Err(s),
        _ => Ok(()),
    }
}

fn decode<T: Message + Default>(bytes: &[u8]) -> Result<T, Status> {
    T::decode(bytes).map_err(|_| {
        Status::new(
            Code::Internal,
            "the control plane sent an answer this app cannot read",
        )
    })
}

/// A body that stopped arriving: the network or the server went away.
fn cut_off(_: JsValue) -> Status {
    Status::new(Code::Unavailable, "the control plane stopped answering")
}

/// A browser API that failed (not the network: that is `Unavailable` above).
fn js_error(e: JsValue) -> Status {
    let text = e
        .dyn_ref::<Object>()
        .map(|o| String::from(o.to_string()))
        .unwrap_or_default();
    Status::new(
        Code::Unknown,
        format!("the browser refused the call: {text}"),
    )
}
