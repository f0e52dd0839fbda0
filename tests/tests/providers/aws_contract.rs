//! The fake EC2 + STS answer with the official serialization: every element of every
//! successful answer, over a run of every client path, must be a member of the operation's
//! output shape in the botocore models of `tests/specs/` (EC2 `locationName`s and `item`
//! lists; STS `{Action}Result` with member names and `member` lists).
use serde_json::Value;

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
    levelrail_tests::specs::json(file)
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
    let ec2 = model("botocore-ec2-2016-11-15.service-2.json");
    let sts = model("botocore-sts-2011-06-15.service-2.json");
    let mut problems = Vec::new();
    let mut checked = std::collections::BTreeSet::new();
    for r in fake.requests().iter().filter(|r| r.status == Some(200)) {
        let root = parse(&r.response);
        assert_eq!(root.name, format!("{}Response", r.action));
        let (m, is_ec2) = if r.service == "sts" {
            (&sts, false)
        } else {
            (&ec2, true)
        };
        let output = m["operations"][&r.action]["output"]["shape"]
            .as_str()
            .unwrap_or_else(|| panic!("{} has an output", r.action));
        let shapes = &m["shapes"];
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
            levelrail_tests::fakes::aws::EC2_TEXT_PUNCTUATION,
            "{shape}.{member}"
        );
        assert!(
            doc.contains(&format!(
                "Up to {} characters",
                levelrail_tests::fakes::aws::EC2_TEXT_MAX
            )),
            "{shape}.{member}: {doc}"
        );
    }
    assert!(levelrail_tests::fakes::aws::ec2_text_ok(
        "Levelrail nodes: no inbound rules; the node agent dials out (a-z) #1 @[x]+=&{y}!$*"
    ));
    for bad in [
        "the operator's network",
        "naïve",
        "tab\there",
        &"x".repeat(256),
    ] {
        assert!(!levelrail_tests::fakes::aws::ec2_text_ok(bad), "{bad}");
    }
}
