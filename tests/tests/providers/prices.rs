//! Live prices of the hourly clouds against their fakes: the AWS Price List
//! (`pricing:GetProducts`), the Azure Retail Prices API and the GCP Cloud Billing
//! Catalog. Each request is checked against the provider's own description (the botocore
//! model, the discovery document; for Azure, the documented filter grammar the fake
//! enforces); each size carries its month of 730 hours with currency and basis, GCP's
//! composed price is an estimate; a price API that refuses or fails leaves every size
//! listed with "price unavailable" and the reason.

use levelrail_clouds::pricing::attach;
use levelrail_clouds::{CloudProvider, Pricing, Size};
use levelrail_sim::fakes::Fault;

use crate::{aws_support, azure_support, gcp_support};

/// `client`'s sizes of `region` priced as the control plane prices them: the sizes, then
/// their prices where the cloud publishes them apart.
pub(crate) async fn priced_sizes<C: CloudProvider + ?Sized>(client: &C, region: &str) -> Vec<Size> {
    let sizes = client.list_sizes(region).await.expect("sizes");
    match client.list_prices(region, &sizes).await {
        Some(read) => attach(&sizes, &read, region),
        None => sizes,
    }
}

fn size<'a>(sizes: &'a [Size], id: &str) -> &'a Size {
    sizes
        .iter()
        .find(|s| s.id == id)
        .unwrap_or_else(|| panic!("{id} listed"))
}

fn priced(s: &Size) -> (&str, &str, &str, bool) {
    let p = s
        .pricing
        .price()
        .unwrap_or_else(|| panic!("{}: {:?}", s.id, s.pricing));
    (
        p.monthly.as_str(),
        p.currency.as_str(),
        p.basis.as_str(),
        p.estimate,
    )
}

/// Every size listed, none priced, each with a reason that contains `needle`.
fn all_unavailable(sizes: &[Size], needle: &str) {
    assert!(!sizes.is_empty());
    for s in sizes {
        assert!(
            matches!(&s.pricing, Pricing::Failed(why) if why.contains(needle)),
            "{}: {:?}",
            s.id,
            s.pricing
        );
    }
}

#[tokio::test]
async fn aws_sizes_carry_the_price_lists_on_demand_linux_price_from_model_conformant_requests() {
    let fake = aws_support::start_fake(|c| c.page_limit = 5).await;
    let sizes = priced_sizes(&aws_support::client(&fake), "us-east-1").await;
    assert_eq!(
        priced(size(&sizes, "t3.micro")),
        ("7.59", "USD", "730 h × 0.0104 USD/h", false)
    );
    assert_eq!(priced(size(&sizes, "m7g.large")).0, "59.57");

    let model = levelrail_sim::specs::json("botocore-pricing-2017-10-15.service-2.json");
    let calls: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.service == "pricing")
        .collect();
    assert!(calls.len() >= 2, "every page was read ({})", calls.len());
    for call in &calls {
        assert_eq!(call.action, "GetProducts");
        assert_eq!(
            call.region, "us-east-1",
            "the Price List is read in us-east-1"
        );
        let input = model["operations"]["GetProducts"]["input"]["shape"]
            .as_str()
            .expect("input shape");
        let problems = crate::aws_contract::json_problems(&model, input, &call.body, "GetProducts");
        assert!(problems.is_empty(), "{problems:#?}\n{}", call.body);
        assert_eq!(call.status, Some(200), "{}", call.response);
    }
    let filters: Vec<(&str, &str)> = calls[0].body["Filters"]
        .as_array()
        .expect("filters")
        .iter()
        .map(|f| {
            (
                f["Field"].as_str().unwrap_or_default(),
                f["Value"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    for wanted in [
        ("regionCode", "us-east-1"),
        ("operatingSystem", "Linux"),
        ("tenancy", "Shared"),
        ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"),
    ] {
        assert!(filters.contains(&wanted), "{wanted:?} in {filters:?}");
    }
}

#[tokio::test]
async fn without_pricing_get_products_aws_sizes_show_price_unavailable_and_still_create() {
    let fake = aws_support::start_fake(|c| c.denied_actions = vec!["GetProducts".into()]).await;
    let aws = aws_support::client(&fake);
    let sizes = priced_sizes(&aws, aws_support::REGION).await;
    all_unavailable(&sizes, "(AccessDeniedException)");
    let created = aws
        .create_server(&aws_support::create_request(
            "cp-test",
            "priceless-1",
            "npv_priceless1",
        ))
        .await
        .expect("provisioning does not need prices");
    assert!(!created.id.is_empty());
}

#[tokio::test]
async fn azure_sizes_carry_their_linux_pay_as_you_go_price_read_without_credentials() {
    let fake = azure_support::start_fake(|c| c.price_page_size = 10).await;
    let sizes = priced_sizes(&azure_support::client(&fake), "eastus").await;
    assert_eq!(
        priced(size(&sizes, "Standard_B1s")),
        ("7.59", "USD", "730 h × 0.0104 USD/h", false)
    );
    // Its Linux row is not the region's primary meter: it is the price all the same.
    assert_eq!(priced(size(&sizes, "Standard_D2s_v5")).0, "70.08");

    let calls: Vec<_> = fake
        .request_log()
        .into_iter()
        .filter(|r| r.path.starts_with("/api/retail/prices"))
        .collect();
    assert!(calls.len() > 2, "every page was read ({})", calls.len());
    assert!(
        calls
            .iter()
            .all(|c| c.method == "GET" && c.status == Some(200)),
        "{calls:#?}"
    );
    assert!(
        calls[0].path.contains("api-version=2023-01-01-preview")
            && calls[0].path.contains("%27Consumption%27"),
        "{}",
        calls[0].path
    );
    assert_eq!(
        fake.price_calls_with_credentials(),
        0,
        "the public API is not sent the ARM token"
    );
}

#[tokio::test]
async fn when_the_retail_prices_api_fails_azure_sizes_show_price_unavailable() {
    let fake = azure_support::start_fake(|_| {}).await;
    fake.faults()
        .inject(Some("GET"), "/api/retail/prices", 100, Fault::Unavailable);
    let sizes = priced_sizes(&azure_support::client(&fake), azure_support::LOCATION).await;
    all_unavailable(&sizes, "(ServiceUnavailable)");
}

#[tokio::test]
async fn gcp_sizes_carry_a_composed_estimate_from_discovery_conformant_requests() {
    let fake = gcp_support::start_fake(|c| c.sku_page_size = 4).await;
    let gcp = gcp_support::client(&fake);
    let sizes = priced_sizes(&gcp, gcp_support::ZONE).await;
    // e2-medium: billed for 1 vCPU × 0.02181159 + 4 GiB × 0.00292353 USD an hour.
    assert_eq!(
        priced(size(&sizes, "e2-medium")),
        (
            "24.46",
            "USD",
            "730 h × (1 vCPU × 0.021812 + 4 GiB × 0.002924 USD/h)",
            true
        )
    );
    assert_eq!(priced(size(&sizes, "n2-standard-2")).0, "70.90");
    // No T2A rates in Belgium: that size is listed without a price, and says why.
    let belgium = priced_sizes(&gcp, "europe-west1-b").await;
    assert!(
        matches!(&size(&belgium, "t2a-standard-1").pricing, Pricing::Unlisted(why) if why.contains("no on-demand T2A rates for europe-west1")),
        "{:?}",
        size(&belgium, "t2a-standard-1").pricing
    );
    assert!(size(&belgium, "e2-small").pricing.price().is_some());

    let doc = levelrail_sim::specs::json("gcp-cloudbilling.v1.discovery.json");
    let method = crate::gcp_contract::skus_list();
    let calls: Vec<_> = fake
        .request_log()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1/services/"))
        .collect();
    assert!(calls.len() >= 5, "every page was read ({})", calls.len());
    for call in &calls {
        assert_eq!(
            call.method,
            method["httpMethod"].as_str().unwrap_or_default()
        );
        let problems =
            crate::gcp_contract::billing_problems(&method, &doc["parameters"], &call.path);
        assert!(problems.is_empty(), "{problems:#?}");
        assert_eq!(call.status, Some(200), "{}", call.response);
    }
}

#[tokio::test]
async fn when_the_billing_catalog_refuses_gcp_sizes_show_price_unavailable() {
    let fake = gcp_support::start_fake(|_| {}).await;
    fake.faults()
        .inject(Some("GET"), "/v1/services/", 100, Fault::InternalError);
    let sizes = priced_sizes(&gcp_support::client(&fake), gcp_support::ZONE).await;
    all_unavailable(&sizes, "(backendError)");
}

#[tokio::test]
async fn a_token_without_a_billing_scope_is_refused_the_catalog() {
    let fake = gcp_support::start_fake(|_| {}).await;
    let token = fake.mint_token_without_billing_scope();
    let sizes = priced_sizes(&gcp_support::client_with(&fake, &token), gcp_support::ZONE).await;
    all_unavailable(&sizes, "(ACCESS_TOKEN_SCOPE_INSUFFICIENT)");
}
