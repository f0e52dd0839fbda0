//! The Azure Retail Prices API (`GET /api/retail/prices`, public: no credential needed),
//! as Microsoft documents and answers it: an envelope with PascalCase keys (`Items`,
//! `NextPageLink`, `Count`) around camelCase price rows; up to 1,000 rows a page, the next
//! page's link carrying `$skip`; `api-version` absent, `2021-10-01-preview` or
//! `2023-01-01-preview` (from which filter values are case-sensitive), another version
//! refused; `meterRegion='primary'`; an OData `$filter` of `eq` / `ne` comparisons on the documented fields and
//! `contains(field, 'text')`, joined by `and` / `or` with parentheses, any other form
//! (`not(…)`, `in (…)`, lambdas, unknown fields or price types) refused with 400
//! `Invalid OData parameters supplied`. Every VM size of the catalog has the rows a real
//! one has in each location it is sold in: Linux and Windows pay-as-you-go, Spot, Low
//! Priority, Dev/Test and a one-year reservation; the Linux pay-as-you-go row is not the
//! region's primary meter for the D-series sizes, as in Azure.
use serde_json::{Value, json};

use super::Shared;
use super::catalog::{LOCATIONS, SIZES, SizeSpec};
use crate::fakes::edge::{Call, Reply, lock};

/// The versions the API answers (none is the oldest behaviour).
const VERSIONS: [&str; 2] = ["2021-10-01-preview", "2023-01-01-preview"];

/// The fields a filter may name (matched without regard to case), and the row key each
/// reads.
const FIELDS: [(&str, &str); 13] = [
    ("armRegionName", "armRegionName"),
    ("location", "location"),
    ("meterId", "meterId"),
    ("meterName", "meterName"),
    ("productId", "productId"),
    ("skuId", "skuId"),
    ("productName", "productName"),
    ("skuName", "skuName"),
    ("serviceName", "serviceName"),
    ("serviceId", "serviceId"),
    ("serviceFamily", "serviceFamily"),
    ("priceType", "type"),
    ("armSkuName", "armSkuName"),
];

/// The price types a filter may ask for (`SavingsPlan` is accepted and matches nothing).
const PRICE_TYPES: [&str; 4] = [
    "Consumption",
    "Reservation",
    "DevTestConsumption",
    "SavingsPlan",
];

/// Currencies the fake converts to, with their rate to USD.
const CURRENCIES: [(&str, f64); 2] = [("USD", 1.0), ("EUR", 0.92)];

/// `GET /api/retail/prices`.
pub(crate) fn retail_prices(shared: &Shared, call: &Call) -> Reply {
    if call.method != "GET" {
        return bad_request("The requested resource does not support http method.");
    }
    if call.authorization.is_some() {
        lock(&shared.inventory).price_calls_with_credentials += 1;
    }
    let version = call.param("api-version");
    if version.is_some_and(|v| !VERSIONS.contains(&v)) {
        return bad_request("Unsupported API version");
    }
    let case_sensitive = version == Some("2023-01-01-preview");
    let currency = call
        .param("currencyCode")
        .map(|c| c.trim_matches('\'').to_owned())
        .unwrap_or_else(|| "USD".to_owned());
    let Some(&(_, rate)) = CURRENCIES.iter().find(|(c, _)| *c == currency) else {
        return bad_request("Invalid currency code");
    };
    let filter = match call.param("$filter").map(Filter::parse).transpose() {
        Ok(f) => f,
        Err(()) => return bad_request("Invalid OData parameters supplied"),
    };
    // `meterRegion='primary'`: only the rows of each region's primary meter.
    let primary_only = match call.param("meterRegion").map(|m| m.trim_matches('\'')) {
        None => false,
        Some("primary") => true,
        Some(_) => return bad_request("Invalid OData parameters supplied"),
    };
    let rows: Vec<Value> = rows(&currency, rate)
        .into_iter()
        .filter(|row| !primary_only || row["isPrimaryMeterRegion"] == true)
        .filter(|row| {
            filter
                .as_ref()
                .is_none_or(|f| f.matches(row, case_sensitive))
        })
        .collect();
    let skip: usize = call
        .param("$skip")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let page_size = shared.cfg.price_page_size.max(1);
    let page: Vec<Value> = rows.iter().skip(skip).take(page_size).cloned().collect();
    // The link repeats the query, `$skip` advanced (Azure also names the port).
    let next = (skip + page.len() < rows.len()).then(|| {
        let base = shared.base.get().cloned().unwrap_or_default();
        let skip = (skip + page.len()).to_string();
        let query: Vec<String> = call
            .query
            .iter()
            .filter(|(k, _)| k != "$skip")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("$skip", skip.as_str())])
            .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
            .collect();
        format!("{base}/api/retail/prices?{}", query.join("&"))
    });
    Reply::json(
        200,
        json!({
            "BillingCurrency": currency, "CustomerEntityId": "Default", "CustomerEntityType": "Retail",
            "Count": page.len(), "Items": page, "NextPageLink": next,
        }),
    )
}

/// `s` percent-encoded for a query (unreserved characters and `$` kept).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'$' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn bad_request(message: &str) -> Reply {
    Reply::json(
        400,
        json!({ "Error": { "Code": "BadRequest", "Message": message } }),
    )
}

/// The Linux pay-as-you-go USD hourly price of a size in US East; other locations cost
/// a little more, as in Azure.
fn base_price(s: &SizeSpec) -> f64 {
    match s.name {
        "Standard_B1s" => 0.0104,
        "Standard_B2s" => 0.0416,
        "Standard_D2s_v5" => 0.096,
        "Standard_D4s_v5" => 0.192,
        "Standard_D2ps_v5" => 0.077,
        "Standard_A1_v2" => 0.043,
        "Standard_E2s_v5" => 0.126,
        "Standard_F2s_v2" => 0.0846,
        _ => 0.05 * f64::from(s.cores),
    }
}

fn location_factor(location: &str) -> f64 {
    match location {
        "westeurope" => 1.1,
        "northeurope" => 1.05,
        _ => 1.0,
    }
}

/// Every price row of the catalog, in a stable order.
fn rows(currency: &str, rate: f64) -> Vec<Value> {
    let mut rows = Vec::new();
    for (n, s) in SIZES.iter().enumerate() {
        // `Standard_D2s_v5` → series `DSv5`, meter `D2s v5`.
        let short = s.name.trim_start_matches("Standard_");
        let meter = short.replace('_', " ");
        let series = series_of(s.family);
        for (location, display, _) in LOCATIONS.iter().filter(|(l, _, _)| s.sold_in(l)) {
            let linux = base_price(s) * location_factor(location);
            let price = |p: f64| (p * rate * 1e6).round() / 1e6;
            let product = format!("Virtual Machines {series} Series");
            let windows = format!("{product} Windows");
            let primary = !s.name.starts_with("Standard_D");
            let row = |product: &str,
                       sku: String,
                       price_type: &str,
                       p: f64,
                       is_primary: bool,
                       k: usize| {
                json!({
                    "currencyCode": currency, "tierMinimumUnits": 0.0,
                    "retailPrice": price(p), "unitPrice": price(p),
                    "armRegionName": location, "location": display,
                    "effectiveStartDate": "2024-05-01T00:00:00Z",
                    "meterId": format!("{:08x}-0000-4000-8000-{:012x}", n, k), "meterName": sku,
                    "productId": format!("DZH318Z0{:04}", n), "skuId": format!("DZH318Z0{:04}/{:04}", n, k),
                    "productName": product, "skuName": sku,
                    "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute",
                    "unitOfMeasure": "1 Hour", "type": price_type,
                    "isPrimaryMeterRegion": is_primary, "armSkuName": s.name,
                })
            };
            rows.push(row(
                &product,
                meter.clone(),
                "Consumption",
                linux,
                primary,
                1,
            ));
            rows.push(row(
                &windows,
                meter.clone(),
                "Consumption",
                linux * 1.9,
                true,
                2,
            ));
            rows.push(row(
                &product,
                format!("{meter} Spot"),
                "Consumption",
                linux * 0.2,
                true,
                3,
            ));
            rows.push(row(
                &windows,
                format!("{meter} Spot"),
                "Consumption",
                linux * 0.38,
                true,
                4,
            ));
            rows.push(row(
                &product,
                format!("{meter} Low Priority"),
                "Consumption",
                linux * 0.2,
                true,
                5,
            ));
            rows.push(row(
                &windows,
                meter.clone(),
                "DevTestConsumption",
                linux,
                true,
                6,
            ));
            let mut reserved = row(
                &product,
                meter.clone(),
                "Reservation",
                linux * 730.0 * 12.0 * 0.6,
                true,
                7,
            );
            reserved["reservationTerm"] = json!("1 Year");
            rows.push(reserved);
        }
    }
    // A dedicated host of the service is no VM size.
    rows.push(json!({
        "currencyCode": currency, "tierMinimumUnits": 0.0, "retailPrice": 4.5, "unitPrice": 4.5,
        "armRegionName": "eastus", "location": "US East", "effectiveStartDate": "2024-05-01T00:00:00Z",
        "meterId": "0000ffff-0000-4000-8000-000000000001", "meterName": "DSv5 Type1",
        "productId": "DZH318Z0ZZZZ", "skuId": "DZH318Z0ZZZZ/0001",
        "productName": "DSv5 Series Dedicated Host", "skuName": "DSv5 Type1",
        "serviceName": "Virtual Machines", "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour", "type": "Consumption", "isPrimaryMeterRegion": true, "armSkuName": "DSv5_Type1",
    }));
    rows
}

/// `standardDSv5Family` → `DSv5`, `standardBSFamily` → `BS`.
fn series_of(family: &str) -> &str {
    family
        .trim_start_matches("standard")
        .trim_end_matches("Family")
}

/// A parsed `$filter`.
#[derive(Debug)]
enum Filter {
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    /// `field eq 'value'` (`equal: false` for `ne`).
    Compare {
        key: &'static str,
        value: String,
        equal: bool,
    },
    /// `contains(field, 'text')`, optionally `eq true|false` / `ne true|false`.
    Contains {
        key: &'static str,
        text: String,
        expected: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Open,
    Close,
    Comma,
    Word(String),
    Text(String),
}

impl Filter {
    fn parse(text: &str) -> Result<Self, ()> {
        let tokens = tokens(text)?;
        let mut at = 0;
        let filter = or(&tokens, &mut at)?;
        if at == tokens.len() {
            Ok(filter)
        } else {
            Err(())
        }
    }

    fn matches(&self, row: &Value, case_sensitive: bool) -> bool {
        let field = |key: &str| row.get(key).and_then(Value::as_str).unwrap_or_default();
        let fold = |s: &str| {
            if case_sensitive {
                s.to_owned()
            } else {
                s.to_lowercase()
            }
        };
        match self {
            Self::And(a, b) => a.matches(row, case_sensitive) && b.matches(row, case_sensitive),
            Self::Or(a, b) => a.matches(row, case_sensitive) || b.matches(row, case_sensitive),
            Self::Compare { key, value, equal } => (fold(field(key)) == fold(value)) == *equal,
            Self::Contains {
                key,
                text,
                expected,
            } => fold(field(key)).contains(&fold(text)) == *expected,
        }
    }
}

fn tokens(text: &str) -> Result<Vec<Token>, ()> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {}
            '(' => out.push(Token::Open),
            ')' => out.push(Token::Close),
            ',' => out.push(Token::Comma),
            '\'' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            s.push('\'');
                        }
                        Some('\'') => break,
                        Some(c) => s.push(c),
                        None => return Err(()),
                    }
                }
                out.push(Token::Text(s));
            }
            c if c.is_ascii_alphanumeric() || c == '_' => {
                let mut s = String::from(c);
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        s.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                out.push(Token::Word(s));
            }
            _ => return Err(()),
        }
    }
    Ok(out)
}

fn word(tokens: &[Token], at: usize, w: &str) -> bool {
    matches!(tokens.get(at), Some(Token::Word(x)) if x == w)
}

fn or(tokens: &[Token], at: &mut usize) -> Result<Filter, ()> {
    let mut left = and(tokens, at)?;
    while word(tokens, *at, "or") {
        *at += 1;
        left = Filter::Or(Box::new(left), Box::new(and(tokens, at)?));
    }
    Ok(left)
}

fn and(tokens: &[Token], at: &mut usize) -> Result<Filter, ()> {
    let mut left = term(tokens, at)?;
    while word(tokens, *at, "and") {
        *at += 1;
        left = Filter::And(Box::new(left), Box::new(term(tokens, at)?));
    }
    Ok(left)
}

fn term(tokens: &[Token], at: &mut usize) -> Result<Filter, ()> {
    let next = |at: &mut usize| {
        let t = tokens.get(*at).cloned();
        *at += 1;
        t.ok_or(())
    };
    match next(at)? {
        Token::Open => {
            let inner = or(tokens, at)?;
            (next(at)? == Token::Close).then_some(inner).ok_or(())
        }
        Token::Word(w) if w == "contains" => {
            if next(at)? != Token::Open {
                return Err(());
            }
            let Token::Word(field) = next(at)? else {
                return Err(());
            };
            let key = key_of(&field)?;
            if next(at)? != Token::Comma {
                return Err(());
            }
            let Token::Text(text) = next(at)? else {
                return Err(());
            };
            if next(at)? != Token::Close {
                return Err(());
            }
            let mut expected = true;
            if word(tokens, *at, "eq") || word(tokens, *at, "ne") {
                let equal = word(tokens, *at, "eq");
                *at += 1;
                let value = match next(at)? {
                    Token::Word(w) if w == "true" => true,
                    Token::Word(w) if w == "false" => false,
                    _ => return Err(()),
                };
                expected = value == equal;
            }
            Ok(Filter::Contains {
                key,
                text,
                expected,
            })
        }
        Token::Word(field) => {
            let key = key_of(&field)?;
            let equal = match next(at)? {
                Token::Word(op) if op == "eq" => true,
                Token::Word(op) if op == "ne" => false,
                _ => return Err(()),
            };
            let Token::Text(value) = next(at)? else {
                return Err(());
            };
            if key == "type" && !PRICE_TYPES.contains(&value.as_str()) {
                return Err(());
            }
            Ok(Filter::Compare { key, value, equal })
        }
        _ => Err(()),
    }
}

fn key_of(field: &str) -> Result<&'static str, ()> {
    FIELDS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(field))
        .map(|(_, key)| *key)
        .ok_or(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(filter: &str, case_sensitive: bool) -> usize {
        let f = Filter::parse(filter).expect("a valid filter");
        rows("USD", 1.0)
            .iter()
            .filter(|r| f.matches(r, case_sensitive))
            .count()
    }

    #[test]
    fn filters_select_rows_as_the_api_does() {
        let vm = "serviceName eq 'Virtual Machines' and armRegionName eq 'eastus' and armSkuName eq 'Standard_D2s_v5'";
        assert_eq!(count(vm, true), 7, "every row of one size in one location");
        assert_eq!(
            count(&format!("{vm} and priceType eq 'Consumption'"), true),
            5
        );
        assert_eq!(
            count(
                &format!(
                    "{vm} and priceType eq 'Consumption' and contains(skuName, 'Spot') eq false and contains(productName, 'Windows') ne true"
                ),
                true
            ),
            2,
            "Linux pay-as-you-go and Low Priority"
        );
        assert_eq!(
            count(
                "(armRegionName eq 'eastus' or armRegionName eq 'westeurope') and armSkuName eq 'Standard_B1s'",
                true
            ),
            14
        );
        assert_eq!(
            count(
                "ARMREGIONNAME eq 'EastUS' and armSkuName eq 'Standard_B1s'",
                true
            ),
            0,
            "values are case-sensitive"
        );
        assert_eq!(
            count(
                "ARMREGIONNAME eq 'EastUS' and armSkuName eq 'standard_b1s'",
                false
            ),
            7,
            "before 2023-01-01-preview they were not"
        );
        assert_eq!(count("priceType eq 'SavingsPlan'", true), 0);
        for refused in [
            "not(contains(skuName, 'Spot'))",
            "armSkuName in ('Standard_B1s')",
            "priceType eq 'OnDemand'",
            "meterRegion eq 'primary'",
            "armSkuName eq 'Standard_B1s' and",
            "armSkuName eq 'unterminated",
            "savingsPlan/any(t: t/term eq '1 Year')",
        ] {
            assert!(Filter::parse(refused).is_err(), "{refused}");
        }
    }
}
