//! A small OpenAPI 3.0 validator for contract tests: checks the request and response bodies
//! exchanged with a fake cloud against the provider's own API description in `tests/specs/`.
//!
//! ```ignore
//! let api = levelrail_sim::openapi::hcloud();
//! api.validate_request("POST", "/servers", &body)?;              // or "/v1/servers"
//! api.validate_response("GET", "/servers/42?x=1", 200, &answer)?;  // concrete paths match templates
//! ```
//!
//! Supported: `$ref` to `#/components/...` (schemas, parameters, request bodies, responses),
//! `type` (`integer` only for numbers without a fraction), `properties`, `required` (a
//! `readOnly` property is not required in a request, a `writeOnly` one not in a response),
//! `additionalProperties` (`false` or a schema), `items`, `enum`, `nullable`,
//! `allOf`/`oneOf`/`anyOf`, `minLength`/`maxLength`, `minimum`/`maximum`,
//! `minItems`/`maxItems`; query parameter names and scalar types; integer path parameters.
//! Ignored: `format`, `pattern`, `discriminator`, headers. Every error names the JSON path of
//! the offending value (`$.server.public_net.ipv4.ip: expected string, got integer`).
//! Its own tests run in the `providers` integration-test binary (`tests/providers/openapi.rs`).
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use params::percent_decode;

mod params;
mod schema;

/// The Hetzner Cloud API description (a file of `tests/specs/`).
pub const HCLOUD_SPEC: &str = "hcloud-openapi.json";

/// The DigitalOcean API description (a file of `tests/specs/`).
pub const DIGITALOCEAN_SPEC: &str = "digitalocean-public.v2.bundled.json";

/// The Hetzner description, loaded once per process.
pub fn hcloud() -> &'static OpenApi {
    static SPEC: OnceLock<OpenApi> = OnceLock::new();
    SPEC.get_or_init(|| OpenApi::load_spec(HCLOUD_SPEC))
}

/// The DigitalOcean description, loaded once per process.
pub fn digitalocean() -> &'static OpenApi {
    static SPEC: OnceLock<OpenApi> = OnceLock::new();
    SPEC.get_or_init(|| OpenApi::load_spec(DIGITALOCEAN_SPEC))
}

/// Whether a body is sent to the provider or returned by it (`readOnly` / `writeOnly`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Request,
    Response,
}

/// A loaded OpenAPI 3.0 document.
#[derive(Debug)]
pub struct OpenApi {
    doc: Value,
    /// Path templates split into segments, with their key in `paths`.
    templates: Vec<(String, Vec<String>)>,
    /// Path prefixes of the `servers` URLs (`/v1` for `https://api.hetzner.cloud/v1`).
    base_paths: Vec<String>,
}

impl OpenApi {
    /// Loads a JSON OpenAPI document; panics with the reason (this is test tooling).
    pub fn load(path: impl AsRef<Path>) -> OpenApi {
        let path = path.as_ref();
        Self::try_load(path)
            .unwrap_or_else(|e| panic!("cannot load OpenAPI document {}: {e}", path.display()))
    }

    /// Loads a JSON OpenAPI document of `tests/specs/` (plain or gzip-compressed).
    pub fn load_spec(file: &str) -> OpenApi {
        Self::from_value(crate::specs::json(file))
            .unwrap_or_else(|e| panic!("cannot load OpenAPI document {file}: {e}"))
    }

    /// Loads a JSON OpenAPI document.
    pub fn try_load(path: &Path) -> Result<OpenApi, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Self::from_value(doc)
    }

    /// Wraps an already parsed document (tests with an inline spec).
    pub fn from_value(doc: Value) -> Result<OpenApi, String> {
        let version = doc
            .get("openapi")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !version.starts_with("3.") {
            return Err(format!("not an OpenAPI 3 document (openapi: {version:?})"));
        }
        let paths = doc
            .get("paths")
            .and_then(Value::as_object)
            .ok_or("no `paths` object")?;
        let templates = paths.keys().map(|k| (k.clone(), segments(k))).collect();
        let base_paths = doc
            .get("servers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|s| s.get("url").and_then(Value::as_str))
            .filter_map(url_path)
            .collect();
        Ok(OpenApi {
            doc,
            templates,
            base_paths,
        })
    }

    /// Checks a request: the path (concrete or template, optional query string) and method
    /// exist, the query parameters are declared and well typed, and `body` (`Value::Null`
    /// for none) matches the operation's JSON request body.
    pub fn validate_request(
        &self,
        method: &str,
        path: &str,
        body: &Value,
    ) -> Result<(), Vec<String>> {
        let (op, item, concrete, template) = self.operation(method, path).map_err(|e| vec![e])?;
        let mut errs = Vec::new();
        self.check_parameters(op, item, &concrete, &template, query_of(path), &mut errs);
        let request_body = op.get("requestBody").map(|b| self.resolve(b));
        match (request_body, body.is_null()) {
            (None, true) => {}
            (None, false) => errs.push(format!("{method} {template} takes no request body")),
            (Some(rb), true) => {
                if rb.get("required").and_then(Value::as_bool).unwrap_or(false) {
                    errs.push(format!("{method} {template} requires a request body"));
                }
            }
            (Some(rb), false) => match json_schema(rb) {
                Some(schema) => self.check_value(schema, body, Direction::Request, &mut errs),
                None => errs.push(format!("{method} {template} has no JSON request body")),
            },
        }
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    /// Checks a response: `status` is documented for the operation (exactly, as `4XX`, or
    /// `default`) and `body` (`Value::Null` for none) matches its JSON schema.
    pub fn validate_response(
        &self,
        method: &str,
        path: &str,
        status: u16,
        body: &Value,
    ) -> Result<(), Vec<String>> {
        let (op, _, _, template) = self.operation(method, path).map_err(|e| vec![e])?;
        let responses = op.get("responses").and_then(Value::as_object);
        let code = status.to_string();
        let range = format!("{}XX", status / 100);
        let response = responses.and_then(|r| {
            r.get(&code)
                .or_else(|| {
                    r.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(&range))
                        .map(|(_, v)| v)
                })
                .or_else(|| r.get("default"))
        });
        let Some(response) = response.map(|r| self.resolve(r)) else {
            return Err(vec![format!(
                "status {status} is not documented for {method} {template}"
            )]);
        };
        let mut errs = Vec::new();
        match (json_schema(response), body.is_null()) {
            (None, true) => {}
            (None, false) => errs.push(format!(
                "{method} {template} {status} has no JSON body, got one"
            )),
            (Some(_), true) if response.get("content").is_some() => {
                errs.push(format!("{method} {template} {status} requires a body"));
            }
            (Some(_), true) => {}
            (Some(schema), false) => self.check_value(schema, body, Direction::Response, &mut errs),
        }
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    /// Checks `value` against the component schema `name` (`#/components/schemas/<name>`).
    pub fn validate_component(
        &self,
        name: &str,
        value: &Value,
        request: bool,
    ) -> Result<(), Vec<String>> {
        let schema = serde_json::json!({ "$ref": format!("#/components/schemas/{name}") });
        let dir = if request {
            Direction::Request
        } else {
            Direction::Response
        };
        let mut errs = Vec::new();
        self.check_value(&schema, value, dir, &mut errs);
        if errs.is_empty() { Ok(()) } else { Err(errs) }
    }

    /// The scopes the operation of `method` on `path` (concrete or template) needs: every
    /// scope its `security` requirements name (the document's default when it has none).
    pub fn security_scopes(&self, method: &str, path: &str) -> Result<Vec<String>, String> {
        let (op, _, _, _) = self.operation(method, path)?;
        let security = op.get("security").unwrap_or(&self.doc["security"]);
        Ok(security
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|requirement| requirement.values())
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect())
    }

    /// The `description` of the operation of `method` on `path` (concrete or template).
    pub fn description(&self, method: &str, path: &str) -> Result<&str, String> {
        let (op, _, _, _) = self.operation(method, path)?;
        Ok(op
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default())
    }

    /// The template (key of `paths`) a concrete path matches, preferring literal segments.
    pub fn match_path(&self, path: &str) -> Option<&str> {
        let path = path.split('?').next().unwrap_or_default();
        let mut candidates = vec![path.to_owned()];
        for base in &self.base_paths {
            if let Some(rest) = path
                .strip_prefix(base.as_str())
                .filter(|r| r.starts_with('/'))
            {
                candidates.push(rest.to_owned());
            }
        }
        candidates
            .iter()
            .find_map(|c| self.match_segments(&segments(c)))
    }

    fn match_segments(&self, given: &[String]) -> Option<&str> {
        self.templates
            .iter()
            .filter(|(_, t)| t.len() == given.len())
            .filter_map(|(key, t)| {
                let mut literal = 0;
                for (ts, gs) in t.iter().zip(given) {
                    if is_param(ts) {
                        if gs.is_empty() {
                            return None;
                        }
                    } else if ts == gs {
                        literal += 1;
                    } else {
                        return None;
                    }
                }
                Some((literal, key.as_str()))
            })
            .max_by_key(|(literal, _)| *literal)
            .map(|(_, key)| key)
    }

    /// (operation, path item, concrete segments without base path, template).
    fn operation(
        &self,
        method: &str,
        path: &str,
    ) -> Result<(&Value, &Value, Vec<String>, String), String> {
        let template = self
            .match_path(path)
            .ok_or_else(|| format!("no path in the spec matches {path}"))?;
        let item = self.resolve(&self.doc["paths"][template]);
        let op = item.get(method.to_ascii_lowercase()).ok_or_else(|| {
            format!(
                "{} is not an operation of {template}",
                method.to_ascii_uppercase()
            )
        })?;
        let tlen = segments(template).len();
        let mut concrete = segments(path.split('?').next().unwrap_or_default());
        let extra = concrete.len().saturating_sub(tlen);
        concrete.drain(..extra);
        Ok((op, item, concrete, template.to_owned()))
    }

    /// Follows `$ref`s (JSON pointers into this document) until a non-reference value.
    pub(crate) fn resolve<'a>(&'a self, mut v: &'a Value) -> &'a Value {
        for _ in 0..32 {
            let Some(r) = v.get("$ref").and_then(Value::as_str) else {
                return v;
            };
            match self.pointer(r) {
                Some(target) => v = target,
                None => return v,
            }
        }
        v
    }

    pub(crate) fn pointer(&self, reference: &str) -> Option<&Value> {
        // `~0` / `~1` escapes are decoded by `Value::pointer`; `%XX` ones here.
        let pointer = reference.strip_prefix('#')?;
        self.doc
            .pointer(&percent_decode(&pointer.replace('+', "%2B")))
    }
}

/// The JSON schema of a request body or response object, if it has JSON content.
fn json_schema(v: &Value) -> Option<&Value> {
    let content = v.get("content")?.as_object()?;
    content
        .get("application/json")
        .or_else(|| {
            content
                .iter()
                .find(|(k, _)| k.contains("json"))
                .map(|(_, v)| v)
        })?
        .get("schema")
}

fn segments(path: &str) -> Vec<String> {
    path.trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn is_param(segment: &str) -> bool {
    segment.len() > 2 && segment.starts_with('{') && segment.ends_with('}')
}

fn query_of(path: &str) -> &str {
    path.split_once('?').map(|(_, q)| q).unwrap_or_default()
}

/// `/v1` for `https://api.hetzner.cloud/v1`; `None` when the URL has no path.
fn url_path(url: &str) -> Option<String> {
    let after_scheme = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let path = after_scheme.find('/').map(|i| &after_scheme[i..])?;
    let path = path.trim_end_matches('/');
    (!path.is_empty()).then(|| path.to_owned())
}
