//! The DigitalOcean catalog: available regions only, sizes offered in the chosen region with
//! their monthly USD price, paging over `links.pages.next` (and never off the API's origin).
use axum::Json;
use axum::routing::get;
use levelrail_clouds::{CloudProvider, ErrorKind, Size};
use serde_json::json;

use crate::digitalocean_support::{TOKEN, client, start_fake};

fn find<'a>(sizes: &'a [Size], slug: &str) -> Option<&'a Size> {
    sizes.iter().find(|s| s.id == slug)
}

#[tokio::test]
async fn sizes_show_the_monthly_usd_price_and_only_sizes_available_in_the_region() {
    let fake = start_fake(|_| {}).await;
    let do_ = client(&fake, TOKEN);

    let nyc3 = do_.list_sizes("nyc3").await.expect("nyc3 sizes");
    let syd1 = do_.list_sizes("syd1").await.expect("syd1 sizes");

    let c2 = find(&nyc3, "c-2").expect("c-2 is offered in nyc3");
    assert_eq!(
        (
            c2.vcpus,
            c2.memory_mb,
            c2.disk_gb,
            c2.pricing
                .price()
                .map(|p| (p.monthly.as_str(), p.currency.as_str(), p.basis.as_str()))
        ),
        (2, 4096, 25, Some(("42.00", "USD", "monthly price")))
    );
    assert_eq!(
        find(&nyc3, "s-1vcpu-1gb").and_then(|s| s.pricing.price().map(|p| p.monthly.as_str())),
        Some("6.00")
    );
    assert!(
        find(&nyc3, "s-1vcpu-512mb-10gb").is_none(),
        "not offered in nyc3"
    );
    assert!(
        find(&nyc3, "s-1vcpu-3gb").is_none(),
        "no longer available anywhere"
    );
    assert_eq!(
        find(&syd1, "s-1vcpu-512mb-10gb")
            .and_then(|s| s.pricing.price().map(|p| p.monthly.as_str())),
        Some("4.00")
    );
    assert!(find(&syd1, "c-2").is_none() && find(&syd1, "m-2vcpu-16gb").is_none());
    assert_eq!(nyc3.len(), 8);
    assert!(
        do_.list_sizes("nyc2")
            .await
            .expect("sizes of a closed region")
            .is_empty()
    );
}

#[tokio::test]
async fn only_available_regions_are_listed_across_three_pages() {
    let fake = start_fake(|c| c.page_size_cap = 5).await;
    let do_ = client(&fake, TOKEN);

    let regions = do_.list_regions().await.expect("regions");

    let slugs: Vec<&str> = regions.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(slugs.len(), 11, "{slugs:?}");
    assert!(!slugs.contains(&"nyc2"), "nyc2 is not available");
    assert_eq!(
        regions
            .iter()
            .find(|r| r.id == "fra1")
            .map(|r| r.name.as_str()),
        Some("Frankfurt 1")
    );
    let pages: Vec<String> = fake
        .request_log()
        .iter()
        .filter(|r| r.path == "/v2/regions")
        .map(|r| r.query.clone())
        .collect();
    assert_eq!(
        pages,
        ["per_page=200", "page=2&per_page=5", "page=3&per_page=5"]
    );
}

#[tokio::test]
async fn droplet_lists_keep_their_tag_filter_across_pages() {
    let fake = start_fake(|c| c.page_size_cap = 2).await;
    let do_ = client(&fake, TOKEN);
    for i in 0..5 {
        do_.create_server(&crate::digitalocean_support::create_request(&format!(
            "npv_page{i}"
        )))
        .await
        .expect("create");
    }

    let listed = do_.list_servers("cp-test").await.expect("list");

    assert_eq!(listed.len(), 5);
    let queries: Vec<String> = fake
        .request_log()
        .iter()
        .filter(|r| {
            r.path == "/v2/droplets" && r.method == "GET" && r.query.contains("levelrail-cp-")
        })
        .map(|r| r.query.clone())
        .collect();
    assert_eq!(queries.len(), 3, "{queries:?}");
    assert!(
        queries
            .iter()
            .all(|q| q.contains("tag_name=levelrail-cp-cp-test")),
        "{queries:?}"
    );
}

#[tokio::test]
async fn a_next_link_to_another_origin_is_not_followed() {
    // A stand-in API whose first page points the client at another host.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/v2/regions",
        get(|| async {
            Json(json!({
                "regions": [{ "name": "New York 3", "slug": "nyc3", "features": [], "available": true, "sizes": [] }],
                "links": { "pages": { "next": "http://collector.example.test/v2/regions?page=2" } },
                "meta": { "total": 2 }
            }))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    let do_ = levelrail_clouds::digitalocean::DigitalOceanProvider::new(
        &format!("http://{addr}/v2"),
        secrecy::SecretString::from(TOKEN.to_owned()),
        std::sync::Arc::new(levelrail_clouds::ratelimit::RateLimiter::unlimited()),
        crate::digitalocean_support::fast_policy(),
    )
    .unwrap();

    let err = do_.list_regions().await.unwrap_err();

    assert_eq!(
        (err.kind, err.code.as_str()),
        (ErrorKind::Other, "unexpected_response")
    );
    assert!(err.message.contains("outside"), "{}", err.message);
}
