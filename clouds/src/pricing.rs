//! What a size costs, and how sure that figure is. Hetzner and DigitalOcean publish a
//! monthly price with each size; AWS, Azure and GCP publish hourly rates in a separate
//! price API (the AWS Price List, the Azure Retail Prices, the GCP Cloud Billing
//! Catalog), read beside the sizes: a month is 730 hours there, and GCP's price is
//! composed from its per-vCPU and per-GiB rates, so it is an estimate. A price API that
//! refuses or does not answer never hides a size: the size is listed with the reason
//! its price is unavailable, and can be provisioned.
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use super::{ErrorKind, ProviderError, ProviderId, Size};

/// The hours of a month on the hourly clouds' own calculators (365 × 24 ÷ 12).
pub const HOURS_PER_MONTH: f64 = 730.0;

/// How long a size listing waits for its prices; past it, the sizes are listed with
/// "price unavailable" (a catalog entry without prices lives only a short while).
pub const PRICE_DEADLINE: Duration = Duration::from_secs(20);

/// A size's price in a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Price {
    /// Per month, a decimal string with two decimals at least (`"30.37"`, `"4.51"`).
    pub monthly: String,
    /// ISO 4217 currency (`EUR`, `USD`).
    pub currency: String,
    /// How `monthly` was reached, for the operator: `monthly price`, or
    /// `730 h × 0.0416 USD/h`.
    pub basis: String,
    /// Composed from component rates (GCP's per-vCPU and per-GiB prices) rather than a
    /// price the cloud publishes for the size.
    pub estimate: bool,
}

impl Price {
    /// A monthly price the cloud publishes for the size (`amount` a decimal string).
    pub fn monthly(amount: String, currency: &str) -> Self {
        Self {
            monthly: amount,
            currency: currency.to_owned(),
            basis: "monthly price".to_owned(),
            estimate: false,
        }
    }

    /// The month of a published hourly rate.
    pub fn hourly(per_hour: f64, currency: &str) -> Self {
        Self {
            monthly: format!("{:.2}", per_hour * HOURS_PER_MONTH),
            currency: currency.to_owned(),
            basis: format!("{} h × {} {currency}/h", HOURS_PER_MONTH, rate(per_hour)),
            estimate: false,
        }
    }

    /// The month of an hourly rate composed from `parts` (`2 vCPU × 0.0219 + 8 GiB ×
    /// 0.0029 USD/h`): an estimate.
    pub fn composed(per_hour: f64, currency: &str, parts: &str) -> Self {
        Self {
            estimate: true,
            basis: format!("{} h × ({parts} {currency}/h)", HOURS_PER_MONTH),
            ..Self::hourly(per_hour, currency)
        }
    }
}

/// What a listed size costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pricing {
    Known(Price),
    /// The price API refused or did not answer: why. Soon asked again.
    Failed(String),
    /// The price list has no price for the size in the region: why.
    Unlisted(String),
}

impl Pricing {
    /// A size read from a catalog without prices, until [`attach`] prices it.
    pub fn unpriced() -> Self {
        Self::Unlisted("not priced yet".to_owned())
    }

    /// The price, when known.
    pub fn price(&self) -> Option<&Price> {
        match self {
            Self::Known(p) => Some(p),
            Self::Failed(_) | Self::Unlisted(_) => None,
        }
    }

    /// Why there is no price; `None` when known.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Self::Known(_) => None,
            Self::Failed(why) | Self::Unlisted(why) => Some(why),
        }
    }
}

/// Prices by size id, as one price API answered for one region.
pub type PriceList = BTreeMap<String, Price>;

/// `sizes` with their prices: `prices` is read beside `sizes` (at most
/// [`PRICE_DEADLINE`]) and turned into a list for them by `compose`; each size gets its
/// list's price, or why it has none. `what` names the price list in the reasons (`the AWS
/// Price List`). A failed price read never fails the listing.
pub async fn priced<R, S, P, C>(
    provider: ProviderId,
    sizes: S,
    prices: P,
    compose: C,
    what: &str,
    region: &str,
) -> Result<Vec<Size>, ProviderError>
where
    S: Future<Output = Result<Vec<Size>, ProviderError>>,
    P: Future<Output = Result<R, ProviderError>>,
    C: FnOnce(&[Size], R) -> PriceList,
{
    let prices = async {
        tokio::time::timeout(PRICE_DEADLINE, prices)
            .await
            .unwrap_or_else(|_| {
                Err(ProviderError::new(
                    provider,
                    ErrorKind::Unavailable,
                    "timeout",
                    &format!("no answer within {} s", PRICE_DEADLINE.as_secs()),
                ))
            })
    };
    let (sizes, prices) = tokio::join!(sizes, prices);
    let sizes = sizes?;
    let prices = prices.map(|read| compose(&sizes, read));
    Ok(attach(sizes, prices, what, region))
}

/// `sizes` with the prices of `prices`, or the reason each has none.
pub fn attach(
    sizes: Vec<Size>,
    prices: Result<PriceList, ProviderError>,
    what: &str,
    region: &str,
) -> Vec<Size> {
    sizes
        .into_iter()
        .map(|size| {
            let pricing = match &prices {
                Ok(list) => match list.get(&size.id) {
                    Some(price) => Pricing::Known(price.clone()),
                    None => Pricing::Unlisted(format!(
                        "{what} lists no on-demand Linux price for {} in {region}",
                        size.id
                    )),
                },
                Err(e) => Pricing::Failed(format!(
                    "{what} could not be read: {} ({})",
                    e.message, e.code
                )),
            };
            Size { pricing, ..size }
        })
        .collect()
}

/// An hourly rate with the decimals it needs, at most six (`0.0416`, `0.192`, `1.5`).
fn rate(per_hour: f64) -> String {
    let s = format!("{per_hour:.6}");
    let s = s.trim_end_matches('0');
    s.strip_suffix('.')
        .map_or(s.to_owned(), |i| format!("{i}.0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use levelrail_types::CpuArch;

    fn size(id: &str) -> Size {
        Size {
            id: id.into(),
            name: id.into(),
            vcpus: 2,
            memory_mb: 4096,
            disk_gb: 0,
            pricing: Pricing::Unlisted(String::new()),
            architecture: CpuArch::X86_64,
            unavailable_reason: None,
        }
    }

    #[test]
    fn hourly_rates_are_months_of_730_hours_with_their_basis() {
        let p = Price::hourly(0.0416, "USD");
        assert_eq!(
            (p.monthly.as_str(), p.basis.as_str(), p.estimate),
            ("30.37", "730 h × 0.0416 USD/h", false)
        );
        assert_eq!(Price::hourly(1.5, "USD").basis, "730 h × 1.5 USD/h");
        assert_eq!(Price::hourly(2.0, "EUR").basis, "730 h × 2.0 EUR/h");
        let c = Price::composed(0.0335, "USD", "2 vCPU × 0.0219 + 4 GiB × 0.0029");
        assert_eq!(
            (c.monthly.as_str(), c.basis.as_str(), c.estimate),
            (
                "24.46",
                "730 h × (2 vCPU × 0.0219 + 4 GiB × 0.0029 USD/h)",
                true
            )
        );
    }

    #[test]
    fn every_size_gets_its_price_or_the_reason_it_has_none() {
        let list = PriceList::from([("a".to_owned(), Price::hourly(0.01, "USD"))]);
        let sizes = attach(vec![size("a"), size("b")], Ok(list), "the price list", "r1");
        assert_eq!(
            sizes[0].pricing.price().map(|p| p.monthly.as_str()),
            Some("7.30")
        );
        assert_eq!(
            sizes[1].pricing,
            Pricing::Unlisted("the price list lists no on-demand Linux price for b in r1".into())
        );
        let refused = ProviderError::new(
            ProviderId::Aws,
            ErrorKind::Unauthorized,
            "AccessDeniedException",
            "not authorized to perform pricing:GetProducts",
        );
        let sizes = attach(vec![size("a")], Err(refused), "the AWS Price List", "r1");
        assert!(
            matches!(&sizes[0].pricing, Pricing::Failed(why) if why.contains("pricing:GetProducts")),
            "{:?}",
            sizes[0].pricing
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_price_api_that_does_not_answer_leaves_the_sizes_listed() {
        let sizes = priced(
            ProviderId::Gcp,
            async { Ok(vec![size("a")]) },
            std::future::pending::<Result<PriceList, ProviderError>>(),
            |_, list| list,
            "the price list",
            "r1",
        )
        .await
        .expect("the sizes");
        assert!(
            matches!(&sizes[0].pricing, Pricing::Failed(why) if why.contains("no answer within")),
            "{:?}",
            sizes[0].pricing
        );
    }
}
