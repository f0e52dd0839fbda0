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
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tracing::{debug, warn};

/// Largest request message of the credentials API (64 KiB: a credential is far smaller).
pub const CREDENTIALS_MAX_MESSAGE: usize = 64 * 1024;
/// Largest request message of the other Levelrail APIs.
pub const DEFAULT_MAX_MESSAGE: usize = 1024 * 1024;

/// Wraps the gRPC routes: size limits inside gRPC-web translation, then gRPC-web, then the
/// static web app as fallback (outside gRPC-web, which would answer 400 to plain HTTP),
/// then CORS and the concurrency limit around everything.
pub fn assemble(
    grpc: axum::Router,
    web_dir: Option<PathBuf>,
    allowed_origins: &[String],
    max_concurrent: usize,
) -> anyhow::Result<axum::Router> {
    let mut router = grpc
        .layer(axum::middleware::from_fn(limit_message_size))
        .layer(tonic_web::GrpcWebLayer::new());
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
                    Ok(resp) => resp.into_response(),
                    Err(never) => match never {},
                }
            }
        });
    }
    Ok(router
        .layer(cors(allowed_origins)?)
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            max_concurrent,
        )))
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
        .allow_methods([Method::POST, Method::OPTIONS])
        .allow_headers([
            h("authorization"),
            h("content-type"),
            h("x-grpc-web"),
            h("x-user-agent"),
            h("grpc-timeout"),
        ])
        .expose_headers([
            h("grpc-status"),
            h("grpc-message"),
            h("grpc-status-details-bin"),
        ])
        .max_age(Duration::from_secs(600)))
}

/// Rejects Levelrail gRPC requests whose message exceeds the service's limit with
/// RESOURCE_EXHAUSTED before the handler sees them. (tonic's own decode limit answers
/// OUT_OF_RANGE; the gRPC spec asks for RESOURCE_EXHAUSTED.) Only our unary and
/// server-streaming RPCs are buffered; reflection and health stream freely.
fn is_grpc(req: &Request) -> bool {
    req.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/grpc"))
}

async fn limit_message_size(req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if !is_grpc(&req) || !path.starts_with("/levelrail.") {
        return next.run(req).await;
    }
    let limit = if path.starts_with("/levelrail.credentials.") {
        CREDENTIALS_MAX_MESSAGE
    } else {
        DEFAULT_MAX_MESSAGE
    };
    let (parts, body) = req.into_parts();
    // 5 bytes of gRPC frame header per message.
    match axum::body::to_bytes(body, limit + 5).await {
        Ok(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Err(_) => {
            debug!(%path, limit, "request message over the limit");
            tonic::Status::resource_exhausted(format!(
                "request message larger than the {limit}-byte limit of this API"
            ))
            .into_http::<Body>()
            .into_response()
        }
    }
}

/// Accepts connections on `listener` and serves `router` (over TLS when `tls` is set)
/// until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let acceptor = tls.map(TlsAcceptor::from);
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
            _ = shutdown.changed() => return,
        };
        let _ = tcp.set_nodelay(true);
        let router = router.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            match acceptor {
                Some(acceptor) => match acceptor.accept(tcp).await {
                    Ok(tls) => {
                        let ext = extensions_of(tls.get_ref().1);
                        serve_connection(TokioIo::new(tls), router, peer, ext).await
                    }
                    Err(e) => debug!(%peer, error = %e, "TLS handshake failed"),
                },
                None => {
                    serve_connection(TokioIo::new(tcp), router, peer, http::Extensions::new()).await
                }
            }
        });
    }
}

/// Serves one connection; `extensions` (for example the TLS peer's certificates) are added
/// to every request on it.
pub async fn serve_connection<I>(
    io: I,
    router: axum::Router,
    peer: SocketAddr,
    extensions: http::Extensions,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(tower::ServiceExt::map_request(
        router,
        move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            req.extensions_mut().extend(extensions.clone());
            req
        },
    ));
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
    if let Err(e) = builder.serve_connection_with_upgrades(io, service).await {
        debug!(%peer, error = %e, "connection ended with an error");
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
