//! The versioned plaintext document a [`CredentialSecret`] is encrypted as, and its strict
//! inverse. Version 1 is one flat JSON object: `"v":1`, `"provider"`, then the variant's
//! fields, with `null` for an absent optional secret.
use std::io;

use levelrail_types::CredentialShape;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};
use zeroize::{Zeroize, Zeroizing};

use super::json::{RawObject, RawValue, parse_object};
use super::{CredentialSecret, FieldError};
use crate::ProviderId;

/// Field path used for errors in a decrypted document.
const FIELD: &str = "plaintext";
/// The only format version written and read.
const FORMAT_VERSION: u64 = 1;
/// A GCP document holds the whole key JSON (≤ 64 KiB) plus its private key, both escaped
/// once more, so it may exceed the input limit; this bound still keeps decoding cheap.
const MAX_PLAINTEXT_BYTES: usize = 512 * 1024;

/// Serializes `secret` into a zeroized buffer sized up front so it never reallocates
/// (a reallocation would leave an unzeroed copy behind); intermediate strings are wiped.
pub(super) fn encode(secret: &CredentialSecret) -> Zeroizing<Vec<u8>> {
    let mut map = Map::new();
    map.insert("v".into(), Value::from(FORMAT_VERSION));
    map.insert("provider".into(), Value::from(secret.provider().as_str()));
    let mut put = |key: &str, value: Value| {
        map.insert(key.to_owned(), value);
    };
    match secret {
        CredentialSecret::Token { token, .. } => put("token", exposed(token)),
        CredentialSecret::Aws {
            access_key_id,
            secret_access_key,
            session_token,
            region,
            role_arn,
            ambient,
        } => {
            put("access_key_id", Value::from(access_key_id.as_str()));
            put(
                "secret_access_key",
                optional(secret_access_key.as_ref().map(exposed)),
            );
            put(
                "session_token",
                optional(session_token.as_ref().map(exposed)),
            );
            put("region", Value::from(region.as_str()));
            put("role_arn", Value::from(role_arn.as_str()));
            put("ambient", Value::from(*ambient));
        }
        CredentialSecret::Azure {
            tenant_id,
            client_id,
            client_secret,
            federated_token_file,
            subscription_id,
            resource_group,
        } => {
            put("tenant_id", Value::from(tenant_id.as_str()));
            put("client_id", Value::from(client_id.as_str()));
            put(
                "client_secret",
                optional(client_secret.as_ref().map(exposed)),
            );
            put(
                "federated_token_file",
                optional(federated_token_file.as_deref().map(Value::from)),
            );
            put("subscription_id", Value::from(subscription_id.as_str()));
            put("resource_group", Value::from(resource_group.as_str()));
        }
        CredentialSecret::Gcp {
            project_id,
            client_email,
            private_key_id,
            private_key,
            token_uri,
            key_json,
        } => {
            put("project_id", Value::from(project_id.as_str()));
            put("client_email", Value::from(client_email.as_str()));
            put("private_key_id", Value::from(private_key_id.as_str()));
            put("private_key", exposed(private_key));
            put("token_uri", Value::from(token_uri.as_str()));
            put("key_json", exposed(key_json));
        }
        CredentialSecret::GcpExternal {
            project_id,
            audience,
            subject_token_type,
            credential_file,
            json_field,
            impersonate,
            key_json,
        } => {
            put("kind", Value::from(EXTERNAL_ACCOUNT));
            put("project_id", Value::from(project_id.as_str()));
            put("audience", Value::from(audience.as_str()));
            put(
                "subject_token_type",
                Value::from(subject_token_type.as_str()),
            );
            put("credential_file", Value::from(credential_file.as_str()));
            put(
                "json_field",
                optional(json_field.as_deref().map(Value::from)),
            );
            put(
                "impersonate",
                optional(impersonate.as_deref().map(Value::from)),
            );
            put("key_json", exposed(key_json));
        }
    }
    let mut doc = Value::Object(map);
    let out = write_exact(&doc);
    scrub(&mut doc);
    out
}

/// Parses a document written by [`encode`] for `provider`; unknown or missing keys, wrong
/// types, another version or another provider are errors.
pub(super) fn decode(provider: ProviderId, bytes: &[u8]) -> Result<CredentialSecret, FieldError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FieldError::new(FIELD, "is not UTF-8"))?;
    let obj = parse_object(FIELD, text, MAX_PLAINTEXT_BYTES)?;
    if !matches!(obj.get("v"), Some(RawValue::UInt(FORMAT_VERSION))) {
        return Err(FieldError::new(obj.path("v"), "must be 1"));
    }
    if obj.req_str("provider")? != provider.as_str() {
        return Err(FieldError::new(
            obj.path("provider"),
            "does not match the expected provider",
        ));
    }
    match provider.credential_shape() {
        CredentialShape::Token(_) => {
            obj.deny_unknown(&["v", "provider", "token"])?;
            Ok(CredentialSecret::Token {
                provider,
                token: secret(&obj, "token")?,
            })
        }
        CredentialShape::AwsKeys => decode_aws(&obj),
        CredentialShape::AzureServicePrincipal => decode_azure(&obj),
        CredentialShape::GoogleServiceAccount => decode_gcp(&obj),
    }
}

fn decode_aws(obj: &RawObject) -> Result<CredentialSecret, FieldError> {
    obj.deny_unknown(&[
        "v",
        "provider",
        "access_key_id",
        "secret_access_key",
        "session_token",
        "region",
        "role_arn",
        "ambient",
    ])?;
    Ok(CredentialSecret::Aws {
        access_key_id: owned(obj, "access_key_id")?,
        secret_access_key: obj
            .nullable_str("secret_access_key")?
            .map(SecretString::from),
        session_token: obj.nullable_str("session_token")?.map(SecretString::from),
        region: owned(obj, "region")?,
        role_arn: owned(obj, "role_arn")?,
        ambient: obj.req_bool("ambient")?,
    })
}

fn decode_azure(obj: &RawObject) -> Result<CredentialSecret, FieldError> {
    obj.deny_unknown(&[
        "v",
        "provider",
        "tenant_id",
        "client_id",
        "client_secret",
        "federated_token_file",
        "subscription_id",
        "resource_group",
    ])?;
    Ok(CredentialSecret::Azure {
        tenant_id: owned(obj, "tenant_id")?,
        client_id: owned(obj, "client_id")?,
        client_secret: obj.nullable_str("client_secret")?.map(SecretString::from),
        federated_token_file: obj.nullable_str("federated_token_file")?.map(str::to_owned),
        subscription_id: owned(obj, "subscription_id")?,
        resource_group: owned(obj, "resource_group")?,
    })
}

/// The `kind` of a GCP workload identity federation document (a key document has none).
const EXTERNAL_ACCOUNT: &str = "external_account";

fn decode_gcp(obj: &RawObject) -> Result<CredentialSecret, FieldError> {
    if obj.get("kind").is_some() {
        return decode_gcp_external(obj);
    }
    obj.deny_unknown(&[
        "v",
        "provider",
        "project_id",
        "client_email",
        "private_key_id",
        "private_key",
        "token_uri",
        "key_json",
    ])?;
    Ok(CredentialSecret::Gcp {
        project_id: owned(obj, "project_id")?,
        client_email: owned(obj, "client_email")?,
        private_key_id: owned(obj, "private_key_id")?,
        private_key: secret(obj, "private_key")?,
        token_uri: owned(obj, "token_uri")?,
        key_json: secret(obj, "key_json")?,
    })
}

fn decode_gcp_external(obj: &RawObject) -> Result<CredentialSecret, FieldError> {
    obj.deny_unknown(&[
        "v",
        "provider",
        "kind",
        "project_id",
        "audience",
        "subject_token_type",
        "credential_file",
        "json_field",
        "impersonate",
        "key_json",
    ])?;
    if obj.req_str("kind")? != EXTERNAL_ACCOUNT {
        return Err(FieldError::new(
            obj.path("kind"),
            "must be external_account",
        ));
    }
    Ok(CredentialSecret::GcpExternal {
        project_id: owned(obj, "project_id")?,
        audience: owned(obj, "audience")?,
        subject_token_type: owned(obj, "subject_token_type")?,
        credential_file: owned(obj, "credential_file")?,
        json_field: obj.nullable_str("json_field")?.map(str::to_owned),
        impersonate: obj.nullable_str("impersonate")?.map(str::to_owned),
        key_json: secret(obj, "key_json")?,
    })
}

fn owned(obj: &RawObject, key: &str) -> Result<String, FieldError> {
    obj.req_str(key).map(str::to_owned)
}

fn secret(obj: &RawObject, key: &str) -> Result<SecretString, FieldError> {
    obj.req_str(key).map(SecretString::from)
}

fn exposed(secret: &SecretString) -> Value {
    Value::String(secret.expose_secret().to_owned())
}

fn optional(value: Option<Value>) -> Value {
    value.unwrap_or(Value::Null)
}

/// Serializes twice: once into a byte counter, then into an exactly sized buffer.
fn write_exact(doc: &Value) -> Zeroizing<Vec<u8>> {
    let mut counter = Counter(0);
    serde_json::to_writer(&mut counter, doc).expect("counting bytes cannot fail");
    let mut out = Zeroizing::new(Vec::with_capacity(counter.0));
    serde_json::to_writer(&mut *out, doc).expect("writing JSON into a Vec cannot fail");
    out
}

/// Wipes every string in a JSON value before it is dropped.
fn scrub(value: &mut Value) {
    match value {
        Value::String(s) => s.zeroize(),
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(map) => map.values_mut().for_each(scrub),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// An `io::Write` that only counts.
struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
