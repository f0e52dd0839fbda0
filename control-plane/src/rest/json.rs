//! Request messages from JSON, path and query; answers to JSON. Errors name the field and
//! never repeat a submitted value (a credential's secret may be the value at fault).
use axum::extract::RawPathParams;
use prost_reflect::{
    DeserializeOptions, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, SerializeOptions,
};
use serde_json::{Map, Value};

use super::call::ErrorBody;

/// How answers are written: proto field names, every field (defaults included, so a
/// client sees `ip_address: ""` rather than nothing), enums by name, 64-bit integers as
/// strings.
pub(super) const SERIALIZE: SerializeOptions = SerializeOptions::new()
    .use_proto_field_name(true)
    .skip_default_fields(false);

/// A message as JSON (see [`SERIALIZE`]).
pub(super) struct Json(pub(super) DynamicMessage);

impl serde::Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_with_options(serializer, &SERIALIZE)
    }
}

/// The request message: the JSON body's fields (when the route takes one), then the query's,
/// then the path's. A field given twice with different values is refused.
pub(super) fn request(
    desc: MessageDescriptor,
    params: &RawPathParams,
    query: Option<&str>,
    body: Option<&[u8]>,
) -> Result<DynamicMessage, ErrorBody> {
    let mut fields = match body {
        Some(bytes) if !bytes.iter().all(u8::is_ascii_whitespace) => {
            match serde_json::from_slice::<Value>(bytes) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err(ErrorBody::invalid("body", "must be a JSON object")),
                // serde_json's syntax errors give a line and column, never the text.
                Err(e) => return Err(ErrorBody::invalid("body", format!("not valid JSON ({e})"))),
            }
        }
        _ => Map::new(),
    };
    for (name, raw) in query_pairs(query) {
        set_param(&desc, &mut fields, &name, &raw, "query")?;
    }
    for (name, raw) in params {
        set_param(&desc, &mut fields, name, raw, "path")?;
    }
    let options = DeserializeOptions::new().deny_unknown_fields(true);
    let value = Value::Object(fields);
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(&value, &mut track);
    DynamicMessage::deserialize_with_options(desc, de, &options).map_err(|_| {
        let path = track.path().to_string();
        let field = if path.is_empty() || path == "." {
            "body".to_owned()
        } else {
            path
        };
        ErrorBody::invalid(
            shown(&field),
            "not a valid value for this field, or not a field of this request",
        )
    })
}

/// A field path as an error may show it: made of field-name characters only (an unknown
/// key could be anything, a secret pasted in the wrong place included).
fn shown(path: &str) -> String {
    let plain = path.len() <= 128
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'));
    if plain {
        path.to_owned()
    } else {
        "body".to_owned()
    }
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
) -> Result<(), ErrorBody> {
    let field = desc
        .get_field_by_name(name)
        .or_else(|| desc.get_field_by_json_name(name))
        .filter(|f| f.is_list() || is_scalar(&f.kind()))
        .ok_or_else(|| {
            ErrorBody::invalid(shown(name), format!("not a {place} parameter of this call"))
        })?;
    let value = scalar(&field, raw).ok_or_else(|| {
        ErrorBody::invalid(field.name(), format!("not a valid {}", kind_name(&field)))
    })?;
    let key = field.name().to_owned();
    let json_key = field.json_name().to_owned();
    if field.is_list() {
        let entry = fields
            .entry(key)
            .or_insert_with(|| Value::Array(Vec::new()));
        match entry {
            Value::Array(items) => items.push(value),
            _ => return Err(ErrorBody::invalid(field.name(), "given twice")),
        }
        return Ok(());
    }
    let existing = fields.get(&key).or_else(|| fields.get(&json_key));
    if existing.is_some_and(|v| !same(v, &value)) {
        return Err(ErrorBody::invalid(
            field.name(),
            format!("differs between the body and the {place}"),
        ));
    }
    fields.remove(&json_key);
    fields.insert(key, value);
    Ok(())
}

fn same(a: &Value, b: &Value) -> bool {
    a == b || a.as_str().zip(b.as_str()).is_some_and(|(x, y)| x == y)
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
pub(super) fn prefix_of(enum_name: &str) -> String {
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
    fn error_paths_show_only_field_name_characters() {
        assert_eq!(
            shown("credential.hetzner.token"),
            "credential.hetzner.token"
        );
        assert_eq!(shown("sk-live abc/def"), "body");
    }
}
