//! A provider API that answers with a redirect: the client does not follow it (reqwest's
//! default would re-send the request, bearer token and body included, to the host the
//! answer names), and says so in a classified error that names the host only.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use levelrail_clouds::CloudProvider as _;
use levelrail_clouds::hetzner::HetznerProvider;
use levelrail_clouds::http::RetryPolicy;
use levelrail_clouds::ratelimit::RateLimiter;
use secrecy::SecretString;

use crate::hetzner_support::create_request;

/// Serves `router` on a free local port; its base URL.
async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_redirect_is_an_error_and_the_credential_never_reaches_its_target() {
    let reached = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&reached);
    let elsewhere = serve(Router::new().fallback(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        async { StatusCode::CREATED }
    }))
    .await;
    for status in [
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
        StatusCode::FOUND,
    ] {
        let location = format!("{elsewhere}/v1/servers");
        let api = serve(Router::new().fallback(move || {
            let location = location.clone();
            async move {
                let mut headers = HeaderMap::new();
                headers.insert(header::LOCATION, location.parse().expect("location"));
                (status, headers).into_response()
            }
        }))
        .await;
        let hetzner = HetznerProvider::new(
            &api,
            SecretString::from("redirecttoken".to_owned()),
            Arc::new(RateLimiter::hetzner()),
            RetryPolicy::default(),
        )
        .expect("client");

        let err = hetzner
            .create_server(&create_request("node-redirect", "npv_redirect"))
            .await
            .expect_err("a redirect fails the create");

        assert_eq!(err.code, "redirect", "{status}: {err}");
        assert_eq!(err.status, Some(status.as_u16()));
        let text = err.to_string();
        assert!(
            text.contains("127.0.0.1") && !text.contains("/v1/servers"),
            "{text}"
        );
    }
    assert_eq!(reached.load(Ordering::SeqCst), 0, "a redirect was followed");
}
