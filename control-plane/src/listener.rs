//! The public listener: gRPC and gRPC-web on one port with the web app as fallback, CORS
//! with an explicit origin list, per-service message-size limits answered with
//! RESOURCE_EXHAUSTED, a global concurrency limit, explicit HTTP/2 limits, and TLS unless
//! bound to loopback.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use levelrail_credentials::grpc::auth::{BearerAuth, Caller};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tracing::{debug, warn};

use crate::audit::{self, AuditLog};
use crate::per_ip::{Budget, over_budget};

/// Largest request message of the credentials API (64 KiB: a credential is far smaller).
pub const CREDENTIALS_MAX_MESSAGE: usize = 64 * 1024;
/// Largest request message of the other Levelrail APIs.
pub const DEFAULT_MAX_MESSAGE: usize = 1024 * 1024;

/// How long a request's message may take to arrive once its headers have.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// Wraps the gRPC routes: the caller's API token (`auth`) checked from the headers, then
/// size limits and the body deadline, inside the concurrency limit (health checks aside;
/// past it, calls are refused at once, not queued), inside gRPC-web translation; then the
/// static web app as fallback (outside gRPC-web, which would answer 400 to plain HTTP),
/// then CORS around everything, refusals included.
///
/// `rest_services` are the gRPC services whose REST routes (see [`crate::rest`]) the
/// listener serves: each REST call goes through the same guarded routes.
pub fn assemble(
    grpc: axum::Router,
    web_dir: Option<PathBuf>,
    allowed_origins: &[String],
    max_concurrent: usize,
    guard: CallGuard,
    rest_services: &[&str],
) -> anyhow::Result<axum::Router> {
    let limit = Limit {
        permits: Arc::new(tokio::sync::Semaphore::new(max_concurrent)),
        max_concurrent,
    };
    let guard = Arc::new(guard);
    let guarded = grpc
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&guard),
            guard_request,
        ))
        .layer(axum::middleware::from_fn_with_state(limit.clone(), shed));
    let rest = crate::rest::router(
        crate::rest::Rest {
            grpc: guarded.clone(),
            guard,
            limit,
        },
        rest_services,
    );
    let mut router = guarded.layer(tonic_web::GrpcWebLayer::new()).merge(rest);
    if let Some(dir) = web_dir {
        let index = dir.join("index.html");
        let files = tower_http::services::ServeDir::new(dir)
            .fallback(tower_http::services::ServeFile::new(index));
        // Unknown gRPC methods answer UNIMPLEMENTED, not the app's index.html.
        router = router.fallback(move |req: Request| {
            let files = files.clone();
            async move {
                if is_grpc(&req) {
                    return tonic::Status::unimplemented("no such service or method")
                        .into_http::<Body>()
                        .into_response();
                }
                match tower::ServiceExt::oneshot(files, req).await {
                    Ok(resp) => with_page_policy(resp.into_response()),
                    Err(never) => match never {},
                }
            }
        });
    }
    Ok(router.layer(cors(allowed_origins)?))
}

/// The concurrency limit of a listener's calls.
#[derive(Debug, Clone)]
pub(crate) struct Limit {
    permits: Arc<tokio::sync::Semaphore>,
    max_concurrent: usize,
}

impl Limit {
    /// One of the limit's permits; when none is free, the refusal: RESOURCE_EXHAUSTED with
    /// `Retry-After`.
    pub(crate) fn admit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, Box<Response>> {
        Arc::clone(&self.permits).try_acquire_owned().map_err(|_| {
            let mut resp = tonic::Status::resource_exhausted(format!(
                "the control plane is serving its limit of {} calls; retry",
                self.max_concurrent
            ))
            .into_http::<Body>()
            .into_response();
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            Box::new(resp)
        })
    }
}

/// Set on a call the REST layer makes in-process once it has taken the call's permit and
/// its token's budget share (see [`crate::rest`]): the limit and the guard do not count it
/// twice. Only in-process code can set an extension.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RestAdmitted;

/// Holds one of the limit's permits until the answer's headers are out; refuses a call at
/// once, with RESOURCE_EXHAUSTED and `Retry-After`, when none is free. Health checks are
/// answered whatever the load (a probe must not restart a busy replica).
async fn shed(
    axum::extract::State(limit): axum::extract::State<Limit>,
    req: Request,
    next: Next,
) -> Response {
    if req.uri().path().starts_with("/grpc.health.v1.")
        || req.extensions().get::<RestAdmitted>().is_some()
    {
        return next.run(req).await;
    }
    let _permit = match limit.admit() {
        Ok(permit) => permit,
        Err(refused) => return *refused,
    };
    next.run(req).await
}

/// What the web app's pages may do: run this origin's scripts and WebAssembly, load its own
/// styles and images, talk to this origin only, and never be framed, so injected markup
/// runs nothing and no other site can overlay the app (clickjacking).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self' \
     'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
     font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The web app's files, with [`CONTENT_SECURITY_POLICY`] and the headers older browsers
/// read instead.
fn with_page_policy(mut resp: Response) -> Response {
    let headers = resp.headers_mut();
    let mut set = |name: &'static str, value: &'static str| {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    };
    set("content-security-policy", CONTENT_SECURITY_POLICY);
    set("x-frame-options", "DENY");
    set("x-content-type-options", "nosniff");
    set("referrer-policy", "no-referrer");
    resp
}

fn cors(allowed_origins: &[String]) -> anyhow::Result<CorsLayer> {
    let origins = allowed_origins
        .iter()
        .map(|o| HeaderValue::from_str(o.trim_end_matches('/')))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| anyhow::anyhow!("--allowed-origin holds an invalid origin"))?;
    let h = |s: &'static str| HeaderName::from_static(s);
    Ok(CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        // gRPC-web posts; the REST routes also get, put and delete.
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::OPTIONS,
        ])
        .allow_headers([
            h("authorization"),
            h("content-type"),
            h("x-grpc-web"),
            h("x-user-agent"),
            h("grpc-timeout"),
            h("last-event-id"),
        ])
        .expose_headers([
            h("grpc-status"),
            h("grpc-message"),
            h("grpc-status-details-bin"),
            h("retry-after"),
        ])
        .max_age(Duration::from_secs(600)))
}

/// Whether a request is gRPC (or gRPC-web) by its content type.
pub(crate) fn is_grpc(req: &Request) -> bool {
    req.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"))
}

/// What the guard of a listener's calls checks and records.
#[derive(Debug, Default)]
pub struct CallGuard {
    /// The API tokens (`None`: a listener that takes none).
    pub auth: Option<BearerAuth>,
    /// Where state-changing calls are recorded (`None`: in the log only).
    pub audit: Option<Arc<AuditLog>>,
    /// Each API token's request budget (`None`: unlimited).
    pub per_token: Option<Arc<Budget<String>>>,
}

/// The largest request message of the RPC at `path` (`/package.Service/Method`).
pub(crate) fn message_limit(path: &str) -> usize {
    if path.starts_with("/levelrail.credentials.") {
        CREDENTIALS_MAX_MESSAGE
    } else {
        DEFAULT_MAX_MESSAGE
    }
}

/// The peer address the listener attached to a request.
pub(crate) fn peer_of(extensions: &http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0)
}

/// The caller of the call to `path`, checked from its headers alone: its API token, the
/// token's request budget (when `count` is set: a call is counted once), the token's scope
/// (a refusal for scope is audited). `None` on a listener that takes no tokens. A refusal
/// is the gRPC answer to send (with `Retry-After` when over budget).
pub(crate) fn check_caller(
    guard: &CallGuard,
    headers: &http::HeaderMap,
    path: &str,
    peer_addr: Option<SocketAddr>,
    count: bool,
) -> Result<Option<Caller>, Box<Response>> {
    let Some(auth) = guard.auth.as_ref() else {
        return Ok(None);
    };
    let peer = || peer_addr.map(|a| a.to_string()).unwrap_or_default();
    let header = headers.get(http::header::AUTHORIZATION);
    let caller = match auth.authenticate(header.map(HeaderValue::as_bytes)) {
        Ok(caller) => caller,
        Err(status) => {
            if status.code() == tonic::Code::Unauthenticated {
                let peer = peer();
                tracing::info!(%peer, %path, reason = status.message(), "call refused: not authenticated");
            }
            return Err(Box::new(status.into_http::<Body>().into_response()));
        }
    };
    // Refused calls count against the budget too: they cannot flood the log.
    if count
        && let Some(budget) = &guard.per_token
        && let Err(wait) = budget.take(caller.token_id.clone(), tokio::time::Instant::now())
    {
        tracing::info!(token_id = %caller.token_id, %path, "call refused: the token is over its request budget");
        return Err(Box::new(over_budget(true, wait, "this API token")));
    }
    if let Err(status) = BearerAuth::authorize(&caller, path) {
        tracing::info!(token_id = %caller.token_id, %path, "call refused: outside the token's scope");
        if let Some(log) = &guard.audit {
            let mut event = audit::event(&caller.token_id, path, String::new(), peer());
            event.outcome = audit::outcome(status.code());
            log.record(event);
        }
        return Err(Box::new(status.into_http::<Body>().into_response()));
    }
    Ok(Some(caller))
}

/// Levelrail gRPC requests (and reflection): the API token and its scope are checked from
/// the headers, so an unauthenticated or unauthorised caller's body is never read; then
/// the message is read within [`BODY_DEADLINE`] and the service's size limit, answering
/// RESOURCE_EXHAUSTED past it (tonic's own decode limit answers OUT_OF_RANGE; the gRPC
/// spec asks for RESOURCE_EXHAUSTED) before the handler sees it. Only our unary and
/// server-streaming RPCs are buffered; reflection and health stream freely. A call that
/// changes state, or is refused for its token's scope, is recorded in the audit log with
/// how it ended.
async fn guard_request(
    axum::extract::State(guard): axum::extract::State<Arc<CallGuard>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_owned();
    let levelrail = path.starts_with("/levelrail.");
    if !levelrail && !path.starts_with("/grpc.reflection.") {
        return next.run(req).await;
    }
    let mut req = req;
    let peer_addr = peer_of(req.extensions());
    let peer = || peer_addr.map(|a| a.to_string()).unwrap_or_default();
    let mut audited = None;
    // A stream's token, which the stream may not outlive.
    let mut watched = None;
    let admitted = req.extensions().get::<RestAdmitted>().is_some();
    match check_caller(&guard, req.headers(), &path, peer_addr, !admitted) {
        Err(refused) => return *refused,
        Ok(None) => {}
        Ok(Some(caller)) => {
            if levelrail && audit::changes_state(&path) {
                audited = guard.audit.clone().map(|log| {
                    let open = log.begin();
                    (
                        log,
                        audit::event(&caller.token_id, &path, String::new(), peer()),
                        open,
                    )
                });
            }
            if levelrail_types::method_of(&path).starts_with("Watch") {
                watched = Some(caller.token_id.clone());
            }
            // The service's interceptor takes the caller from here instead of checking
            // the token again.
            req.extensions_mut().insert(caller);
        }
    }
    if !levelrail {
        return next.run(req).await;
    }
    let limit = message_limit(&path);
    let (parts, body) = req.into_parts();
    // 5 bytes of gRPC frame header per message.
    let read = tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, limit + 5)).await;
    let answer = match read {
        Ok(Ok(bytes)) => {
            if let Some((_, event, _)) = audited.as_mut() {
                // An uncompressed message: its bytes after the frame header.
                if bytes.first() == Some(&0) {
                    event.target = audit::target(&path, bytes.get(5..).unwrap_or_default());
                }
            }
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(_) => {
            debug!(%path, "request message not sent in time");
            tonic::Status::deadline_exceeded(format!(
                "the request message did not arrive within {} s",
                BODY_DEADLINE.as_secs()
            ))
            .into_http::<Body>()
            .into_response()
        }
        Ok(Err(_)) => {
            debug!(%path, limit, "request message over the limit");
            tonic::Status::resource_exhausted(format!(
                "request message larger than the {limit}-byte limit of this API"
            ))
            .into_http::<Body>()
            .into_response()
        }
    };
    if let (Some(token_id), Some(auth)) = (watched, guard.auth.as_ref()) {
        return crate::token_bound::bound(answer, auth.verifier().clone(), token_id);
    }
    match audited {
        Some((log, event, open)) => audit::when_answered(answer, log, event, open),
        None => answer,
    }
}

/// What one listener allows its connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// From accept to the first request's headers, TLS handshake included: a connection
    /// that stays silent longer is closed, so idle sockets cannot pile up until the
    /// process runs out of file descriptors.
    pub first_request: Duration,
    /// Open connections from one source address; more are closed at once.
    pub per_ip: usize,
    /// Open connections of the listener; more are closed at once.
    pub total: usize,
    /// A connection with no call in flight for this long is closed gracefully (HTTP/2
    /// GOAWAY); clients reconnect when they next call.
    pub idle: Duration,
}

impl Default for ConnectionLimits {
    /// An operator-facing listener's.
    fn default() -> Self {
        Self {
            first_request: Duration::from_secs(10),
            per_ip: 256,
            total: 8192,
            idle: Duration::from_secs(300),
        }
    }
}

impl ConnectionLimits {
    /// The agent listener's: every node of a fleet behind one NAT address keeps its
    /// heartbeat connection from that address.
    pub fn agent() -> Self {
        Self {
            per_ip: 8192,
            total: 16384,
            ..Self::default()
        }
    }
}

/// What connections and request budgets are counted by: an IPv4 address, or an IPv6
/// address's /64 (one host usually holds a whole /64, so its addresses count as one).
pub fn source_key(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => std::net::IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                std::net::IpAddr::V6(prefix.into())
            }
        },
        v4 => v4,
    }
}

/// The open connections of one listener, by source address.
#[derive(Debug, Default)]
struct OpenConnections {
    counts: std::sync::Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    by_ip: std::collections::HashMap<std::net::IpAddr, usize>,
}

/// One admitted connection; counted until dropped.
struct Admitted {
    open: Arc<OpenConnections>,
    ip: std::net::IpAddr,
}

impl OpenConnections {
    /// Counts a connection from `ip`, unless that would pass `limits`.
    fn admit(
        self: &Arc<Self>,
        ip: std::net::IpAddr,
        limits: &ConnectionLimits,
    ) -> Option<Admitted> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let from_ip = counts.by_ip.get(&ip).copied().unwrap_or(0);
        if counts.total >= limits.total || from_ip >= limits.per_ip {
            return None;
        }
        counts.total += 1;
        counts.by_ip.insert(ip, from_ip + 1);
        Some(Admitted {
            open: Arc::clone(self),
            ip,
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = self.open.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.total -= 1;
        if let Some(n) = counts.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.by_ip.remove(&self.ip);
            }
        }
    }
}

/// Accepts connections on `listener` and serves `router` (over TLS when `tls` is set)
/// until `shutdown` turns true, within the default [`ConnectionLimits`].
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: watch::Receiver<bool>,
) {
    serve_within(listener, router, tls, shutdown, ConnectionLimits::default()).await;
}

/// [`serve`] within `limits`.
pub async fn serve_within(
    listener: TcpListener,
    router: axum::Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: watch::Receiver<bool>,
    limits: ConnectionLimits,
) {
    let acceptor = tls.map(TlsAcceptor::from);
    let open = Arc::new(OpenConnections::default());
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            // `wait_for` sees a stop given before this listener started, as `changed` won't.
            () = async { drop(shutdown.wait_for(|stop| *stop).await) } => return,
        };
        let Some(admitted) = open.admit(source_key(peer.ip()), &limits) else {
            debug!(%peer, "connection refused: too many open from this address or in all");
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let router = router.clone();
        let acceptor = acceptor.clone();
        let deadline = tokio::time::Instant::now() + limits.first_request;
        tokio::spawn(async move {
            let _admitted = admitted;
            match acceptor {
                Some(acceptor) => {
                    match tokio::time::timeout_at(deadline, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let ext = extensions_of(tls.get_ref().1);
                            let io = TokioIo::new(tls);
                            serve_connection(io, router, peer, ext, deadline, limits.idle).await
                        }
                        Ok(Err(e)) => debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => debug!(%peer, "TLS handshake timed out"),
                    }
                }
                None => {
                    let ext = http::Extensions::new();
                    let io = TokioIo::new(tcp);
                    serve_connection(io, router, peer, ext, deadline, limits.idle).await
                }
            }
        });
    }
}

/// Serves one connection; `extensions` (for example the TLS peer's certificates) are added
/// to every request on it. A connection whose first request has not arrived by
/// `first_request_by` is closed; one with no call in flight for `idle` is closed
/// gracefully.
pub async fn serve_connection<I>(
    io: I,
    router: axum::Router,
    peer: SocketAddr,
    extensions: http::Extensions,
    first_request_by: tokio::time::Instant,
    idle: Duration,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::default());
    let tracked = Tracking {
        inner: router,
        activity: Arc::clone(&activity),
        peer,
        extensions,
    };
    let service = TowerToHyperService::new(tracked);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .header_read_timeout(Duration::from_secs(10))
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive(true);
    builder
        .http2()
        .max_concurrent_streams(100)
        .max_header_list_size(16 * 1024)
        .max_pending_accept_reset_streams(Some(50))
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(Duration::from_secs(10))
        .timer(hyper_util::rt::TokioTimer::new());
    let connection = builder.serve_connection_with_upgrades(io, service);
    tokio::pin!(connection);
    loop {
        let check = match (activity.asked(), activity.idle_since()) {
            (false, _) => Some(first_request_by),
            (true, since) => since.map(|since| since + idle),
        };
        let wait = async {
            match check {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ended = connection.as_mut() => {
                if let Err(e) = ended {
                    debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            () = wait => {}
            // Busy or idle now: look again.
            () = activity.changed.notified() => continue,
        }
        match activity.idle_since() {
            None if !activity.asked() => {
                debug!(%peer, "connection closed: no request in time");
                return;
            }
            Some(since) if since + idle <= tokio::time::Instant::now() => {
                debug!(%peer, "closing an idle connection");
                connection.as_mut().graceful_shutdown();
                // What is in flight may finish; a peer that never reads is cut off.
                let _ = tokio::time::timeout(Duration::from_secs(30), connection.as_mut()).await;
                return;
            }
            _ => {}
        }
    }
}

/// The calls of one connection: whether it has asked for anything, how many are in flight
/// (until their answer's body is done), and since when none is.
#[derive(Debug, Default)]
struct Activity {
    state: std::sync::Mutex<ActivityState>,
    /// Told when the connection becomes busy or idle.
    changed: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct ActivityState {
    in_flight: usize,
    idle_since: Option<tokio::time::Instant>,
}

impl Activity {
    fn lock(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether any call has begun: one is in flight, or one has ended.
    fn asked(&self) -> bool {
        let state = self.lock();
        state.in_flight > 0 || state.idle_since.is_some()
    }

    /// Since when no call is in flight (`None` while one is, or before the first).
    fn idle_since(&self) -> Option<tokio::time::Instant> {
        self.lock().idle_since
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        let mut state = self.lock();
        let was_idle = state.in_flight == 0;
        state.in_flight += 1;
        state.idle_since = None;
        // Only a change from idle to busy is news to the connection's watcher.
        if was_idle {
            self.changed.notify_one();
        }
        InFlight(Arc::clone(self))
    }
}

/// One call in flight; done when dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.in_flight -= 1;
        if state.in_flight == 0 {
            state.idle_since = Some(tokio::time::Instant::now());
            self.0.changed.notify_one();
        }
    }
}

/// The router of one connection: every request gets the peer's address and the
/// connection's extensions, and counts as in flight until its answer's body is done.
#[derive(Clone)]
struct Tracking {
    inner: axum::Router,
    activity: Arc<Activity>,
    peer: SocketAddr,
    extensions: http::Extensions,
}

impl tower::Service<http::Request<hyper::body::Incoming>> for Tracking {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower::Service::<http::Request<hyper::body::Incoming>>::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, mut req: http::Request<hyper::body::Incoming>) -> Self::Future {
        let in_flight = self.activity.begin();
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        req.extensions_mut().extend(self.extensions.clone());
        let answer = tower::Service::call(&mut self.inner, req);
        Box::pin(async move {
            let resp = answer.await?;
            Ok(resp.map(|body| {
                Body::new(Counted {
                    inner: body,
                    _in_flight: in_flight,
                })
            }))
        })
    }
}

/// An answer's body, holding its call in flight until it is done or dropped.
struct Counted {
    inner: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Counted {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Per-connection request extensions from a TLS session: the verified client certificate
/// chain, when the client presented one.
fn extensions_of(session: &rustls::ServerConnection) -> http::Extensions {
    let mut ext = http::Extensions::new();
    if let Some(certs) = session.peer_certificates() {
        ext.insert(levelrail_provisioner::grpc::PeerCertificates(
            certs.iter().map(|c| c.clone().into_owned()).collect(),
        ));
    }
    ext
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_host_counts_as_its_64_and_a_mapped_ipv4_as_itself() {
        let key = |s: &str| source_key(s.parse().expect("ip")).to_string();
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2:ffff::9"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:3::1"), "2001:db8:1:3::");
        assert_eq!(key("::ffff:192.0.2.7"), "192.0.2.7");
        assert_eq!(key("192.0.2.7"), "192.0.2.7");
    }

    #[tokio::test]
    async fn the_web_app_is_served_with_a_strict_policy_and_never_framed() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("index.html"), "<!doctype html>").expect("index");
        std::fs::write(dir.path().join("boot.js"), "export {}").expect("script");
        let router = assemble(
            axum::Router::new(),
            Some(dir.path().to_owned()),
            &[],
            8,
            CallGuard::default(),
            &[],
        )
        .expect("router");
        for path in ["/", "/boot.js", "/nodes/some-node"] {
            let req = Request::get(path).body(Body::empty()).expect("request");
            let resp = tower::ServiceExt::oneshot(router.clone(), req)
                .await
                .expect("answer");
            assert_eq!(resp.status(), http::StatusCode::OK, "{path}");
            let h = resp.headers();
            let csp = h["content-security-policy"].to_str().expect("text");
            assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
            assert!(
                csp.contains("script-src 'self' 'wasm-unsafe-eval';"),
                "{path}: {csp}"
            );
            assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
            assert_eq!(h["x-frame-options"], "DENY", "{path}");
            assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        }
    }
}
