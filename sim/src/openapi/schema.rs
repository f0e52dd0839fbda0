//! Schema checks of the OpenAPI validator: a JSON value against an OpenAPI 3.0 schema object,
//! collecting every mismatch with the JSON path where it occurs.
use serde_json::{Map, Value};

use super::{Direction, OpenApi};

/// Deeper than any real document; stops a `$ref` cycle that consumes no input.
const MAX_DEPTH: usize = 96;

impl OpenApi {
    /// Checks a body; error paths start at `$`.
    pub(crate) fn check_value(
        &self,
        schema: &Value,
        value: &Value,
        dir: Direction,
        errs: &mut Vec<String>,
    ) {
        self.check(schema, value, "$", dir, errs, 0);
    }

    /// Checks one value named by `label` (a parameter).
    pub(crate) fn check_at(
        &self,
        schema: &Value,
        value: &Value,
        label: &str,
        dir: Direction,
        errs: &mut Vec<String>,
    ) {
        self.check(schema, value, label, dir, errs, 0);
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        at: &str,
        dir: Direction,
        errs: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            errs.push(format!("{at}: schema nesting deeper than {MAX_DEPTH}"));
            return;
        }
        // `nullable` beside a `$ref` is not OpenAPI 3.0, but descriptions use it that way.
        let nullable_here = is_true(schema, "nullable");
        let schema = self.resolve(schema);
        let Some(obj) = schema.as_object() else {
            return;
        };
        if value.is_null() && (nullable_here || is_true(schema, "nullable")) {
            return;
        }
        if let Some(t) = obj.get("type").and_then(Value::as_str)
            && !type_matches(t, value)
        {
            errs.push(format!("{at}: expected {t}, got {}", type_name(value)));
            return;
        }
        if let Some(allowed) = obj.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            errs.push(format!(
                "{at}: {} is not one of {}",
                clipped(value),
                clipped(&Value::Array(allowed.clone()))
            ));
        }
        self.check_composition(obj, value, at, dir, errs, depth);
        match value {
            Value::Object(map) => self.check_object(obj, map, at, dir, errs, depth),
            Value::Array(items) => {
                let n = items.len() as u64;
                if let Some(min) = obj
                    .get("minItems")
                    .and_then(Value::as_u64)
                    .filter(|m| n < *m)
                {
                    errs.push(format!("{at}: {n} items, at least {min} required"));
                }
                if let Some(max) = obj
                    .get("maxItems")
                    .and_then(Value::as_u64)
                    .filter(|m| n > *m)
                {
                    errs.push(format!("{at}: {n} items, at most {max} allowed"));
                }
                if let Some(item_schema) = obj.get("items") {
                    for (i, item) in items.iter().enumerate() {
                        self.check(
                            item_schema,
                            item,
                            &format!("{at}[{i}]"),
                            dir,
                            errs,
                            depth + 1,
                        );
                    }
                }
            }
            Value::String(s) => {
                let n = s.chars().count() as u64;
                if let Some(min) = obj
                    .get("minLength")
                    .and_then(Value::as_u64)
                    .filter(|m| n < *m)
                {
                    errs.push(format!("{at}: {n} characters, at least {min} required"));
                }
                if let Some(max) = obj
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .filter(|m| n > *m)
                {
                    errs.push(format!("{at}: {n} characters, at most {max} allowed"));
                }
            }
            Value::Number(n) => check_bounds(obj, n.as_f64().unwrap_or_default(), at, errs),
            _ => {}
        }
    }

    fn check_composition(
        &self,
        obj: &Map<String, Value>,
        value: &Value,
        at: &str,
        dir: Direction,
        errs: &mut Vec<String>,
        depth: usize,
    ) {
        if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
            for s in all {
                self.check(s, value, at, dir, errs, depth + 1);
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            let Some(branches) = obj.get(keyword).and_then(Value::as_array) else {
                continue;
            };
            let results: Vec<Vec<String>> = branches
                .iter()
                .map(|s| {
                    let mut e = Vec::new();
                    self.check(s, value, at, dir, &mut e, depth + 1);
                    e
                })
                .collect();
            let matching = results.iter().filter(|e| e.is_empty()).count();
            if matching == 0 {
                errs.push(format!(
                    "{at}: matches none of the {} {keyword} schemas",
                    branches.len()
                ));
                // The closest branch explains the mismatch best.
                if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                    errs.extend(best);
                }
            } else if keyword == "oneOf" && matching > 1 && obj.get("discriminator").is_none() {
                errs.push(format!(
                    "{at}: matches {matching} oneOf schemas, exactly one expected"
                ));
            }
        }
    }

    fn check_object(
        &self,
        obj: &Map<String, Value>,
        map: &Map<String, Value>,
        at: &str,
        dir: Direction,
        errs: &mut Vec<String>,
        depth: usize,
    ) {
        let props = obj.get("properties").and_then(Value::as_object);
        for name in obj
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if map.contains_key(name) {
                continue;
            }
            let prop = props.and_then(|p| p.get(name)).map(|p| self.resolve(p));
            let exempt = match dir {
                Direction::Request => prop.is_some_and(|p| is_true(p, "readOnly")),
                Direction::Response => prop.is_some_and(|p| is_true(p, "writeOnly")),
            };
            if !exempt {
                errs.push(format!("{at}: missing required property `{name}`"));
            }
        }
        for (key, v) in map {
            let child = child_path(at, key);
            if let Some(prop) = props.and_then(|p| p.get(key)) {
                self.check(prop, v, &child, dir, errs, depth + 1);
                continue;
            }
            match obj.get("additionalProperties") {
                Some(Value::Bool(false)) => {
                    errs.push(format!("{child}: property is not allowed here"))
                }
                Some(extra @ Value::Object(_)) => {
                    self.check(extra, v, &child, dir, errs, depth + 1)
                }
                _ => {}
            }
        }
    }
}

fn check_bounds(obj: &Map<String, Value>, n: f64, at: &str, errs: &mut Vec<String>) {
    if let Some(min) = obj.get("minimum").and_then(Value::as_f64) {
        let exclusive = obj
            .get("exclusiveMinimum")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if n < min || (exclusive && n == min) {
            errs.push(format!("{at}: {n} is below the minimum {min}"));
        }
    }
    if let Some(max) = obj.get("maximum").and_then(Value::as_f64) {
        let exclusive = obj
            .get("exclusiveMaximum")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if n > max || (exclusive && n == max) {
            errs.push(format!("{at}: {n} is above the maximum {max}"));
        }
    }
}

fn is_true(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `$.a.b`, or `$.labels["example.com/x"]` for keys that are not plain words.
fn child_path(at: &str, key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        format!("{at}.{key}")
    } else {
        format!("{at}[{key:?}]")
    }
}

fn clipped(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}
