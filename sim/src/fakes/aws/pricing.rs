//! The AWS Price List Query API (`AWSPriceListService`, JSON 1.1 protocol: a `POST /` with
//! `X-Amz-Target: AWSPriceListService.GetProducts`, signed for service `pricing`), as the
//! botocore model `pricing/2017-10-15` describes it: `ServiceCode` required; `Filters` (at
//! most 50) of `Type` (`TERM_MATCH`, `EQUALS`, `CONTAINS`, `ANY_OF`, `NONE_OF`), `Field`
//! and `Value`, all required, ANDed; `FormatVersion` `aws_v1`; `MaxResults` 1–100;
//! `NextToken`. Members the model does not name are refused. The answer's `PriceList` is a
//! list of JSON documents, each a string: the product (`productFamily`, `attributes` with
//! AWS's own names: `instanceType`, `regionCode`, `location`, `operatingSystem`,
//! `tenancy`, `preInstalledSw`, `capacitystatus`, …) and its `OnDemand` terms. Every
//! instance type has, in each region offering it, the products a real region has beside
//! its Linux on-demand one: Windows, RHEL, dedicated tenancy, SQL Web pre-installed and
//! unused capacity reservations, and the region sells EBS storage too. Errors are JSON
//! 1.1 documents (`{"__type", "Message"}`).
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::catalog::{INSTANCE_TYPES, REGIONS, TypeInfo, offered_in};
use super::wire::{Call, Reply};

/// The members of `GetProductsRequest`.
const MEMBERS: [&str; 5] = [
    "ServiceCode",
    "Filters",
    "FormatVersion",
    "NextToken",
    "MaxResults",
];

/// The `FilterType` enum.
const FILTER_TYPES: [&str; 5] = ["TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF"];

fn error(status: u16, code: &str, message: &str) -> Reply {
    Reply::json_error(status, code, message)
}

/// `AWSPriceListService.<action>`.
/// `page_limit` caps a page below `MaxResults`, as the real API may answer fewer.
pub(crate) fn handle(call: &Call, page_limit: usize) -> Reply {
    match call.action.as_str() {
        "GetProducts" => get_products(&call.json, page_limit).unwrap_or_else(|e| e),
        other => error(
            400,
            "UnknownOperationException",
            &format!("Operation {other} is not supported by this fake"),
        ),
    }
}

fn invalid(message: &str) -> Reply {
    error(400, "InvalidParameterException", message)
}

/// One filter of a request.
struct Filter {
    kind: String,
    field: String,
    value: String,
}

impl Filter {
    fn matches(&self, product: &Value) -> bool {
        let actual = if self.field == "ServiceCode" {
            Some("AmazonEC2")
        } else {
            product
                .pointer(&format!("/product/attributes/{}", self.field))
                .and_then(Value::as_str)
        };
        let Some(actual) = actual else {
            return self.kind == "NONE_OF";
        };
        let list = || self.value.split(',').map(str::trim);
        match self.kind.as_str() {
            "CONTAINS" => actual.contains(&self.value),
            "ANY_OF" => list().any(|v| v == actual),
            "NONE_OF" => !list().any(|v| v == actual),
            _ => actual == self.value,
        }
    }
}

fn get_products(body: &Value, page_limit: usize) -> Result<Reply, Reply> {
    let Some(request) = body.as_object() else {
        return Err(error(
            400,
            "SerializationException",
            "the body is not a JSON object",
        ));
    };
    if let Some(unknown) = request.keys().find(|k| !MEMBERS.contains(&k.as_str())) {
        return Err(error(
            400,
            "SerializationException",
            &format!("Unrecognized field \"{unknown}\""),
        ));
    }
    let service = match request.get("ServiceCode") {
        Some(Value::String(s)) if !s.is_empty() => s,
        _ => {
            return Err(invalid(
                "1 validation error detected: Value null at 'serviceCode' failed to satisfy constraint: Member must not be null",
            ));
        }
    };
    if service != "AmazonEC2" {
        return Err(error(
            404,
            "NotFoundException",
            &format!("Service code {service} not found"),
        ));
    }
    if let Some(v) = request.get("FormatVersion")
        && v.as_str() != Some("aws_v1")
    {
        return Err(invalid("FormatVersion must be aws_v1"));
    }
    let max = match request.get("MaxResults") {
        None => 100,
        Some(v) => match v.as_u64() {
            Some(n @ 1..=100) => n as usize,
            _ => {
                return Err(invalid(
                    "1 validation error detected: Value at 'maxResults' failed to satisfy constraint: Member must have value between 1 and 100",
                ));
            }
        },
    };
    let filters = filters(request)?;
    let fingerprint = fingerprint(&filters);
    let start = match request.get("NextToken") {
        None => 0,
        Some(Value::String(t)) => t
            .strip_prefix(&format!("{fingerprint}~"))
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| error(400, "InvalidNextTokenException", "The NextToken is invalid"))?,
        Some(_) => {
            return Err(error(
                400,
                "SerializationException",
                "NextToken must be a string",
            ));
        }
    };
    let matching: Vec<Value> = products()
        .into_iter()
        .filter(|p| filters.iter().all(|f| f.matches(p)))
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(max.min(page_limit.max(1)))
        .map(|p| Value::String(p.to_string()))
        .collect();
    let end = start + page.len();
    let mut answer = json!({ "FormatVersion": "aws_v1", "PriceList": page });
    if end < matching.len() {
        answer["NextToken"] = json!(format!("{fingerprint}~{end}"));
    }
    Ok(Reply::ok(answer.to_string()))
}

fn filters(request: &Map<String, Value>) -> Result<Vec<Filter>, Reply> {
    let Some(given) = request.get("Filters") else {
        return Ok(Vec::new());
    };
    let Some(given) = given.as_array() else {
        return Err(error(
            400,
            "SerializationException",
            "Filters must be a list",
        ));
    };
    if given.len() > 50 {
        return Err(invalid("at most 50 filters"));
    }
    given
        .iter()
        .map(|f| {
            let text = |name: &str| {
                f.get(name)
                    .and_then(Value::as_str)
                    .filter(|s| (1..=1024).contains(&s.len()))
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        invalid(&format!(
                            "1 validation error detected: Value at 'filters.member.{}' failed to satisfy constraint: Member must not be null",
                            name.to_ascii_lowercase()
                        ))
                    })
            };
            let kind = text("Type")?;
            if !FILTER_TYPES.contains(&kind.as_str()) {
                return Err(invalid(&format!(
                    "1 validation error detected: Value '{kind}' at 'filters.member.type' failed to satisfy constraint: Member must satisfy enum value set: [TERM_MATCH, EQUALS, CONTAINS, ANY_OF, NONE_OF]"
                )));
            }
            if let Some(extra) = f
                .as_object()
                .and_then(|o| o.keys().find(|k| !["Type", "Field", "Value"].contains(&k.as_str())))
            {
                return Err(error(400, "SerializationException", &format!("Unrecognized field \"{extra}\"")));
            }
            Ok(Filter {
                kind,
                field: text("Field")?,
                value: text("Value")?,
            })
        })
        .collect()
}

/// A token's tie to the filters it continues (a token of other filters is refused).
fn fingerprint(filters: &[Filter]) -> String {
    let text: String = filters
        .iter()
        .map(|f| format!("{}|{}|{};", f.kind, f.field, f.value))
        .collect();
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The region's name in the price list.
fn location(region: &str) -> &'static str {
    match region {
        "us-east-1" => "US East (N. Virginia)",
        "us-east-2" => "US East (Ohio)",
        "us-west-1" => "US West (N. California)",
        "us-west-2" => "US West (Oregon)",
        "ca-central-1" => "Canada (Central)",
        "eu-central-1" => "EU (Frankfurt)",
        "eu-west-1" => "EU (Ireland)",
        "eu-west-2" => "EU (London)",
        "eu-north-1" => "EU (Stockholm)",
        "ap-northeast-1" => "Asia Pacific (Tokyo)",
        "ap-southeast-1" => "Asia Pacific (Singapore)",
        "sa-east-1" => "South America (Sao Paulo)",
        "af-south-1" => "Africa (Cape Town)",
        "me-south-1" => "Middle East (Bahrain)",
        _ => "Unknown",
    }
}

/// How much more a region costs than US East (N. Virginia).
fn region_factor(region: &str) -> f64 {
    match region {
        "us-east-1" | "us-east-2" | "us-west-2" => 1.0,
        "us-west-1" | "ca-central-1" => 1.12,
        r if r.starts_with("eu-") => 1.15,
        "sa-east-1" => 1.55,
        _ => 1.25,
    }
}

/// The Linux on-demand USD hourly price of a type in US East (N. Virginia).
fn linux_price(t: &TypeInfo) -> f64 {
    match t.name {
        "t1.micro" => 0.02,
        "t3.nano" => 0.0052,
        "t3.micro" => 0.0104,
        "t3.small" => 0.0208,
        "t3.medium" => 0.0416,
        "t3.large" => 0.0832,
        "t3.xlarge" => 0.1664,
        "t3.2xlarge" => 0.3328,
        "m7i.large" => 0.1008,
        "c7a.large" => 0.10264,
        "m7i.metal-24xl" => 4.8384,
        "t4g.micro" => 0.0084,
        "t4g.small" => 0.0168,
        "m7g.large" => 0.0816,
        "mac2.metal" => 0.65,
        _ => 0.05 * f64::from(t.vcpus),
    }
}

/// Every product of the fake's price list, in a stable order.
fn products() -> Vec<Value> {
    let mut out = Vec::new();
    for (n, (region, _)) in REGIONS.iter().enumerate() {
        for (m, t) in INSTANCE_TYPES
            .iter()
            .enumerate()
            .filter(|(_, t)| offered_in(t, region))
        {
            let base = linux_price(t) * region_factor(region);
            let variants: &[(&str, &str, &str, &str, f64)] = if t.name.starts_with("mac") {
                &[("MacOS", "Dedicated", "NA", "Used", 1.0)]
            } else {
                &[
                    ("Linux", "Shared", "NA", "Used", 1.0),
                    ("Linux", "Shared", "NA", "UnusedCapacityReservation", 1.0),
                    ("Linux", "Dedicated", "NA", "Used", 1.1),
                    ("Linux", "Shared", "SQL Web", "Used", 1.6),
                    ("Windows", "Shared", "NA", "Used", 1.8),
                    ("RHEL", "Shared", "NA", "Used", 1.5),
                ]
            };
            for (k, (os, tenancy, software, capacity, factor)) in variants.iter().enumerate() {
                let sku = format!("FAKE{n:02}{m:02}{k:02}PRICESKU");
                let per_hour = format!("{:.10}", base * factor);
                let what = [*os, *tenancy, *software, *capacity];
                out.push(instance_product(&sku, region, t, what, &per_hour));
            }
        }
        let sku = format!("FAKE{n:02}EBSGP3SKU00");
        out.push(json!({
            "product": { "productFamily": "Storage", "sku": sku, "attributes": {
                "servicecode": "AmazonEC2", "location": location(region), "locationType": "AWS Region",
                "regionCode": region, "volumeApiName": "gp3", "usagetype": "EBS:VolumeUsage.gp3",
                "servicename": "Amazon Elastic Compute Cloud" } },
            "serviceCode": "AmazonEC2",
            "terms": { "OnDemand": { format!("{sku}.JRTCKXETXF"): { "priceDimensions": {
                format!("{sku}.JRTCKXETXF.6YS6EN2CT7"): { "unit": "GB-Mo", "endRange": "Inf", "beginRange": "0",
                    "description": "$0.08 per GB-month of General Purpose (gp3) provisioned storage",
                    "appliesTo": [], "rateCode": format!("{sku}.JRTCKXETXF.6YS6EN2CT7"),
                    "pricePerUnit": { "USD": "0.0800000000" } } },
                "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": "JRTCKXETXF", "termAttributes": {} } } },
            "version": "20261120000000", "publicationDate": "2026-11-20T00:00:00Z",
        }));
    }
    out
}

fn instance_product(
    sku: &str,
    region: &str,
    t: &TypeInfo,
    [os, tenancy, software, capacity]: [&str; 4],
    per_hour: &str,
) -> Value {
    let rate = format!("{sku}.JRTCKXETXF.6YS6EN2CT7");
    json!({
        "product": { "productFamily": "Compute Instance", "sku": sku, "attributes": {
            "instanceType": t.name, "instanceFamily": "General purpose", "vcpu": t.vcpus.to_string(),
            "memory": format!("{} GiB", f64::from(t.mib) / 1024.0), "storage": "EBS only",
            "operatingSystem": os, "tenancy": tenancy, "preInstalledSw": software, "capacitystatus": capacity,
            "licenseModel": "No License required", "marketoption": "OnDemand", "operation": "RunInstances",
            "regionCode": region, "location": location(region), "locationType": "AWS Region",
            "currentGeneration": if t.current { "Yes" } else { "No" },
            "processorArchitecture": "64-bit", "usagetype": format!("BoxUsage:{}", t.name),
            "servicecode": "AmazonEC2", "servicename": "Amazon Elastic Compute Cloud" } },
        "serviceCode": "AmazonEC2",
        "terms": { "OnDemand": { format!("{sku}.JRTCKXETXF"): {
            "priceDimensions": { rate.clone(): {
                "unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": [], "rateCode": rate,
                "description": format!("${per_hour} per On Demand {os} {} Instance Hour", t.name),
                "pricePerUnit": { "USD": per_hour } } },
            "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z", "offerTermCode": "JRTCKXETXF", "termAttributes": {} } } },
        "version": "20261120000000", "publicationDate": "2026-11-20T00:00:00Z",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(body: Value) -> Reply {
        get_products(&body, 1000).unwrap_or_else(|e| e)
    }

    #[test]
    fn the_linux_on_demand_filters_find_one_product_per_type() {
        let filters = |region: &str| {
            json!([
                { "Type": "TERM_MATCH", "Field": "regionCode", "Value": region },
                { "Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux" },
                { "Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared" },
                { "Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA" },
                { "Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used" },
            ])
        };
        let reply = ask(
            json!({ "ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "Filters": filters("eu-west-1"), "MaxResults": 5 }),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        let page: Value = serde_json::from_str(&reply.body).expect("JSON");
        assert_eq!(page["PriceList"].as_array().map(Vec::len), Some(5));
        let token = page["NextToken"].as_str().expect("more pages").to_owned();
        let rest = ask(
            json!({ "ServiceCode": "AmazonEC2", "Filters": filters("eu-west-1"), "NextToken": token }),
        );
        let rest: Value = serde_json::from_str(&rest.body).expect("JSON");
        // 13 types sold there with a Linux price (not c7a, not the Mac).
        assert_eq!(rest["PriceList"].as_array().map(Vec::len), Some(8));
        let other = ask(
            json!({ "ServiceCode": "AmazonEC2", "Filters": filters("us-east-1"), "NextToken": page["NextToken"] }),
        );
        assert_eq!(
            other.error_code.as_deref(),
            Some("InvalidNextTokenException")
        );
    }

    #[test]
    fn requests_outside_the_model_are_refused() {
        for (body, code) in [
            (json!({}), "InvalidParameterException"),
            (
                json!({ "ServiceCode": "AmazonEC2", "MaxResults": 101 }),
                "InvalidParameterException",
            ),
            (
                json!({ "ServiceCode": "AmazonEC2", "Filters": [{ "Type": "LIKE", "Field": "a", "Value": "b" }] }),
                "InvalidParameterException",
            ),
            (
                json!({ "ServiceCode": "AmazonEC2", "Filters": [{ "Type": "TERM_MATCH", "Field": "a" }] }),
                "InvalidParameterException",
            ),
            (
                json!({ "ServiceCode": "AmazonEC2", "Region": "us-east-1" }),
                "SerializationException",
            ),
            (json!({ "ServiceCode": "AmazonS3" }), "NotFoundException"),
        ] {
            assert_eq!(
                ask(body.clone()).error_code.as_deref(),
                Some(code),
                "{body}"
            );
        }
    }
}
