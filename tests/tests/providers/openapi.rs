//! Unit tests of the OpenAPI validator against a tiny inline document, plus loading the two
//! real provider descriptions.
use serde_json::{Value, json};

use levelrail_sim::openapi::{OpenApi, digitalocean, hcloud};

fn spec() -> OpenApi {
    OpenApi::from_value(json!({
        "openapi": "3.0.3",
        "servers": [{ "url": "https://api.example.test/v1" }],
        "paths": {
            "/servers": {
                "get": {
                    "parameters": [
                        { "in": "query", "name": "page", "schema": { "type": "integer" } },
                        { "$ref": "#/components/parameters/selector" },
                        { "in": "query", "name": "status", "schema": { "type": "array", "items": { "type": "string", "enum": ["on", "off"] } } }
                    ],
                    "responses": { "200": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/list" } } } } }
                },
                "post": {
                    "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/server" } } } },
                    "responses": {
                        "201": { "$ref": "#/components/responses/one" },
                        "4XX": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/error" } } } }
                    }
                }
            },
            "/servers/{id}": {
                "parameters": [{ "in": "path", "name": "id", "required": true, "schema": { "type": "integer" } }],
                "get": { "responses": { "200": { "$ref": "#/components/responses/one" }, "default": { "description": "x" } } },
                "delete": { "responses": { "204": { "description": "gone" } } }
            },
            "/servers/actions": { "get": { "responses": { "200": { "description": "x" } } } }
        },
        "components": {
            "parameters": { "selector": { "in": "query", "name": "label_selector", "schema": { "type": "string" } } },
            "responses": { "one": { "content": { "application/json": { "schema": {
                "type": "object", "required": ["server"], "properties": { "server": { "$ref": "#/components/schemas/server" } }
            } } } } },
            "schemas": {
                "server": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["id", "name", "size", "status"],
                    "properties": {
                        "id": { "type": "integer", "readOnly": true },
                        "name": { "type": "string", "maxLength": 10 },
                        "size": { "type": "number", "minimum": 1 },
                        "status": { "type": "string", "enum": ["on", "off"], "readOnly": true },
                        "ip": { "allOf": [{ "$ref": "#/components/schemas/ip" }], "nullable": true },
                        "labels": { "type": "object", "additionalProperties": { "type": "string" } },
                        "disk": { "oneOf": [{ "type": "integer" }, { "type": "string" }] },
                        "tag": { "anyOf": [{ "type": "string" }, { "type": "array", "items": { "type": "string" } }] }
                    }
                },
                "ip": { "type": "object", "required": ["ip"], "properties": { "ip": { "type": "string" } } },
                "list": { "type": "object", "properties": { "servers": { "type": "array", "items": { "$ref": "#/components/schemas/server" } } } },
                "error": { "type": "object", "required": ["error"], "properties": { "error": { "type": "object", "required": ["code"] } } }
            }
        }
    }))
    .expect("valid inline spec")
}

fn server() -> Value {
    json!({ "id": 1, "name": "web-1", "size": 2.5, "status": "on", "ip": { "ip": "1.2.3.4" }, "labels": { "a": "b" } })
}

fn errors(r: Result<(), Vec<String>>) -> String {
    r.expect_err("expected a validation error").join("\n")
}

#[test]
fn concrete_paths_match_templates_preferring_literal_segments_and_the_base_path_is_optional() {
    let api = spec();
    assert_eq!(api.match_path("/servers/42"), Some("/servers/{id}"));
    assert_eq!(api.match_path("/v1/servers/42?x=1"), Some("/servers/{id}"));
    assert_eq!(api.match_path("/servers/actions"), Some("/servers/actions"));
    assert_eq!(api.match_path("/servers/{id}"), Some("/servers/{id}"));
    assert_eq!(api.match_path("/volumes"), None);
}

#[test]
fn a_valid_request_and_response_pass() {
    let api = spec();
    let body = json!({ "name": "web-1", "size": 2 });
    assert_eq!(
        api.validate_request("POST", "/servers", &body),
        Ok(()),
        "readOnly fields are not required in a request"
    );
    assert_eq!(
        api.validate_response("POST", "/v1/servers", 201, &json!({ "server": server() })),
        Ok(())
    );
    assert_eq!(
        api.validate_response("GET", "/servers/7", 200, &json!({ "server": server() })),
        Ok(())
    );
    assert_eq!(
        api.validate_response("DELETE", "/servers/7", 204, &Value::Null),
        Ok(())
    );
}

#[test]
fn type_mismatches_name_the_json_path_and_integer_is_not_number() {
    let api = spec();
    let mut s = server();
    s["id"] = json!(1.5);
    s["ip"] = json!({ "ip": 4 });
    s["labels"]["a"] = json!(true);
    let e = errors(api.validate_response("GET", "/servers/1", 200, &json!({ "server": s })));
    assert!(
        e.contains("$.server.id: expected integer, got number"),
        "{e}"
    );
    assert!(
        e.contains("$.server.ip.ip: expected string, got integer"),
        "{e}"
    );
    assert!(
        e.contains("$.server.labels.a: expected string, got boolean"),
        "{e}"
    );
}

#[test]
fn required_enum_additional_properties_and_bounds_are_enforced() {
    let api = spec();
    let body = json!({ "name": "a-much-too-long-name", "size": 0, "colour": "red" });
    let e = errors(api.validate_request("POST", "/servers", &body));
    assert!(
        e.contains("$.name: 20 characters, at most 10 allowed"),
        "{e}"
    );
    assert!(e.contains("$.size: 0 is below the minimum 1"), "{e}");
    assert!(e.contains("$.colour: property is not allowed here"), "{e}");
    let mut s = server();
    s["status"] = json!("paused");
    s.as_object_mut().expect("object").remove("name");
    let e = errors(api.validate_response("GET", "/servers/1", 200, &json!({ "server": s })));
    assert!(
        e.contains("$.server: missing required property `name`"),
        "{e}"
    );
    assert!(
        e.contains("$.server.status: \"paused\" is not one of [\"on\",\"off\"]"),
        "{e}"
    );
}

#[test]
fn nullable_and_compositions_are_understood() {
    let api = spec();
    let mut s = server();
    s["ip"] = Value::Null;
    s["disk"] = json!(20);
    s["tag"] = json!(["x"]);
    assert_eq!(
        api.validate_response("GET", "/servers/1", 200, &json!({ "server": s })),
        Ok(())
    );
    s["disk"] = json!(true);
    s["tag"] = json!(3);
    s["name"] = Value::Null;
    let e = errors(api.validate_response("GET", "/servers/1", 200, &json!({ "server": s })));
    assert!(
        e.contains("$.server.disk: matches none of the 2 oneOf schemas"),
        "{e}"
    );
    assert!(
        e.contains("$.server.tag: matches none of the 2 anyOf schemas"),
        "{e}"
    );
    assert!(
        e.contains("$.server.name: expected string, got null"),
        "{e}"
    );
}

#[test]
fn statuses_are_matched_exactly_then_by_range_then_default() {
    let api = spec();
    assert_eq!(
        api.validate_response(
            "POST",
            "/servers",
            422,
            &json!({ "error": { "code": "x" } })
        ),
        Ok(())
    );
    let e = errors(api.validate_response("POST", "/servers", 422, &json!({ "oops": 1 })));
    assert!(e.contains("$: missing required property `error`"), "{e}");
    assert!(
        errors(api.validate_response("POST", "/servers", 500, &Value::Null))
            .contains("status 500 is not documented")
    );
    assert_eq!(
        api.validate_response("GET", "/servers/1", 503, &Value::Null),
        Ok(()),
        "default without content"
    );
    assert!(
        errors(api.validate_response("DELETE", "/servers/1", 204, &json!({})))
            .contains("has no JSON body")
    );
}

#[test]
fn methods_bodies_and_parameters_are_checked() {
    let api = spec();
    assert!(
        errors(api.validate_request("PUT", "/servers/1", &Value::Null))
            .contains("PUT is not an operation of /servers/{id}")
    );
    assert!(
        errors(api.validate_request("POST", "/servers", &Value::Null))
            .contains("requires a request body")
    );
    assert!(
        errors(api.validate_request("GET", "/servers", &json!({})))
            .contains("takes no request body")
    );
    assert_eq!(
        api.validate_request(
            "GET",
            "/servers?page=2&label_selector=a%3Db&status=on&status=off",
            &Value::Null
        ),
        Ok(())
    );
    let e = errors(api.validate_request(
        "GET",
        "/servers?page=two&labelselector=a&status=paused",
        &Value::Null,
    ));
    assert!(
        e.contains("query parameter `page`: expected integer, got string"),
        "{e}"
    );
    assert!(
        e.contains("query parameter `labelselector` is not defined"),
        "{e}"
    );
    assert!(
        e.contains("query parameter `status`: \"paused\" is not one of"),
        "{e}"
    );
    let e = errors(api.validate_request("GET", "/servers/abc", &Value::Null));
    assert!(
        e.contains("path parameter `id`: expected integer, got string"),
        "{e}"
    );
}

#[test]
fn both_provider_descriptions_load_and_validate_a_known_shape() {
    let hetzner = hcloud();
    assert_eq!(hetzner.match_path("/v1/servers/42"), Some("/servers/{id}"));
    let error = json!({ "error": { "code": "unauthorized", "message": "unable to authenticate" } });
    assert_eq!(
        hetzner.validate_response("GET", "/servers", 401, &error),
        Ok(())
    );
    assert!(
        hetzner
            .validate_request("POST", "/ssh_keys", &json!({ "name": "k" }))
            .is_err(),
        "public_key is required"
    );
    let digitalocean = digitalocean();
    assert_eq!(
        digitalocean.match_path("/v2/droplets/42"),
        Some("/v2/droplets/{droplet_id}")
    );
    assert_eq!(
        digitalocean.validate_request(
            "GET",
            "/v2/droplets?tag_name=x&page=2&per_page=50",
            &Value::Null
        ),
        Ok(())
    );
}
