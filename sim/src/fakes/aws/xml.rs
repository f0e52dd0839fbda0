//! The Query protocol's answer side: a small XML tree with the botocore serialization names
//! (`locationName`s for EC2, member names for STS), the EC2 and STS envelopes, and their
//! error documents.
use std::collections::BTreeMap;

/// An element with text or children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Xml {
    /// `<name>text</name>`.
    Text(String, String),
    /// `<name>children…</name>`.
    Node(String, Vec<Xml>),
}

impl Xml {
    pub(crate) fn text(name: &str, value: impl ToString) -> Self {
        Xml::Text(name.to_owned(), value.to_string())
    }

    pub(crate) fn node(name: &str, children: Vec<Xml>) -> Self {
        Xml::Node(name.to_owned(), children)
    }

    /// `<name><item>…</item>…</name>`: an EC2 list.
    pub(crate) fn items(name: &str, items: Vec<Vec<Xml>>) -> Self {
        Xml::Node(
            name.to_owned(),
            items.into_iter().map(|c| Xml::node("item", c)).collect(),
        )
    }

    /// `<name>` of `<item><key/><value/></item>`.
    pub(crate) fn tags(name: &str, tags: &BTreeMap<String, String>) -> Self {
        Xml::items(
            name,
            tags.iter()
                .map(|(k, v)| vec![Xml::text("key", k), Xml::text("value", v)])
                .collect(),
        )
    }

    /// `<name>` with text, only when `value` is set.
    pub(crate) fn opt(name: &str, value: Option<&str>) -> Option<Self> {
        value.map(|v| Xml::text(name, v))
    }

    fn write(&self, out: &mut String) {
        match self {
            Xml::Text(name, value) => {
                out.push('<');
                out.push_str(name);
                out.push('>');
                escape(value, out);
                out.push_str("</");
                out.push_str(name);
                out.push('>');
            }
            Xml::Node(name, children) => {
                out.push('<');
                out.push_str(name);
                out.push('>');
                for c in children {
                    c.write(out);
                }
                out.push_str("</");
                out.push_str(name);
                out.push('>');
            }
        }
    }
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

const EC2_NS: &str = "http://ec2.amazonaws.com/doc/2016-11-15/";
const STS_NS: &str = "https://sts.amazonaws.com/doc/2011-06-15/";

/// `<{Action}Response xmlns=…><requestId/>children</…>`.
pub(crate) fn ec2_response(action: &str, request_id: &str, children: Vec<Xml>) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{action}Response xmlns=\"{EC2_NS}\">"
    );
    Xml::text("requestId", request_id).write(&mut out);
    for c in &children {
        c.write(&mut out);
    }
    out.push_str(&format!("</{action}Response>"));
    out
}

/// `<Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>`.
pub(crate) fn ec2_error(code: &str, message: &str, request_id: &str) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    Xml::node(
        "Response",
        vec![
            Xml::node(
                "Errors",
                vec![Xml::node(
                    "Error",
                    vec![Xml::text("Code", code), Xml::text("Message", message)],
                )],
            ),
            Xml::text("RequestID", request_id),
        ],
    )
    .write(&mut out);
    out
}

/// `<{Action}Response xmlns=…><{Action}Result>…</…><ResponseMetadata><RequestId/>…`.
pub(crate) fn sts_response(action: &str, request_id: &str, result: Vec<Xml>) -> String {
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{action}Response xmlns=\"{STS_NS}\">"
    );
    Xml::node(&format!("{action}Result"), result).write(&mut out);
    Xml::node("ResponseMetadata", vec![Xml::text("RequestId", request_id)]).write(&mut out);
    out.push_str(&format!("</{action}Response>"));
    out
}

/// `<ErrorResponse xmlns=…><Error><Type/><Code/><Message/></Error><RequestId/></ErrorResponse>`.
pub(crate) fn sts_error(status: u16, code: &str, message: &str, request_id: &str) -> String {
    let kind = if status >= 500 { "Receiver" } else { "Sender" };
    let mut out =
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ErrorResponse xmlns=\"{STS_NS}\">");
    Xml::node(
        "Error",
        vec![
            Xml::text("Type", kind),
            Xml::text("Code", code),
            Xml::text("Message", message),
        ],
    )
    .write(&mut out);
    Xml::text("RequestId", request_id).write(&mut out);
    out.push_str("</ErrorResponse>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_escaped_and_enveloped() {
        let body = ec2_response(
            "DeleteKeyPair",
            "r-1",
            vec![Xml::text("return", true), Xml::text("keyPairId", "a<b")],
        );
        assert!(body.ends_with("<requestId>r-1</requestId><return>true</return><keyPairId>a&lt;b</keyPairId></DeleteKeyPairResponse>"), "{body}");
        assert!(
            ec2_error("AuthFailure", "no", "r").contains("<Errors><Error><Code>AuthFailure</Code>")
        );
        assert!(
            sts_response("GetCallerIdentity", "r", vec![])
                .contains("<GetCallerIdentityResult></GetCallerIdentityResult>")
        );
    }
}
