//! The OpenAPI 3.1 document of the REST routes, generated from the route table and the
//! messages' descriptors, by the same rules the JSON is written and read with (see the
//! module above): proto field names, enums by value name, 64-bit integers as strings
//! (numbers accepted), `Timestamp` as RFC 3339, `Duration` as `"1.5s"`, bytes as base64.
use std::collections::{BTreeMap, BTreeSet};

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Value, json};

use super::{Route, method};

/// The document of `routes`.
pub fn document(pool: &DescriptorPool, routes: &[Route]) -> Value {
    let mut schemas = Schemas::default();
    let mut paths: BTreeMap<String, serde_json::Map<String, Value>> = BTreeMap::new();
    for route in routes {
        let Some(rpc) = method(pool, route) else {
            continue;
        };
        let input = rpc.input();
        let in_path = path_params(route.path);
        let mut parameters = Vec::new();
        for name in &in_path {
            if let Some(field) = input.get_field_by_name(name) {
                parameters.push(json!({
                    "name": name,
                    "in": "path",
                    "required": true,
                    "schema": param_schema(&field),
                }));
            }
        }
        if !route.body {
            for field in input.fields() {
                if in_path.contains(&field.name()) || matches!(field.kind(), Kind::Message(_)) {
                    continue;
                }
                parameters.push(json!({
                    "name": field.name(),
                    "in": "query",
                    "required": false,
                    "schema": param_schema(&field),
                }));
            }
        }
        if rpc.is_server_streaming() {
            parameters.push(json!({
                "name": "Last-Event-ID",
                "in": "header",
                "required": false,
                "description": "The id (generation) of the last event received: only later states are sent",
                "schema": {"type": "string", "pattern": "^[0-9]+$"},
            }));
        }
        let mut op = serde_json::Map::new();
        op.insert("operationId".into(), json!(rpc.name()));
        op.insert("summary".into(), json!(route.summary));
        op.insert("tags".into(), json!([rpc.parent_service().name()]));
        op.insert("parameters".into(), Value::Array(parameters));
        if route.body {
            op.insert(
                "requestBody".into(),
                json!({
                    "required": false,
                    "content": {"application/json": {"schema": schemas.reference(&input, false)}},
                }),
            );
        }
        let output = rpc.output();
        let success = if rpc.is_server_streaming() {
            let event = output
                .get_field_by_name("provision")
                .and_then(|f| match f.kind() {
                    Kind::Message(m) => Some(m),
                    _ => None,
                })
                .unwrap_or(output);
            let schema = schemas.reference(&event, true);
            json!({
                "description": format!(
                    "Server-Sent Events: `event: provision`, `id:` the generation, `data:` a {} as JSON; an `error` event with the error JSON if the stream fails",
                    event.name()
                ),
                "content": {"text/event-stream": {
                    "schema": {"type": "string"},
                    "x-levelrail-event-data": schema,
                }},
            })
        } else {
            json!({
                "description": "OK",
                "content": {"application/json": {"schema": schemas.reference(&output, true)}},
            })
        };
        let code = if route.created { "201" } else { "200" };
        let mut responses = json!({
                code: success,
                "429": {
                    "description": "Admission control refused the call; retry after the given seconds",
                    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                },
                "default": {
                    "description": "An error: 400 invalid field or malformed JSON, 401 no or bad token, 403 outside the token's scope, 404 not found, 409 name in use, 413 body too large, 415 not JSON, 5xx server",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                },
        });
        if rpc.is_server_streaming() {
            responses["204"] = json!({
                "description": "Nothing later than Last-Event-ID, and the provision is finished: do not reconnect",
            });
        }
        op.insert("responses".into(), responses);
        paths.entry(route.path.to_owned()).or_default().insert(
            route.method.as_str().to_ascii_lowercase(),
            Value::Object(op),
        );
    }
    let mut components = schemas.finish();
    components.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "description": "The gRPC code's name in lower case: invalid_argument, not_found, already_exists, …"},
                    "message": {"type": "string"},
                    "field": {"type": "string", "description": "The request field at fault"},
                },
            }},
        }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Levelrail node provisioning",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "REST/JSON over the gRPC API: the same calls, tokens and errors. Fields are the proto field names (lowerCamelCase names are accepted too); enums are value names (PROVIDER_HETZNER; a path or query parameter also takes the short name, hetzner); 64-bit integers are strings; timestamps RFC 3339.",
        },
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "An API token (levelrail-cli tokens create)"}},
        },
    })
}

/// The `{name}` parameters of a path.
fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

/// A path or query parameter's schema: an enum also takes its short names.
fn param_schema(field: &FieldDescriptor) -> Value {
    let one = match field.kind() {
        Kind::Enum(e) => {
            let prefix = levelrail_rest_json::prefix_of(e.name());
            let mut names: Vec<String> = e.values().map(|v| v.name().to_owned()).collect();
            names.extend(e.values().filter_map(|v| {
                v.name()
                    .strip_prefix(prefix.as_str())
                    .map(str::to_ascii_lowercase)
            }));
            json!({"type": "string", "enum": names})
        }
        kind => scalar_schema(&kind),
    };
    if field.is_list() {
        json!({"type": "array", "items": one})
    } else {
        one
    }
}

/// A non-message kind's schema.
fn scalar_schema(kind: &Kind) -> Value {
    match kind {
        Kind::Double | Kind::Float => json!({"type": "number"}),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            json!({"type": "integer", "format": "int32"})
        }
        Kind::Uint32 | Kind::Fixed32 => {
            json!({"type": "integer", "format": "int64", "minimum": 0, "maximum": u32::MAX})
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => json!({
            "type": ["string", "integer"], "format": "int64", "pattern": "^-?[0-9]+$",
        }),
        Kind::Uint64 | Kind::Fixed64 => json!({
            "type": ["string", "integer"], "format": "uint64", "pattern": "^[0-9]+$", "minimum": 0,
        }),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::String => json!({"type": "string"}),
        Kind::Bytes => json!({"type": "string", "contentEncoding": "base64"}),
        Kind::Enum(e) => json!({
            "type": "string",
            "enum": e.values().map(|v| v.name().to_owned()).collect::<Vec<_>>(),
        }),
        Kind::Message(m) => json!({"$ref": format!("#/components/schemas/{}", m.full_name())}),
    }
}

/// The message schemas referenced so far. An answer's schema is strict: every field the
/// answers always carry (all but message fields, oneof members and proto3 `optional`
/// ones) is required, and no other property is allowed. A request's (`<message>.input`)
/// requires nothing: a caller sends what it sets, by either field name.
#[derive(Default)]
struct Schemas {
    done: BTreeSet<String>,
    schemas: serde_json::Map<String, Value>,
}

impl Schemas {
    /// `message`'s schema as an answer or as a request: a reference to its component
    /// (added with every message it refers to), or inline for a well-known type.
    fn reference(&mut self, message: &MessageDescriptor, answer: bool) -> Value {
        if let Some(inline) = well_known(message) {
            return inline;
        }
        let name = if answer {
            message.full_name().to_owned()
        } else {
            format!("{}.input", message.full_name())
        };
        if self.done.insert(name.clone()) {
            let mut properties = serde_json::Map::new();
            for field in message.fields() {
                properties.insert(field.name().to_owned(), self.field(&field, answer));
            }
            let mut schema = json!({"type": "object", "properties": properties});
            if answer {
                let required: Vec<String> = message
                    .fields()
                    .filter(|f| !f.supports_presence())
                    .map(|f| f.name().to_owned())
                    .collect();
                schema["required"] = json!(required);
                schema["additionalProperties"] = json!(false);
            }
            self.schemas.insert(name.clone(), schema);
        }
        json!({"$ref": format!("#/components/schemas/{name}")})
    }

    fn field(&mut self, field: &FieldDescriptor, answer: bool) -> Value {
        if field.is_map() {
            let Kind::Message(entry) = field.kind() else {
                return json!({"type": "object"});
            };
            let value = self.field(&entry.map_entry_value_field(), answer);
            return json!({"type": "object", "additionalProperties": value});
        }
        let one = match field.kind() {
            Kind::Message(m) => self.reference(&m, answer),
            kind => scalar_schema(&kind),
        };
        if field.is_list() {
            json!({"type": "array", "items": one})
        } else {
            one
        }
    }

    fn finish(self) -> serde_json::Map<String, Value> {
        self.schemas
    }
}

/// The JSON form of a well-known type, where the mapping gives it one of its own.
fn well_known(message: &MessageDescriptor) -> Option<Value> {
    Some(match message.full_name() {
        "google.protobuf.Timestamp" => json!({"type": "string", "format": "date-time"}),
        "google.protobuf.Duration" => {
            json!({"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?s$"})
        }
        "google.protobuf.Empty" => json!({"type": "object"}),
        "google.protobuf.Struct" => json!({"type": "object"}),
        "google.protobuf.Value" => json!({}),
        "google.protobuf.StringValue" | "google.protobuf.BytesValue" => json!({"type": "string"}),
        "google.protobuf.BoolValue" => json!({"type": "boolean"}),
        "google.protobuf.Int32Value" | "google.protobuf.UInt32Value" => json!({"type": "integer"}),
        "google.protobuf.DoubleValue" | "google.protobuf.FloatValue" => json!({"type": "number"}),
        "google.protobuf.Int64Value" | "google.protobuf.UInt64Value" => {
            json!({"type": ["string", "integer"], "pattern": "^-?[0-9]+$"})
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_documented_with_its_messages() {
        let pool = super::super::descriptors();
        let doc = document(&pool, super::super::ROUTES);
        for route in super::super::ROUTES {
            let op = &doc["paths"][route.path][route.method.as_str().to_ascii_lowercase()];
            assert!(
                op.is_object(),
                "{} {} is documented",
                route.method,
                route.path
            );
        }
        let schemas = &doc["components"]["schemas"];
        let provision = &schemas["levelrail.provisioner.v1.Provision"]["properties"];
        assert_eq!(provision["created_at"]["format"], "date-time");
        assert_eq!(
            provision["generation"]["type"],
            json!(["string", "integer"])
        );
        // Every reference resolves.
        let text = doc.to_string();
        for part in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = part.split('"').next().unwrap_or_default();
            assert!(schemas.get(name).is_some(), "{name} is defined");
        }
    }
}
