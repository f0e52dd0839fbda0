//! EC2 on-demand prices from the AWS Price List Query API (`pricing:GetProducts`, served
//! in `us-east-1` for every region): the products of service `AmazonEC2` in the region
//! (`regionCode`), Linux, shared tenancy, no pre-installed software, capacity status
//! `Used` (the price of a running instance, not of a reservation's unused capacity),
//! followed through every `NextToken`. Each product comes as a JSON document; its
//! `OnDemand` term's hourly USD rate becomes a month of 730 hours.
use std::collections::BTreeMap;

use aws_sdk_pricing::operation::get_products::GetProductsOutput;
use aws_sdk_pricing::types::{Filter, FilterType};
use serde_json::Value;

use super::client::Clients;
use super::errors::{classify, invalid};
use crate::pricing::{Pages, Price, nanos_of};
use crate::{ProviderError, ProviderId};

/// The largest page `GetProducts` answers.
const PAGE: i32 = 100;

/// What names the price list in a size's "price unavailable" reason.
pub(super) const WHAT: &str = "the AWS Price List (pricing:GetProducts)";

/// The on-demand Linux price of every instance type in `region` that has one.
pub(super) async fn prices(
    c: &Clients,
    region: &str,
) -> Result<BTreeMap<String, Price>, ProviderError> {
    let mut prices = BTreeMap::new();
    let mut pages = Pages::default();
    let mut next: Option<String> = None;
    loop {
        let page = page(c, region, PAGE, next.take()).await?;
        for document in page.price_list() {
            if let Some((instance_type, price)) = on_demand(document) {
                prices.entry(instance_type).or_insert(price);
            }
        }
        match pages.next(ProviderId::Aws, page.next_token())? {
            Some(token) => next = Some(token),
            None => return Ok(prices),
        }
    }
}

/// Whether the Price List answers this credential: one product of `region`, or why not
/// (for the probe: a policy without `pricing:GetProducts` leaves the sizes unpriced).
pub(super) async fn check(c: &Clients, region: &str) -> Result<(), ProviderError> {
    page(c, region, 1, None).await.map(drop)
}

/// One page of at most `max` products of `region`'s on-demand Linux prices.
async fn page(
    c: &Clients,
    region: &str,
    max: i32,
    token: Option<String>,
) -> Result<GetProductsOutput, ProviderError> {
    c.pricing()
        .await
        .get_products()
        .service_code("AmazonEC2")
        .format_version("aws_v1")
        .set_filters(Some(filters(region)?))
        .max_results(max)
        .set_next_token(token)
        .send()
        .await
        .map_err(classify)
}

/// The `TERM_MATCH` filters of a region's on-demand Linux instance prices.
fn filters(region: &str) -> Result<Vec<Filter>, ProviderError> {
    [
        ("regionCode", region),
        ("operatingSystem", "Linux"),
        ("tenancy", "Shared"),
        ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"),
    ]
    .into_iter()
    .map(|(field, value)| {
        Filter::builder()
            .r#type(FilterType::TermMatch)
            .field(field)
            .value(value)
            .build()
            .map_err(|e| invalid("invalid_input", &format!("price filter {field}: {e}")))
    })
    .collect()
}

/// The instance type of one price-list document and the month of its `OnDemand` hourly
/// USD rate; `None` for a document without either.
fn on_demand(document: &str) -> Option<(String, Price)> {
    let doc: Value = serde_json::from_str(document).ok()?;
    let instance_type = doc
        .pointer("/product/attributes/instanceType")?
        .as_str()?
        .to_owned();
    let nanos = doc
        .pointer("/terms/OnDemand")?
        .as_object()?
        .values()
        .filter_map(|term| term.get("priceDimensions")?.as_object())
        .flat_map(|dimensions| dimensions.values())
        .find(|d| d.get("unit").and_then(Value::as_str) == Some("Hrs"))?
        .pointer("/pricePerUnit/USD")?
        .as_str()
        .and_then(nanos_of)
        .filter(|n| *n > 0)?;
    Some((instance_type, Price::hourly(nanos, "USD")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_documents_on_demand_hourly_rate_is_its_month() {
        let doc = serde_json::json!({
            "product": { "productFamily": "Compute Instance", "sku": "X",
                "attributes": { "instanceType": "t3.micro", "operatingSystem": "Linux" } },
            "terms": { "OnDemand": { "X.JRTCKXETXF": { "priceDimensions": {
                "X.JRTCKXETXF.6YS6EN2CT7": { "unit": "Hrs",
                    "pricePerUnit": { "USD": "0.0104000000" } } } } } }
        })
        .to_string();
        let (t, p) = on_demand(&doc).expect("a price");
        assert_eq!((t.as_str(), p.monthly.as_str()), ("t3.micro", "7.59"));
        assert_eq!(p.basis, "730 h × 0.0104 USD/h");
        let free = doc.replace("0.0104000000", "0.0000000000");
        assert!(on_demand(&free).is_none(), "a zero rate is no price");
        assert!(on_demand("not json").is_none());
        assert_eq!(filters("eu-west-1").expect("filters").len(), 5);
    }
}
