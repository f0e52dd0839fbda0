//! Target `rest_request`: what the REST/JSON API reads from any caller holding a token
//! (`levelrail_rest_json::request`): a JSON body, a query string and path parameters, into
//! any request message of the API.
//!
//! Bytes: the message's full name (`levelrail.credentials.v1.SetCredentialRequest`; an
//! unknown name picks one by its length), NUL, the path parameters as `name=value&…`, NUL,
//! the query, NUL, the body.
//!
//! Properties: no panic; an error names a field path made of the message's own field names
//! (or `body`, `query`, `path`) and repeats no value of the body (its keys included), of
//! the query or of the path, nor a parameter's name; an accepted message, written as JSON the way answers are and
//! read again, is the same message.
use std::sync::OnceLock;

use levelrail_rest_json::{FieldError, Json, descriptors, request};
use prost::Message as _;
use prost_reflect::{DescriptorPool, MessageDescriptor, ReflectMessage as _};

use crate::opaque::assert_no_echo;

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(descriptors)
}

/// The request messages of the API's services.
fn requests() -> &'static [MessageDescriptor] {
    static REQUESTS: OnceLock<Vec<MessageDescriptor>> = OnceLock::new();
    REQUESTS.get_or_init(|| {
        pool()
            .services()
            .flat_map(|s| s.methods().map(|m| m.input()).collect::<Vec<_>>())
            .collect()
    })
}

fn message(name: &str) -> MessageDescriptor {
    pool()
        .get_message_by_name(name)
        .unwrap_or_else(|| requests()[name.len() % requests().len()].clone())
}

/// The request of the fields: (message, path, query, body).
fn read(fields: &[String]) -> Result<prost_reflect::DynamicMessage, FieldError> {
    let params: Vec<(String, String)> = form_pairs(&fields[1]);
    let params: Vec<(&str, &str)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let query = (!fields[2].is_empty()).then_some(fields[2].as_str());
    request(
        message(&fields[0]),
        &params,
        query,
        Some(fields[3].as_bytes()),
    )
}

fn form_pairs(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Whether the input is read as a request.
pub fn accepts(data: &[u8]) -> bool {
    crate::padded_fields(data, 4).is_some_and(|f| read(&f).is_ok())
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let Some(fields) = crate::padded_fields(data, 4) else {
        return;
    };
    match read(&fields) {
        Ok(accepted) => {
            let json = serde_json::to_string(&Json(accepted.clone())).expect("an answer is JSON");
            let again = request(accepted.descriptor(), &[], None, Some(json.as_bytes()))
                .expect("a message written as JSON is read again");
            // Compared as encoded (a field set to its default is the same message as one
            // left unset).
            assert!(
                again.encode_to_vec() == accepted.encode_to_vec(),
                "JSON round trip of {json}"
            );
        }
        Err(error) => {
            let desc = message(&fields[0]);
            assert!(
                ["body", "query", "path"].contains(&error.field.as_str())
                    || is_field_path(&desc, &error.field),
                "the error names a field: {error}"
            );
            let mut values: Vec<String> = Vec::new();
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(&fields[3]) {
                strings_and_keys(&json, &mut values);
            }
            for (k, v) in form_pairs(&fields[1]).into_iter().chain(
                form_urlencoded::parse(fields[2].as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned())),
            ) {
                values.push(k);
                values.push(v);
            }
            assert_no_echo(&fields, &values, "a REST request error", |f| {
                read(f).err().map(|e| e.to_string())
            });
        }
    }
}

/// A path of the message's own field names and list indexes (`hetzner.token`,
/// `labels[2]`).
fn is_field_path(desc: &MessageDescriptor, path: &str) -> bool {
    let mut message = Some(desc.clone());
    for segment in path.split('.') {
        let name = segment.split('[').next().unwrap_or_default();
        let Some(field) = message.as_ref().and_then(|m| m.get_field_by_name(name)) else {
            return false;
        };
        message = match field.kind() {
            prost_reflect::Kind::Message(m) => Some(m),
            _ => None,
        };
    }
    true
}

/// Every string and every key in `value`.
fn strings_and_keys(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings_and_keys(v, out)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings_and_keys(v, out);
            }
        }
        _ => {}
    }
}
