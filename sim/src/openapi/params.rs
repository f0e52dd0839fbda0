//! Parameter checks of the OpenAPI validator: integer path parameters and the names and
//! scalar types of query parameters (`$ref`s to `#/components/parameters` resolved).
use serde_json::Value;

use super::{Direction, OpenApi, is_param, segments};

impl OpenApi {
    pub(super) fn check_parameters(
        &self,
        op: &Value,
        item: &Value,
        concrete: &[String],
        template: &str,
        query: &str,
        errs: &mut Vec<String>,
    ) {
        let params: Vec<&Value> = [item, op]
            .iter()
            .filter_map(|v| v.get("parameters").and_then(Value::as_array))
            .flatten()
            .map(|p| self.resolve(p))
            .collect();
        let find = |loc: &str, name: &str| {
            params
                .iter()
                .rev()
                .find(|p| p["in"] == loc && p["name"] == name)
                .copied()
        };
        for (ts, value) in segments(template).iter().zip(concrete) {
            if is_param(ts) && !is_param(value) {
                let name = &ts[1..ts.len() - 1];
                if let Some(schema) = find("path", name).and_then(|p| p.get("schema")) {
                    let v = scalar(self.resolve(schema), &percent_decode(value));
                    self.check_at(
                        schema,
                        &v,
                        &format!("path parameter `{name}`"),
                        Direction::Request,
                        errs,
                    );
                }
            }
        }
        let pairs: Vec<(String, String)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect();
        for (name, value) in &pairs {
            let Some(param) = find("query", name) else {
                errs.push(format!(
                    "query parameter `{name}` is not defined for {template}"
                ));
                continue;
            };
            if let Some(schema) = param.get("schema") {
                let resolved = self.resolve(schema);
                let (target, item_schema) = match resolved.get("items") {
                    Some(items) if resolved["type"] == "array" => (self.resolve(items), items),
                    _ => (resolved, schema),
                };
                let v = scalar(target, value);
                self.check_at(
                    item_schema,
                    &v,
                    &format!("query parameter `{name}`"),
                    Direction::Request,
                    errs,
                );
            }
        }
        for p in &params {
            let required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
            if required && p["in"] == "query" && !pairs.iter().any(|(k, _)| p["name"] == k.as_str())
            {
                errs.push(format!(
                    "required query parameter `{}` is missing",
                    p["name"].as_str().unwrap_or("?")
                ));
            }
        }
    }
}

/// A query or path value as the JSON value its schema expects (strings stay strings when
/// they do not parse, so the type check reports them).
fn scalar(schema: &Value, raw: &str) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("integer") => raw
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| raw.into()),
        Some("number") => raw
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or_else(|_| raw.into()),
        Some("boolean") => raw
            .parse::<bool>()
            .map(Value::from)
            .unwrap_or_else(|_| raw.into()),
        _ => Value::String(raw.to_owned()),
    }
}

/// Decodes `%XX` escapes (and `+` as a space in query strings).
pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
