//! What a size costs, and how sure that figure is. Hetzner and DigitalOcean publish a
//! monthly price with each size; AWS, Azure and GCP publish hourly rates in a separate
//! price API (the AWS Price List, the Azure Retail Prices, the GCP Cloud Billing
//! Catalog), read apart from the sizes ([`crate::CloudProvider::list_prices`]) and cached
//! apart: a month is 730 hours there, and GCP's price is composed from its per-vCPU and
//! per-GiB rates, so it is an estimate. Provisioning never reads prices; a price API that
//! refuses or does not answer never hides a size: the size is listed with the reason its
//! price is unavailable. Amounts are computed in nano-units and rounded half up to cents.
use std::collections::{BTreeMap, HashSet};

use super::{ErrorKind, ProviderError, ProviderId, Size};

/// The hours of a month on the hourly clouds' own calculators (365 × 24 ÷ 12).
pub const HOURS_PER_MONTH: i128 = 730;

/// The most pages one price read follows (the largest real list, AWS's, is about ten).
const MAX_PAGES: usize = 200;

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

    /// The month of a published hourly rate of `nanos` billionths of `currency`.
    pub fn hourly(nanos: i128, currency: &str) -> Self {
        Self {
            monthly: cents(nanos * HOURS_PER_MONTH),
            currency: currency.to_owned(),
            basis: format!(
                "{HOURS_PER_MONTH} h × {} {currency}/h",
                decimal(nanos as f64 / 1e9)
            ),
            estimate: false,
        }
    }

    /// The month of an hourly rate composed from `parts` (`2 vCPU × 0.0219 + 8 GiB ×
    /// 0.0029`): an estimate.
    pub fn composed(nanos: i128, currency: &str, parts: &str) -> Self {
        Self {
            estimate: true,
            basis: format!("{HOURS_PER_MONTH} h × ({parts} {currency}/h)"),
            ..Self::hourly(nanos, currency)
        }
    }
}

/// What a listed size costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pricing {
    Known(Price),
    /// The cloud prices its sizes apart ([`crate::CloudProvider::list_prices`]), and they
    /// were not read yet.
    Unread,
    /// The price API refused or did not answer: why.
    Failed(String),
    /// The price list has no price for the size in the region: why.
    Unlisted(String),
}

impl Pricing {
    /// The price, when known.
    pub fn price(&self) -> Option<&Price> {
        match self {
            Self::Known(p) => Some(p),
            Self::Unread | Self::Failed(_) | Self::Unlisted(_) => None,
        }
    }

    /// Why there is no price; `None` when known.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Self::Known(_) => None,
            Self::Unread => Some("the price has not been read yet"),
            Self::Failed(why) | Self::Unlisted(why) => Some(why),
        }
    }
}

/// Prices by size id, as one price API answered for one region: a price, or why a size
/// listed there has none. A size absent from the list has no price there.
pub type PriceList = BTreeMap<String, Result<Price, String>>;

/// A price read: the list, or why it could not be read (the whole reason, for the
/// operator).
pub type PriceRead = Result<PriceList, String>;

/// The reason a price read failed with `e`: `what` (`the AWS Price List`) and the cloud's
/// answer.
pub fn read_failure(what: &str, e: &ProviderError) -> String {
    format!("{what} could not be read: {} ({})", e.message, e.code)
}

/// A price API's `read` of `what` (`the AWS Price List`) for `sizes` in `region`: each
/// size its price, or that the list names none for it; or why the read failed.
pub fn complete(
    read: Result<BTreeMap<String, Price>, ProviderError>,
    sizes: &[Size],
    what: &str,
    region: &str,
) -> PriceRead {
    let mut found = read.map_err(|e| read_failure(what, &e))?;
    Ok(sizes
        .iter()
        .map(|s| {
            let price = found.remove(&s.id).ok_or_else(|| {
                format!(
                    "{what} lists no on-demand Linux price for {} in {region}",
                    s.id
                )
            });
            (s.id.clone(), price)
        })
        .collect())
}

/// `sizes` with the prices of `read`, each its price or the reason it has none; sizes
/// that carry their own price keep it.
pub fn attach(sizes: &[Size], read: &PriceRead, region: &str) -> Vec<Size> {
    sizes
        .iter()
        .map(|size| {
            let pricing = match (&size.pricing, read) {
                (Pricing::Known(_), _) => size.pricing.clone(),
                (_, Err(why)) => Pricing::Failed(why.clone()),
                (_, Ok(list)) => match list.get(&size.id) {
                    Some(Ok(price)) => Pricing::Known(price.clone()),
                    Some(Err(why)) => Pricing::Unlisted(why.clone()),
                    None => {
                        Pricing::Unlisted(format!("no price is listed for {} in {region}", size.id))
                    }
                },
            };
            Size {
                pricing,
                ..size.clone()
            }
        })
        .collect()
}

/// The page tokens (or links) of one paged read: each next token is refused when it
/// repeats one already followed, and the read stops after [`MAX_PAGES`] pages, so an API
/// that loops cannot keep a read going.
#[derive(Debug, Default)]
pub struct Pages {
    seen: HashSet<String>,
}

impl Pages {
    /// The token of the next page: `None` when `next` is absent or empty (the last page).
    pub fn next(
        &mut self,
        provider: ProviderId,
        next: Option<&str>,
    ) -> Result<Option<String>, ProviderError> {
        let Some(token) = next.filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let looping = |message: &str| {
            ProviderError::new(provider, ErrorKind::Other, "unexpected_response", message)
        };
        if self.seen.len() >= MAX_PAGES {
            return Err(looping(&format!(
                "the price API answered more than {MAX_PAGES} pages"
            )));
        }
        if !self.seen.insert(token.to_owned()) {
            return Err(looping("the price API repeated a page token"));
        }
        Ok(Some(token.to_owned()))
    }
}

/// `amount` billionths as a decimal string `x.yy`, rounded half up to cents.
fn cents(nanos: i128) -> String {
    let c = (nanos + 5_000_000).div_euclid(10_000_000);
    format!("{}.{:02}", c / 100, c % 100)
}

/// A decimal string (`"0.0104000000"`, `"12"`) as billionths; `None` when it is not a
/// plain non-negative decimal or has more than nine decimals that are not zeros.
pub fn nanos_of(decimal: &str) -> Option<i128> {
    let (whole, frac) = decimal
        .trim()
        .split_once('.')
        .unwrap_or((decimal.trim(), ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(frac) {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > 9 {
        return None;
    }
    let whole: i128 = whole.parse().ok()?;
    let frac: i128 = format!("{frac:0<9}").parse().ok()?;
    Some(whole * 1_000_000_000 + frac)
}

/// A number with the decimals it needs, at most six (`0.0416`, `0.25`, `2`, `3.75`).
pub fn decimal(x: f64) -> String {
    let s = format!("{x:.6}");
    match s.trim_end_matches('0').trim_end_matches('.') {
        "" | "-0" => "0".to_owned(),
        t => t.to_owned(),
    }
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
            pricing: Pricing::Unread,
            architecture: CpuArch::X86_64,
            unavailable_reason: None,
        }
    }

    #[test]
    fn hourly_rates_are_months_of_730_hours_rounded_half_up_with_their_basis() {
        let p = Price::hourly(41_600_000, "USD");
        assert_eq!(
            (p.monthly.as_str(), p.basis.as_str(), p.estimate),
            ("30.37", "730 h × 0.0416 USD/h", false)
        );
        // 3.285 and 9.125 exactly: half up, not the binary float's neighbour.
        assert_eq!(Price::hourly(4_500_000, "USD").monthly, "3.29");
        assert_eq!(Price::hourly(12_500_000, "USD").monthly, "9.13");
        assert_eq!(Price::hourly(2_000_000_000, "EUR").basis, "730 h × 2 EUR/h");
        let c = Price::composed(33_505_710, "USD", "1 vCPU × 0.021812 + 4 GiB × 0.002924");
        assert_eq!(
            (c.monthly.as_str(), c.basis.as_str(), c.estimate),
            (
                "24.46",
                "730 h × (1 vCPU × 0.021812 + 4 GiB × 0.002924 USD/h)",
                true
            )
        );
    }

    #[test]
    fn decimal_strings_are_read_exactly() {
        assert_eq!(nanos_of("0.0104000000"), Some(10_400_000));
        assert_eq!(nanos_of("12"), Some(12_000_000_000));
        assert_eq!(nanos_of("0.1234567891"), None, "ten decimals");
        for bad in ["", "-1", "1e3", "0.1.2", ".5"] {
            assert_eq!(nanos_of(bad), None, "{bad}");
        }
        assert_eq!(
            (decimal(0.25), decimal(2.0), decimal(3.75)),
            ("0.25".into(), "2".into(), "3.75".into())
        );
    }

    #[test]
    fn every_size_gets_its_price_or_the_reason_it_has_none() {
        let list = PriceList::from([
            ("a".to_owned(), Ok(Price::hourly(10_000_000, "USD"))),
            ("c".to_owned(), Err("priced per instance".to_owned())),
        ]);
        let read = Ok(list);
        let sizes = attach(&[size("a"), size("b"), size("c")], &read, "r1");
        assert_eq!(
            sizes[0].pricing.price().map(|p| p.monthly.as_str()),
            Some("7.30")
        );
        assert_eq!(
            sizes[1].pricing,
            Pricing::Unlisted("no price is listed for b in r1".into())
        );
        let found = BTreeMap::from([("a".to_owned(), Price::hourly(1, "USD"))]);
        let list =
            complete(Ok(found), &[size("a"), size("b")], "the price list", "r1").expect("a list");
        assert_eq!(
            list["b"],
            Err("the price list lists no on-demand Linux price for b in r1".into())
        );
        assert_eq!(
            sizes[2].pricing,
            Pricing::Unlisted("priced per instance".into())
        );
        let refused = ProviderError::new(
            ProviderId::Aws,
            ErrorKind::Unauthorized,
            "AccessDeniedException",
            "not authorized to perform pricing:GetProducts",
        );
        let read = Err(read_failure("the AWS Price List", &refused));
        let sizes = attach(&[size("a")], &read, "r1");
        assert_eq!(
            sizes[0].pricing,
            Pricing::Failed(
                "the AWS Price List could not be read: not authorized to perform pricing:GetProducts (AccessDeniedException)".into()
            )
        );
    }

    #[test]
    fn a_repeated_page_token_or_too_many_pages_end_the_read() {
        let mut pages = Pages::default();
        assert_eq!(
            pages.next(ProviderId::Gcp, Some("a")).expect("a"),
            Some("a".into())
        );
        assert_eq!(pages.next(ProviderId::Gcp, Some("")).expect("last"), None);
        assert_eq!(pages.next(ProviderId::Gcp, None).expect("last"), None);
        let e = pages
            .next(ProviderId::Gcp, Some("a"))
            .expect_err("repeated");
        assert!(e.message.contains("repeated"), "{e}");
        let mut pages = Pages::default();
        for i in 0..MAX_PAGES {
            pages
                .next(ProviderId::Gcp, Some(&i.to_string()))
                .expect("a page");
        }
        let e = pages
            .next(ProviderId::Gcp, Some("one more"))
            .expect_err("too many");
        assert!(e.message.contains("more than"), "{e}");
    }
}
