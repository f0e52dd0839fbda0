//! VM prices from the Azure Retail Prices API (`GET /api/retail/prices`, public: no
//! credential is sent to it): the `Consumption` prices of service `Virtual Machines` in
//! the location, every page (`NextPageLink`, followed only on the same origin). Each VM
//! size has several rows; its Linux pay-as-you-go price is the one whose product is a
//! `Virtual Machines …` series that is not `… Windows`, whose SKU is neither `… Spot` nor
//! `… Low Priority`, priced per `1 Hour`. That row is not always the primary meter of its
//! region, so `meterRegion='primary'` would lose it.
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use reqwest::{Method, Url};
use serde::Deserialize;

use super::errors::classify;
use crate::http::{ApiClient, RetryPolicy};
use crate::pricing::{Pages, Price};
use crate::ratelimit::{Bucket, RateLimiter};
use crate::{ErrorKind, ProviderError, ProviderId};

/// The public API's throttling is per caller address, not per credential: one bucket for
/// the process.
static LIMITER: LazyLock<Arc<RateLimiter>> = LazyLock::new(|| {
    Arc::new(RateLimiter::new(&[Bucket {
        capacity: 20.0,
        refill_per_sec: 5.0,
    }]))
});

/// The public Retail Prices API.
pub const DEFAULT_PRICES_URL: &str = "https://prices.azure.com";

/// The version whose filter values are case-sensitive, as ARM's names are.
const API_VERSION: &str = "2023-01-01-preview";

/// What names the price list in a size's "price unavailable" reason.
pub(super) const WHAT: &str = "the Azure Retail Prices API";

/// The Retail Prices API, without credentials.
#[derive(Debug)]
pub(super) struct RetailPrices {
    http: ApiClient,
    base: Url,
}

impl RetailPrices {
    pub(super) fn new(
        base_url: &str,
        policy: RetryPolicy,
        extra_root_pem: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let base = Url::parse(base_url).map_err(|_| {
            ProviderError::new(
                ProviderId::Azure,
                ErrorKind::InvalidRequest,
                "bad_base_url",
                "the Azure Retail Prices URL is not a URL",
            )
        })?;
        let http = ApiClient::anonymous(
            ProviderId::Azure,
            base_url,
            Arc::clone(&LIMITER),
            policy,
            classify,
            extra_root_pem,
        )?;
        Ok(Self { http, base })
    }

    /// The Linux pay-as-you-go price of every VM size in `location`, by ARM size name.
    /// Where a size has two such rows, the region's primary meter wins.
    pub(super) async fn prices(
        &self,
        location: &str,
    ) -> Result<BTreeMap<String, Price>, ProviderError> {
        let filter = format!(
            "serviceName eq 'Virtual Machines' and armRegionName eq '{location}' and priceType eq 'Consumption'"
        );
        // Appended to the path as given, so a proxy's prefix is kept.
        let mut url = Url::parse(&format!(
            "{}/api/retail/prices",
            self.base.as_str().trim_end_matches('/')
        ))
        .map_err(|_| unexpected("the Azure Retail Prices URL cannot take a path"))?;
        url.query_pairs_mut()
            .append_pair("api-version", API_VERSION)
            .append_pair("$filter", &filter);
        let mut next = Some(url.to_string());
        let mut found: BTreeMap<String, (Price, bool)> = BTreeMap::new();
        let mut pages = Pages::default();
        while let Some(link) = next.take() {
            let page: Page = self
                .http
                .send(Method::GET, &link, None, true)
                .await?
                .json(ProviderId::Azure)?;
            for item in page.items.iter().filter(|i| i.is_linux_on_demand()) {
                let keep = found
                    .get(&item.arm_sku_name)
                    .is_some_and(|(_, primary)| *primary || !item.is_primary_meter_region);
                if !keep {
                    let nanos = (item.retail_price * 1e9).round() as i128;
                    let price = Price::hourly(nanos, &item.currency_code);
                    found.insert(
                        item.arm_sku_name.clone(),
                        (price, item.is_primary_meter_region),
                    );
                }
            }
            let link = pages.next(ProviderId::Azure, page.next_page_link.as_deref())?;
            next = link.map(|l| self.same_origin(&l)).transpose()?;
        }
        Ok(found
            .into_iter()
            .map(|(id, (price, _))| (id, price))
            .collect())
    }

    /// `link` when it is on the API's own origin: a page link elsewhere is not followed.
    fn same_origin(&self, link: &str) -> Result<String, ProviderError> {
        match Url::parse(link) {
            Ok(url) if url.origin() == self.base.origin() => Ok(url.to_string()),
            _ => Err(unexpected(
                "a NextPageLink of the Retail Prices API points elsewhere",
            )),
        }
    }
}

fn unexpected(message: &str) -> ProviderError {
    ProviderError::new(
        ProviderId::Azure,
        ErrorKind::Other,
        "unexpected_response",
        message,
    )
}

/// One page of prices.
#[derive(Deserialize)]
struct Page {
    #[serde(rename = "Items", default)]
    items: Vec<Item>,
    #[serde(rename = "NextPageLink", default)]
    next_page_link: Option<String>,
}

/// One price row.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Item {
    #[serde(default)]
    currency_code: String,
    #[serde(default)]
    retail_price: f64,
    #[serde(default)]
    arm_sku_name: String,
    #[serde(default)]
    product_name: String,
    #[serde(default)]
    sku_name: String,
    #[serde(default)]
    unit_of_measure: String,
    #[serde(rename = "type", default)]
    price_type: String,
    #[serde(default)]
    is_primary_meter_region: bool,
}

impl Item {
    /// The Linux pay-as-you-go hourly price of a VM size.
    fn is_linux_on_demand(&self) -> bool {
        self.price_type == "Consumption"
            && self.unit_of_measure == "1 Hour"
            && !self.arm_sku_name.is_empty()
            && !self.currency_code.is_empty()
            && self.retail_price.is_finite()
            && self.retail_price > 0.0
            && self.product_name.starts_with("Virtual Machines ")
            && !self.product_name.ends_with(" Windows")
            && !self.sku_name.ends_with(" Spot")
            && !self.sku_name.ends_with(" Low Priority")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(product: &str, sku: &str, price_type: &str) -> Item {
        Item {
            currency_code: "USD".into(),
            retail_price: 0.096,
            arm_sku_name: "Standard_D2s_v3".into(),
            product_name: product.into(),
            sku_name: sku.into(),
            unit_of_measure: "1 Hour".into(),
            price_type: price_type.into(),
            is_primary_meter_region: false,
        }
    }

    #[test]
    fn only_the_linux_pay_as_you_go_row_of_a_size_is_its_price() {
        let series = "Virtual Machines DSv3 Series";
        assert!(item(series, "D2s v3", "Consumption").is_linux_on_demand());
        for (product, sku, price_type) in [
            (
                "Virtual Machines DSv3 Series Windows",
                "D2s v3",
                "Consumption",
            ),
            (series, "D2s v3 Spot", "Consumption"),
            (series, "D2s v3 Low Priority", "Consumption"),
            (series, "D2s v3", "DevTestConsumption"),
            (series, "D2s v3", "Reservation"),
            ("DSv3 Series Dedicated Host", "D2s v3", "Consumption"),
        ] {
            assert!(
                !item(product, sku, price_type).is_linux_on_demand(),
                "{product} / {sku} / {price_type}"
            );
        }
    }

    #[test]
    fn page_links_elsewhere_are_not_followed() {
        let prices =
            RetailPrices::new(DEFAULT_PRICES_URL, RetryPolicy::default(), None).expect("a client");
        assert!(
            prices
                .same_origin("https://prices.azure.com:443/api/retail/prices?$skip=1000")
                .is_ok()
        );
        assert!(
            prices
                .same_origin("https://example.com/api/retail/prices?$skip=1000")
                .is_err()
        );
    }
}
