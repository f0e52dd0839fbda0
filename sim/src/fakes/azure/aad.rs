//! The fake Azure AD v2.0 token endpoint (`POST /{tenant}/oauth2/v2.0/token`): the client
//! credentials grant with a client secret, or with a JWT client assertion
//! (`urn:ietf:params:oauth:client-assertion-type:jwt-bearer`, workload identity federation).
//! Errors use AAD's `{"error", "error_description", "error_codes"}` shape.
use std::time::SystemTime;

use serde_json::{Value, json};

use super::Shared;
use crate::fakes::edge::{Call, Reply, lock};

/// The only scope accepted: ARM.
pub(crate) const ARM_SCOPE: &str = "https://management.azure.com/.default";
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

pub(crate) fn token(shared: &Shared, call: &Call, tenant: &str) -> Reply {
    if call.method != "POST" {
        return aad_error(
            405,
            "invalid_request",
            900561,
            "the token endpoint requires POST",
        );
    }
    if !call
        .content_type
        .starts_with("application/x-www-form-urlencoded")
    {
        return aad_error(
            400,
            "invalid_request",
            900144,
            "the request body must be application/x-www-form-urlencoded",
        );
    }
    let form = call.form();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if tenant != shared.cfg.tenant_id {
        return aad_error(
            400,
            "invalid_request",
            90002,
            &format!("AADSTS90002: Tenant '{tenant}' not found."),
        );
    }
    if field("grant_type") != Some("client_credentials") {
        return aad_error(
            400,
            "unsupported_grant_type",
            70003,
            "AADSTS70003: the app requested an unsupported grant type",
        );
    }
    if field("client_id") != Some(shared.cfg.client_id.as_str()) {
        return aad_error(
            400,
            "unauthorized_client",
            700016,
            "AADSTS700016: Application not found in the directory.",
        );
    }
    if field("scope") != Some(ARM_SCOPE) {
        return aad_error(
            400,
            "invalid_scope",
            70011,
            "AADSTS70011: The provided value for the input parameter 'scope' is not valid.",
        );
    }
    match (
        field("client_secret"),
        field("client_assertion_type"),
        field("client_assertion"),
    ) {
        (Some(secret), None, None) if secret == shared.cfg.client_secret => {}
        (Some(_), None, None) => {
            return aad_error(
                401,
                "invalid_client",
                7000215,
                "AADSTS7000215: Invalid client secret provided.",
            );
        }
        (None, Some(JWT_BEARER), Some(assertion)) => {
            let accepted = lock(&shared.settings).accepted_assertions.clone();
            let shaped =
                assertion.split('.').count() == 3 && !assertion.contains(char::is_whitespace);
            if !shaped || accepted.is_some_and(|a| !a.iter().any(|x| x == assertion)) {
                return aad_error(
                    400,
                    "invalid_client",
                    700024,
                    "AADSTS700024: Client assertion is not within its valid time range or is not trusted.",
                );
            }
        }
        _ => {
            return aad_error(
                400,
                "invalid_client",
                7000218,
                "AADSTS7000218: The request body must contain the following parameter: 'client_assertion' or 'client_secret'.",
            );
        }
    }
    let lifetime = shared.cfg.token_lifetime;
    let access = {
        let mut inv = lock(&shared.inventory);
        let n = inv.next();
        let token = format!("fake-aad-{n:06}-{}", uuid::Uuid::new_v4().simple());
        inv.tokens
            .insert(token.clone(), SystemTime::now() + lifetime);
        token
    };
    Reply::json(
        200,
        json!({
            "token_type": "Bearer",
            "expires_in": lifetime.as_secs(),
            "ext_expires_in": lifetime.as_secs(),
            "access_token": access,
        }),
    )
}

fn aad_error(status: u16, error: &str, code: u64, description: &str) -> Reply {
    let body: Value = json!({
        "error": error,
        "error_description": description,
        "error_codes": [code],
        "timestamp": "2026-01-01 00:00:00Z",
        "trace_id": "00000000-0000-0000-0000-000000000000",
        "correlation_id": "00000000-0000-0000-0000-000000000000",
    });
    Reply::json(status, body)
}
