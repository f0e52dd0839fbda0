//! REST/JSON requests and answers of the Levelrail API, by the proto3 JSON mapping of its
//! messages (from their descriptors, so every message of every service is covered):
//! request messages from a JSON body, query and path; answers to JSON. Fields are emitted
//! with their proto names (`snake_case`) and accepted with those or their `lowerCamelCase`
//! JSON names; enums are value names (a path or query parameter also takes the short name);
//! 64-bit integers are strings; timestamps RFC 3339.
//!
//! Errors name the field and never repeat a submitted value (a credential's secret may be
//! the value at fault, or a key it was pasted under). The HTTP layer is the control
//! plane's; this crate is pure (fuzzed: `fuzz/`, target `rest_request`).
use prost_reflect::{
    DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, SerializeOptions,
};
use serde_json::{Map, Value};

/// A request that cannot be read: the field at fault (`body` for the body as a whole) and
/// what is wrong, in words that repeat nothing submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

mod descriptors;

pub use descriptors::descriptors;

/// How answers are written: proto field names, every field (defaults included, so a
/// client sees `ip_address: ""` rather than nothing), enums by name, 64-bit integers as
/// strings.
pub const SERIALIZE: SerializeOptions = SerializeOptions::new()
    .use_proto_field_name(true)
    .skip_default_fields(false);

/// A message as JSON (see [`SERIALIZE`]).
#[derive(Debug)]
pub struct Json(pub DynamicMessage);

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_with_options(serializer, &SERIALIZE)
    }
}

/// The request message: the JSON body's fields (when the route takes one), then the query's,
/// then the path's. A field given twice with different values is refused.
pub fn request(
    desc: MessageDescriptor,
    params: &[(&str, &str)],
    query: Option<&str>,
    body: Option<&[u8]>,
) -> Result<DynamicMessage, FieldError> {
    let mut fields = match body {
        Some(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => {
            match serde_json::from_slice::<Value>(bytes) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err(FieldError::new("body", "must be a JSON object")),
                // serde_json's syntax errors give a line and column, never the text.
                Err(e) => return Err(FieldError::new("body", format!("not valid JSON ({e})"))),
            }
        }
        _ => Map::new(),
    };
    for (name, raw) in query_pairs(query) {
        set_param(&desc, &mut fields, &name, &raw, "query")?;
    }
    for &(name, raw) in params {
        set_param(&desc, &mut fields, name, raw, "path")?;
    }
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    let value = Value::Object(fields);
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(&value, &mut track);
    DynamicMessage::deserialize_with_options(desc.clone(), de, &options).map_err(|_| {
        let (field, known) = known_path(&desc, &track.path());
        FieldError::new(
            field,
            if known {
                "not a valid value for this field"
            } else {
                "holds a field this request does not have"
            },
        )
    })
}

/// The part of an error's path made of this request's own field names (and list indexes),
/// `body` when none, and whether the whole path was: a key that names no field is never
/// shown, nor any key of a map field (both are the caller's text, perhaps a secret pasted
/// in the wrong place).
fn known_path(desc: &MessageDescriptor, path: &serde_path_to_error::Path) -> (String, bool) {
    use serde_path_to_error::Segment;
    let mut shown = String::new();
    let mut message = Some(desc.clone());
    let mut list = false;
    let mut known = true;
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } if list => {
                shown.push_str(&format!("[{index}]"));
                list = false;
            }
            Segment::Map { key } => {
                let field = message.as_ref().and_then(|m| {
                    m.get_field_by_name(key)
                        .or_else(|| m.get_field_by_json_name(key))
                });
                let Some(field) = field else {
                    known = false;
                    break;
                };
                if !shown.is_empty() {
                    shown.push('.');
                }
                shown.push_str(field.name());
                if field.is_map() {
                    break;
                }
                list = field.is_list();
                message = match field.kind() {
                    Kind::Message(m) => Some(m),
                    _ => None,
                };
            }
            _ => break,
        }
    }
    if shown.is_empty() {
        shown.push_str("body");
    }
    (shown, known)
}

/// The field an unknown parameter name was meant for, when it names one but for case and
/// `_` (`PageSize`, `pagesize`); else only where it was (`query`, `path`): the name itself
/// is the caller's text and is never shown.
fn shown_param(desc: &MessageDescriptor, name: &str, place: &str) -> String {
    let folded = |s: &str| s.replace('_', "").to_ascii_lowercase();
    let name = folded(name);
    desc.fields()
        .find(|f| folded(f.name()) == name)
        .map_or_else(|| place.to_owned(), |f| f.name().to_owned())
}

/// The query's `name=value` pairs, percent-decoded (`+` as a space).
fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Sets the field a path or query parameter names, converted to its JSON form.
fn set_param(
    desc: &MessageDescriptor,
    fields: &mut Map<String, Value>,
    name: &str,
    raw: &str,
    place: &str,
) -> Result<(), FieldError> {
    let field = desc
        .get_field_by_name(name)
        .or_else(|| desc.get_field_by_json_name(name))
        .filter(|f| f.is_list() || is_scalar(&f.kind()))
        .ok_or_else(|| {
            FieldError::new(
                shown_param(desc, name, place),
                format!("names no {place} parameter of this call"),
            )
        })?;
    let value = scalar(&field, raw).ok_or_else(|| {
        FieldError::new(field.name(), format!("not a valid {}", kind_name(&field)))
    })?;
    let key = field.name().to_owned();
    let json_key = field.json_name().to_owned();
    if field.is_list() {
        let entry = fields
            .entry(key)
            .or_insert_with(|| Value::Array(Vec::new()));
        match entry {
            Value::Array(items) => items.push(value),
            _ => return Err(FieldError::new(field.name(), "given twice")),
        }
        return Ok(());
    }
    let existing = fields.get(&key).or_else(|| fields.get(&json_key));
    if existing.is_some_and(|v| *v != value) {
        return Err(FieldError::new(
            field.name(),
            format!("differs between the body and the {place}"),
        ));
    }
    fields.remove(&json_key);
    fields.insert(key, value);
    Ok(())
}

fn is_scalar(kind: &Kind) -> bool {
    !matches!(kind, Kind::Message(_))
}

fn kind_name(field: &FieldDescriptor) -> &'static str {
    match field.kind() {
        Kind::Bool => "boolean (true or false)",
        Kind::Enum(_) => "value of this field",
        Kind::String | Kind::Bytes => "string",
        Kind::Double | Kind::Float => "number",
        _ => "integer",
    }
}

/// A parameter's text as the JSON value of `field`'s kind; an enum takes its value's name
/// (`PROVIDER_HETZNER`) or short name (`hetzner`), in any case.
fn scalar(field: &FieldDescriptor, raw: &str) -> Option<Value> {
    Some(match field.kind() {
        Kind::Bool => Value::Bool(match raw {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return None,
        }),
        Kind::String | Kind::Bytes => Value::String(raw.to_owned()),
        Kind::Enum(e) => {
            let upper = raw.to_ascii_uppercase();
            let value = e.values().find(|v| {
                v.name() == upper
                    || v.name()
                        .strip_prefix(prefix_of(e.name()).as_str())
                        .is_some_and(|short| short == upper)
            })?;
            Value::String(value.name().to_owned())
        }
        Kind::Double | Kind::Float => Value::from(raw.parse::<f64>().ok()?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::String(raw.parse::<i64>().ok()?.to_string())
        }
        Kind::Uint64 | Kind::Fixed64 => Value::String(raw.parse::<u64>().ok()?.to_string()),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::from(raw.parse::<i32>().ok()?),
        Kind::Uint32 | Kind::Fixed32 => Value::from(raw.parse::<u32>().ok()?),
        Kind::Message(_) => return None,
    })
}

/// The prefix of an enum's value names: `ProvisionStatus` → `PROVISION_STATUS_`.
pub fn prefix_of(enum_name: &str) -> String {
    let mut out = String::with_capacity(enum_name.len() + 4);
    for (i, c) in enum_name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out.push('_');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_prefixes_follow_the_proto_style_guide() {
        assert_eq!(prefix_of("Provider"), "PROVIDER_");
        assert_eq!(prefix_of("ProvisionStatus"), "PROVISION_STATUS_");
    }

    #[test]
    fn errors_name_known_fields_and_never_a_callers_key() {
        let pool = descriptors();
        let set = pool
            .get_message_by_name("levelrail.credentials.v1.SetCredentialRequest")
            .expect("message");
        let refused = |body: Value| {
            request(set.clone(), &[], None, Some(body.to_string().as_bytes())).expect_err("refused")
        };
        let wrong_type = refused(serde_json::json!({"hetzner": {"token": ["a"]}}));
        assert_eq!(wrong_type.field, "hetzner.token");
        let unknown = refused(serde_json::json!({"hetzner": {"sk_live_9f8e7d6c5b4a": 1}}));
        assert_eq!(unknown.field, "hetzner");
        assert!(!unknown.to_string().contains("sk_live"), "{unknown}");
        let list = pool
            .get_message_by_name("levelrail.provisioner.v1.ListProvisionsRequest")
            .expect("message");
        assert_eq!(shown_param(&list, "PageSize", "query"), "page_size");
        assert_eq!(shown_param(&list, "sk_live_9f8e7d6c5b4a", "query"), "query");
    }
}
