//! A minimal JSON-Schema validator (test-only) for cloud-init's cloud-config schemas.
//!
//! The schemas are draft 4 with `$defs`; [`Schema`] implements the subset they use:
//! `type`, `enum`, `const`, `properties`, `patternProperties`, `additionalProperties`,
//! `required`, `minProperties`/`maxProperties`, `items` (schema or tuple),
//! `additionalItems`, `minItems`/`maxItems`, `uniqueItems`, `pattern`,
//! `minLength`/`maxLength`, `minimum`/`maximum`, `allOf`/`anyOf`/`oneOf`/`not` and local
//! `$ref` (`#/$defs/…`, `#/definitions/…`; as in draft 4, siblings of `$ref` are ignored).
//! Annotations (`format`, `deprecated`, `description`, `default`…) and the 2020-12
//! `prefixItems` are ignored, as cloud-init's draft-4 validator ignores them. Patterns use
//! the `regex` crate: every pattern in these files is in its syntax.
use std::path::PathBuf;

use serde_json::Value;

/// The upstream schema (cloud-init 26.2).
pub(super) const UPSTREAM_SCHEMA: &str = "cloud-init-schema-cloud-config-v1.upstream.json";
/// The schema shipped by Debian's cloud-init 22.4.2.
pub(super) const DEBIAN_SCHEMA: &str = "cloud-init-schema-cloud-config-v1.deb-22.4.2.json";

/// A JSON schema document.
pub(super) struct Schema {
    root: Value,
}

impl Schema {
    /// Loads `tests/specs/<file>` of this repository.
    pub(super) fn load(file: &str) -> Schema {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/specs")
            .join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        Schema::from_value(serde_json::from_str(&text).expect("the schema is JSON"))
    }

    /// A schema given inline (for the validator's own tests).
    pub(super) fn from_value(root: Value) -> Schema {
        Schema { root }
    }

    /// Every violation, as `<instance path>: <problem>`; empty when valid.
    pub(super) fn errors(&self, instance: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        self.check(&self.root, instance, "", &mut errors);
        errors
    }

    fn is_valid(&self, schema: &Value, instance: &Value, at: &str) -> bool {
        let mut errors = Vec::new();
        self.check(schema, instance, at, &mut errors);
        errors.is_empty()
    }

    fn resolve(&self, reference: &str) -> &Value {
        let pointer = reference
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("remote $ref {reference}"));
        self.root
            .pointer(pointer)
            .unwrap_or_else(|| panic!("dangling $ref {reference}"))
    }

    fn check(&self, schema: &Value, inst: &Value, at: &str, errors: &mut Vec<String>) {
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return errors.push(format!("{at}: no value is allowed here")),
            Value::Object(schema) => schema,
            other => panic!("a schema must be an object or a boolean, not {other}"),
        };
        if let Some(Value::String(reference)) = schema.get("$ref") {
            return self.check(self.resolve(reference), inst, at, errors);
        }
        let mut fail = |problem: String| errors.push(format!("{at}: {problem}"));
        if let Some(types) = schema.get("type") {
            let allowed: Vec<&str> = match types {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            if !allowed.iter().any(|t| type_matches(t, inst)) {
                fail(format!("{} is not of type {allowed:?}", kind(inst)));
            }
        }
        if let Some(Value::Array(options)) = schema.get("enum")
            && !options.contains(inst)
        {
            fail(format!("{inst} is not one of {options:?}"));
        }
        if schema.get("const").is_some_and(|c| c != inst) {
            fail(format!("{inst} is not the constant"));
        }
        for key in ["allOf", "anyOf", "oneOf"] {
            let Some(Value::Array(subs)) = schema.get(key) else {
                continue;
            };
            if key == "allOf" {
                subs.iter()
                    .for_each(|sub| self.check(sub, inst, at, errors));
                continue;
            }
            let matched = subs
                .iter()
                .filter(|sub| self.is_valid(sub, inst, at))
                .count();
            if (key == "anyOf" && matched == 0) || (key == "oneOf" && matched != 1) {
                errors.push(format!("{at}: {matched} of the {key} subschemas match"));
            }
        }
        if let Some(not) = schema.get("not")
            && self.is_valid(not, inst, at)
        {
            errors.push(format!("{at}: matches a schema it must not"));
        }
        match inst {
            Value::Object(map) => self.check_object(schema, map, at, errors),
            Value::Array(items) => self.check_array(schema, items, at, errors),
            Value::String(s) => check_string(schema, s, at, errors),
            Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(f64::NAN), at, errors),
            _ => {}
        }
    }

    fn check_object(
        &self,
        schema: &serde_json::Map<String, Value>,
        map: &serde_json::Map<String, Value>,
        at: &str,
        errors: &mut Vec<String>,
    ) {
        let empty = serde_json::Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let patterns = schema
            .get("patternProperties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for (key, value) in map {
            let here = format!("{at}/{key}");
            let mut known = false;
            if let Some(sub) = properties.get(key) {
                known = true;
                self.check(sub, value, &here, errors);
            }
            for (pattern, sub) in patterns {
                if regex(pattern).is_match(key) {
                    known = true;
                    self.check(sub, value, &here, errors);
                }
            }
            if let (false, Some(additional)) = (known, schema.get("additionalProperties")) {
                if additional == &Value::Bool(false) {
                    errors.push(format!("{here}: additional property not allowed"));
                } else {
                    self.check(additional, value, &here, errors);
                }
            }
        }
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !map.contains_key(name.as_str().unwrap_or_default()) {
                errors.push(format!("{at}: required property {name} is missing"));
            }
        }
        if schema
            .get("minProperties")
            .and_then(Value::as_u64)
            .is_some_and(|m| (map.len() as u64) < m)
        {
            errors.push(format!("{at}: too few properties"));
        }
        if schema
            .get("maxProperties")
            .and_then(Value::as_u64)
            .is_some_and(|m| (map.len() as u64) > m)
        {
            errors.push(format!("{at}: too many properties"));
        }
    }

    fn check_array(
        &self,
        schema: &serde_json::Map<String, Value>,
        items: &[Value],
        at: &str,
        errors: &mut Vec<String>,
    ) {
        match schema.get("items") {
            Some(Value::Array(tuple)) => {
                for (i, item) in items.iter().enumerate() {
                    let here = format!("{at}/{i}");
                    match (tuple.get(i), schema.get("additionalItems")) {
                        (Some(sub), _) => self.check(sub, item, &here, errors),
                        (None, Some(additional)) => self.check(additional, item, &here, errors),
                        (None, None) => {}
                    }
                }
            }
            Some(sub) => {
                for (i, item) in items.iter().enumerate() {
                    self.check(sub, item, &format!("{at}/{i}"), errors);
                }
            }
            None => {}
        }
        let len = items.len() as u64;
        if schema
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| len < m)
        {
            errors.push(format!("{at}: fewer than minItems items"));
        }
        if schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| len > m)
        {
            errors.push(format!("{at}: more than maxItems items"));
        }
        let unique = schema.get("uniqueItems") == Some(&Value::Bool(true));
        if unique
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].contains(a))
        {
            errors.push(format!("{at}: items are not unique"));
        }
    }
}

fn check_string(
    schema: &serde_json::Map<String, Value>,
    s: &str,
    at: &str,
    errors: &mut Vec<String>,
) {
    let len = s.chars().count() as u64;
    if let Some(Value::String(pattern)) = schema.get("pattern")
        && !regex(pattern).is_match(s)
    {
        errors.push(format!("{at}: does not match {pattern}"));
    }
    if schema
        .get("minLength")
        .and_then(Value::as_u64)
        .is_some_and(|m| len < m)
    {
        errors.push(format!("{at}: shorter than minLength"));
    }
    if schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .is_some_and(|m| len > m)
    {
        errors.push(format!("{at}: longer than maxLength"));
    }
}

fn check_number(
    schema: &serde_json::Map<String, Value>,
    n: f64,
    at: &str,
    errors: &mut Vec<String>,
) {
    if schema
        .get("minimum")
        .and_then(Value::as_f64)
        .is_some_and(|m| n < m)
    {
        errors.push(format!("{at}: {n} is below the minimum"));
    }
    if schema
        .get("maximum")
        .and_then(Value::as_f64)
        .is_some_and(|m| n > m)
    {
        errors.push(format!("{at}: {n} is above the maximum"));
    }
}

fn regex(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).unwrap_or_else(|e| panic!("schema pattern {pattern}: {e}"))
}

fn type_matches(name: &str, inst: &Value) -> bool {
    match name {
        "object" => inst.is_object(),
        "array" => inst.is_array(),
        "string" => inst.is_string(),
        "boolean" => inst.is_boolean(),
        "null" => inst.is_null(),
        "number" => inst.is_number(),
        "integer" => {
            inst.is_i64() || inst.is_u64() || inst.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        other => panic!("unknown JSON type {other}"),
    }
}

fn kind(inst: &Value) -> &'static str {
    match inst {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
