//! The fake EC2 + STS speak the official serialization, both ways, over a run of every
//! client path: every parameter of every request must be a member path of the operation's
//! input shape in the botocore models of `tests/specs/` (EC2: `queryName` or capitalised
//! `locationName`, lists as `Name.N`; STS: member names, lists as `Name.member.N`), with
//! its enum values and integer bounds, and the required members present; every element of
//! every successful answer must be a member of the output shape (EC2 `locationName`s and
//! `item` lists; STS `{Action}Result` with member names and `member` lists). The Price
//! List speaks JSON 1.1: its request and answer bodies are checked member by member
//! (`json_problems`).
use serde_json::Value;

use levelrail_sim::fakes::aws::AwsRequest;

use crate::aws_support::{exercise_everything, start_fake};

/// A parsed element: name, children, text.
#[derive(Debug)]
struct Node {
    name: String,
    children: Vec<Node>,
    text: String,
}

/// Parses the fake's XML: a declaration, elements (attributes ignored), text; no
/// self-closing tags, comments or CDATA (the fake writes none).
fn parse(xml: &str) -> Node {
    let body = xml
        .trim_start_matches(|c| c != '>')
        .get(1..)
        .unwrap_or_default();
    let body = if xml.starts_with("<?xml") { body } else { xml };
    let (node, _) = element(body.trim());
    node
}

fn element(s: &str) -> (Node, &str) {
    let s = s.strip_prefix('<').expect("an element");
    let end = s.find('>').expect("tag end");
    let name = s[..end]
        .split_whitespace()
        .next()
        .expect("tag name")
        .to_owned();
    let mut rest = &s[end + 1..];
    let mut node = Node {
        name,
        children: Vec::new(),
        text: String::new(),
    };
    loop {
        let lt = rest.find('<').expect("closing tag");
        node.text.push_str(&rest[..lt]);
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("</") {
            let close = after.find('>').expect("closing tag end");
            assert_eq!(&after[..close], node.name, "balanced tags");
            return (node, &after[close + 1..]);
        }
        let (child, after) = element(rest);
        node.children.push(child);
        rest = after;
    }
}

fn model(file: &str) -> Value {
    levelrail_sim::specs::json(file)
}

/// The botocore models of EC2, STS and the Price List.
struct Models {
    ec2: Value,
    sts: Value,
    pricing: Value,
}

impl Models {
    fn load() -> Self {
        Self {
            ec2: model("botocore-ec2-2016-11-15.service-2.json"),
            sts: model("botocore-sts-2011-06-15.service-2.json"),
            pricing: model("botocore-pricing-2017-10-15.service-2.json"),
        }
    }

    /// The problems of a Price List call's JSON `value` against its operation's `io`
    /// (`input` or `output`) shape.
    fn pricing_problems(&self, r: &AwsRequest, io: &str, value: &Value) -> Vec<String> {
        let shape = self.pricing["operations"][&r.action][io]["shape"]
            .as_str()
            .unwrap_or_else(|| panic!("{} has an {io}", r.action));
        json_problems(&self.pricing, shape, value, &r.action)
    }

    /// The shapes of `r`'s service, the name of its operation's `io` (`input` or `output`)
    /// shape, and whether the service is EC2.
    fn shape_of<'a>(&'a self, r: &AwsRequest, io: &str) -> (&'a Value, &'a str, bool) {
        let (m, ec2) = if r.service == "sts" {
            (&self.sts, false)
        } else {
            (&self.ec2, true)
        };
        let shape = m["operations"][&r.action][io]["shape"]
            .as_str()
            .unwrap_or_else(|| panic!("{} has an {io}", r.action));
        (&m["shapes"], shape, ec2)
    }
}

/// Checks `node` against shape `shape`; `ec2` picks the serialization rules.
fn check(shapes: &Value, shape: &str, node: &Node, ec2: bool, path: &str, out: &mut Vec<String>) {
    let s = &shapes[shape];
    match s["type"].as_str().unwrap_or_default() {
        "structure" => {
            for child in &node.children {
                let member = s["members"].as_object().and_then(|m| {
                    m.iter().find(|(name, def)| {
                        def["locationName"].as_str().unwrap_or(name) == child.name
                    })
                });
                match member {
                    Some((_, def)) => {
                        let inner = def["shape"].as_str().unwrap_or_default();
                        check(
                            shapes,
                            inner,
                            child,
                            ec2,
                            &format!("{path}/{}", child.name),
                            out,
                        );
                    }
                    None => out.push(format!("{path}/{}: not a member of {shape}", child.name)),
                }
            }
        }
        "list" => {
            let item =
                s["member"]["locationName"]
                    .as_str()
                    .unwrap_or(if ec2 { "item" } else { "member" });
            let inner = s["member"]["shape"].as_str().unwrap_or_default();
            for child in &node.children {
                if child.name == item {
                    check(shapes, inner, child, ec2, &format!("{path}/{item}"), out);
                } else {
                    out.push(format!(
                        "{path}/{}: a list of {shape} holds <{item}>",
                        child.name
                    ));
                }
            }
        }
        _ if !node.children.is_empty() => out.push(format!("{path}: {shape} is a scalar")),
        _ => {}
    }
}

#[tokio::test]
async fn every_answer_of_the_fake_uses_the_botocore_output_shapes() {
    let fake = start_fake(|_| {}).await;
    exercise_everything(&fake).await;
    let models = Models::load();
    let mut problems = Vec::new();
    let mut checked = std::collections::BTreeSet::new();
    for r in fake.requests().iter().filter(|r| r.status == Some(200)) {
        if r.service == "pricing" {
            let answer: Value = serde_json::from_str(&r.response).expect("a JSON answer");
            problems.extend(models.pricing_problems(r, "output", &answer));
            checked.insert(format!("{}:{}", r.service, r.action));
            continue;
        }
        let root = parse(&r.response);
        assert_eq!(root.name, format!("{}Response", r.action));
        let (shapes, output, is_ec2) = models.shape_of(r, "output");
        if is_ec2 {
            let body = Node {
                name: root.name.clone(),
                children: root
                    .children
                    .into_iter()
                    .filter(|c| c.name != "requestId")
                    .collect(),
                text: String::new(),
            };
            check(shapes, output, &body, true, &r.action, &mut problems);
        } else {
            let result = root
                .children
                .iter()
                .find(|c| c.name == format!("{}Result", r.action))
                .expect("a Result element");
            check(shapes, output, result, false, &r.action, &mut problems);
        }
        checked.insert(format!("{}:{}", r.service, r.action));
    }
    assert!(
        checked.len() >= 18,
        "every action answered at least once: {checked:?}"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The name a member has in a request: EC2 prefers `queryName`, then `locationName` with a
/// capital first letter; the Query protocol uses `locationName`; both fall back on the
/// member name.
fn request_name(name: &str, def: &Value, ec2: bool) -> String {
    let location = def["locationName"].as_str();
    match (def["queryName"].as_str(), location, ec2) {
        (Some(q), _, true) => q.to_owned(),
        (_, Some(l), true) => {
            let mut c = l.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default()
        }
        (_, Some(l), false) => l.to_owned(),
        _ => name.to_owned(),
    }
}

/// Checks parameter `key` (split on `.`) with `value` against shape `shape`.
fn check_param(
    shapes: &Value,
    shape: &str,
    key: &[&str],
    value: &str,
    ec2: bool,
) -> Result<(), String> {
    let s = &shapes[shape];
    match (s["type"].as_str().unwrap_or_default(), key) {
        ("structure", [first, rest @ ..]) => {
            let (_, def) = s["members"]
                .as_object()
                .and_then(|m| m.iter().find(|(n, d)| request_name(n, d, ec2) == *first))
                .ok_or_else(|| format!("{first} is not a member of {shape}"))?;
            check_param(
                shapes,
                def["shape"].as_str().unwrap_or_default(),
                rest,
                value,
                ec2,
            )
        }
        ("list", keys) => {
            let rest = match (ec2, keys) {
                (true, [n, rest @ ..]) | (false, ["member", n, rest @ ..])
                    if n.parse::<u32>().is_ok_and(|n| n >= 1) =>
                {
                    rest
                }
                _ => {
                    return Err(format!(
                        "{} does not index the list {shape}",
                        keys.join(".")
                    ));
                }
            };
            check_param(
                shapes,
                s["member"]["shape"].as_str().unwrap_or_default(),
                rest,
                value,
                ec2,
            )
        }
        (_, [extra, ..]) => Err(format!("{shape} is a scalar, yet .{extra} follows")),
        ("string", []) => match s["enum"].as_array() {
            Some(values) if !values.iter().any(|v| v == value) => {
                Err(format!("{value} is not one of the values of {shape}"))
            }
            _ => Ok(()),
        },
        ("integer" | "long", []) => {
            let n: i64 = value
                .parse()
                .map_err(|_| format!("{value} is not a {shape}"))?;
            let (min, max) = (s["min"].as_i64(), s["max"].as_i64());
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(format!("{n} is outside {shape}'s {min:?}..{max:?}"));
            }
            Ok(())
        }
        ("boolean", []) if !matches!(value, "true" | "false") => {
            Err(format!("{value} is not a boolean"))
        }
        _ => Ok(()),
    }
}

#[tokio::test]
async fn every_request_of_the_client_uses_the_botocore_input_shapes() {
    let fake = start_fake(|_| {}).await;
    exercise_everything(&fake).await;
    let models = Models::load();
    let mut problems = Vec::new();
    let mut checked = std::collections::BTreeSet::new();
    for r in fake.requests() {
        if r.service == "pricing" {
            problems.extend(models.pricing_problems(&r, "input", &r.body));
            checked.insert(format!("{}:{}", r.service, r.action));
            continue;
        }
        let (shapes, input, is_ec2) = models.shape_of(&r, "input");
        for (key, value) in r
            .params
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "Action" | "Version"))
        {
            let path: Vec<&str> = key.split('.').collect();
            if let Err(e) = check_param(shapes, input, &path, value, is_ec2) {
                problems.push(format!("{} {key}={value}: {e}", r.action));
            }
        }
        for required in shapes[input]["required"].as_array().into_iter().flatten() {
            let name = required.as_str().unwrap_or_default();
            let wire = request_name(name, &shapes[input]["members"][name], is_ec2);
            if !r
                .params
                .keys()
                .any(|k| k == &wire || k.starts_with(&format!("{wire}.")))
            {
                problems.push(format!("{}: the required {wire} is missing", r.action));
            }
        }
        checked.insert(format!("{}:{}", r.service, r.action));
    }
    for new in [
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeInstanceTypeOfferings",
        "pricing:GetProducts",
    ] {
        assert!(checked.contains(new), "{new} was exercised: {checked:?}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_request_check_refuses_what_the_model_does_not_describe() {
    let m = model("botocore-ec2-2016-11-15.service-2.json");
    let shapes = &m["shapes"];
    let check = |shape: &str, key: &str, value: &str| {
        let path: Vec<&str> = key.split('.').collect();
        check_param(shapes, shape, &path, value, true)
    };
    let offerings = "DescribeInstanceTypeOfferingsRequest";
    assert_eq!(check(offerings, "LocationType", "region"), Ok(()));
    assert_eq!(check(offerings, "Filter.1.Value.2", "eu-west-1"), Ok(()));
    assert_eq!(
        check("DescribeInstanceTypesRequest", "MaxResults", "100"),
        Ok(())
    );
    assert_eq!(
        check(
            "RunInstancesRequest",
            "NetworkInterface.1.SubnetId",
            "subnet-1"
        ),
        Ok(())
    );
    assert!(check(offerings, "LocationType", "planet").is_err());
    assert!(check(offerings, "Filters.1.Name", "location").is_err());
    assert!(check(offerings, "Filter.0.Name", "location").is_err());
    assert!(check("DescribeInstanceTypesRequest", "MaxResults", "1000").is_err());
    assert!(check("DescribeInstanceTypesRequest", "MaxResults.1", "5").is_err());
}

#[test]
fn the_parser_reads_nested_elements_and_text() {
    let n =
        parse("<?xml version=\"1.0\"?>\n<A xmlns=\"x\"><b>1</b><c><item><d>t</d></item></c></A>");
    assert_eq!((n.name.as_str(), n.children.len()), ("A", 2));
    assert_eq!(n.children[1].children[0].children[0].text, "t");
}

/// The "Valid characters" / "Allowed characters" punctuation of a botocore member's
/// documentation (after "a-z, A-Z, 0-9, spaces, and "), HTML entities decoded.
fn documented_punctuation(shapes: &Value, shape: &str, member: &str) -> (String, String) {
    let doc = shapes[shape]["members"][member]["documentation"]
        .as_str()
        .unwrap_or_else(|| panic!("{shape}.{member} has no documentation"))
        .to_owned();
    let set = doc
        .split("a-z, A-Z, 0-9, spaces, and ")
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .unwrap_or_else(|| panic!("{shape}.{member}: no character set in {doc}"))
        .replace("&amp;", "&");
    (set, doc)
}

#[test]
fn the_fake_refuses_exactly_what_the_model_says_ec2_refuses_in_names_and_descriptions() {
    let model = model("botocore-ec2-2016-11-15.service-2.json");
    let shapes = &model["shapes"];
    for (shape, member) in [
        ("CreateSecurityGroupRequest", "GroupName"),
        ("CreateSecurityGroupRequest", "Description"),
        ("IpRange", "Description"),
        ("Ipv6Range", "Description"),
    ] {
        let (set, doc) = documented_punctuation(shapes, shape, member);
        assert_eq!(
            set,
            levelrail_sim::fakes::aws::EC2_TEXT_PUNCTUATION,
            "{shape}.{member}"
        );
        assert!(
            doc.contains(&format!(
                "Up to {} characters",
                levelrail_sim::fakes::aws::EC2_TEXT_MAX
            )),
            "{shape}.{member}: {doc}"
        );
    }
    assert!(levelrail_sim::fakes::aws::ec2_text_ok(
        "Levelrail nodes: no inbound rules; the node agent dials out (a-z) #1 @[x]+=&{y}!$*"
    ));
    for bad in [
        "the operator's network",
        "naïve",
        "tab\there",
        &"x".repeat(256),
    ] {
        assert!(!levelrail_sim::fakes::aws::ec2_text_ok(bad), "{bad}");
    }
}

/// The problems of `value` against botocore shape `shape` of `model` (JSON protocol:
/// member names as in the model, required members, enums, list and string lengths,
/// integer ranges); empty when it conforms.
pub(crate) fn json_problems(model: &Value, shape: &str, value: &Value, at: &str) -> Vec<String> {
    let s = &model["shapes"][shape];
    let mut problems = Vec::new();
    let here = |what: String| format!("{at}: {what}");
    match s["type"].as_str().unwrap_or_default() {
        "structure" => {
            let Some(obj) = value.as_object() else {
                problems.push(here("not an object".into()));
                return problems;
            };
            for required in s["required"].as_array().into_iter().flatten() {
                let name = required.as_str().unwrap_or_default();
                if !obj.contains_key(name) {
                    problems.push(here(format!("required member {name} missing")));
                }
            }
            for (name, v) in obj {
                match s["members"][name]["shape"].as_str() {
                    Some(member) => {
                        problems.extend(json_problems(model, member, v, &format!("{at}.{name}")));
                    }
                    None => problems.push(here(format!("{name} is no member of {shape}"))),
                }
            }
        }
        "list" => {
            let Some(items) = value.as_array() else {
                problems.push(here("not a list".into()));
                return problems;
            };
            if let Some(max) = s["max"].as_u64()
                && items.len() as u64 > max
            {
                problems.push(here(format!("more than {max} items")));
            }
            let member = s["member"]["shape"].as_str().unwrap_or_default();
            for (i, v) in items.iter().enumerate() {
                problems.extend(json_problems(model, member, v, &format!("{at}[{i}]")));
            }
        }
        "string" => match value.as_str() {
            None => problems.push(here("not a string".into())),
            Some(text) => {
                if let Some(values) = s["enum"].as_array()
                    && !values.iter().any(|v| v.as_str() == Some(text))
                {
                    problems.push(here(format!("{text} is not one of {values:?}")));
                }
                let len = text.chars().count() as u64;
                if s["min"].as_u64().is_some_and(|m| len < m)
                    || s["max"].as_u64().is_some_and(|m| len > m)
                {
                    problems.push(here(format!("length {len} out of bounds")));
                }
            }
        },
        "integer" => match value.as_i64() {
            None => problems.push(here("not an integer".into())),
            Some(n) => {
                if s["min"].as_i64().is_some_and(|m| n < m)
                    || s["max"].as_i64().is_some_and(|m| n > m)
                {
                    problems.push(here(format!("{n} out of bounds")));
                }
            }
        },
        other => problems.push(here(format!("unchecked shape type {other:?}"))),
    }
    problems
}

#[test]
fn the_model_check_catches_what_the_price_list_refuses() {
    let model = levelrail_sim::specs::json("botocore-pricing-2017-10-15.service-2.json");
    let check = |body: Value| json_problems(&model, "GetProductsRequest", &body, "r");
    assert!(check(serde_json::json!({ "ServiceCode": "AmazonEC2", "MaxResults": 100 })).is_empty());
    assert!(
        !check(serde_json::json!({ "MaxResults": 100 })).is_empty(),
        "ServiceCode is required"
    );
    assert!(
        !check(serde_json::json!({ "ServiceCode": "AmazonEC2", "MaxResults": 101 })).is_empty()
    );
    assert!(!check(serde_json::json!({ "ServiceCode": "AmazonEC2", "Filters": [{ "Type": "LIKE", "Field": "a", "Value": "b" }] })).is_empty());
    assert!(!check(serde_json::json!({ "ServiceCode": "AmazonEC2", "Region": "x" })).is_empty());
}
