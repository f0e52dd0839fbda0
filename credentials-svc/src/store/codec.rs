//! Column encodings: identity JSON, provider names, and the decoding of rows into records
//! (anything unexpected in a row becomes `StoreError::Corrupt`, naming the column but never
//! echoing its value).
use levelrail_db::{Row, Value, args};
use levelrail_types::PermissionCheck;
use time::OffsetDateTime;

use crate::model::ports::{ApiTokenRecord, CredentialRecord, StoreError};
use crate::model::{CredentialIdentity, ProviderId, Verification};

/// Normalises a timestamp to what every backend stores: UTC, truncated to microseconds.
/// Years outside 1..=9999 are refused.
pub(crate) fn to_stored_precision(t: OffsetDateTime) -> Result<OffsetDateTime, StoreError> {
    levelrail_db::to_stored_precision(t).ok_or_else(|| {
        StoreError::Corrupt("timestamp outside the storable range (years 1-9999)".into())
    })
}

/// Sorts credentials into provider card order (`ProviderId` declaration order).
pub(crate) fn in_card_order(mut records: Vec<CredentialRecord>) -> Vec<CredentialRecord> {
    records.sort_by_key(|r| r.provider);
    records
}

/// A `credentials` row as plain column values.
#[derive(Debug)]
pub(crate) struct CredentialRow {
    pub(crate) id: String,
    pub(crate) provider: String,
    pub(crate) envelope: Vec<u8>,
    pub(crate) kek_id: String,
    pub(crate) identity_json: String,
    pub(crate) saved_at: OffsetDateTime,
    pub(crate) verified_ok: Option<bool>,
    pub(crate) verified_at: Option<OffsetDateTime>,
    pub(crate) verify_message: Option<String>,
    pub(crate) verify_provider_code: Option<String>,
    pub(crate) verify_account: Option<String>,
    pub(crate) verify_permissions: Option<String>,
}

impl CredentialRow {
    /// The column values of `record`.
    pub(crate) fn encode(record: &CredentialRecord) -> Result<Self, StoreError> {
        let identity_json = serde_json::to_string(&record.identity)
            .map_err(|_| StoreError::Corrupt("identity could not be serialised".into()))?;
        let v = VerificationColumns::encode(record.verification.as_ref())?;
        Ok(CredentialRow {
            id: record.id.clone(),
            provider: record.provider.as_str().to_owned(),
            envelope: record.envelope.clone(),
            kek_id: record.kek_id.clone(),
            identity_json,
            saved_at: to_stored_precision(record.saved_at)?,
            verified_ok: v.ok,
            verified_at: v.at,
            verify_message: v.message,
            verify_provider_code: v.provider_code,
            verify_account: v.account,
            verify_permissions: v.permissions,
        })
    }

    /// The columns of a `credentials` row read with `select_credentials!`.
    pub(crate) fn read(row: &Row) -> Result<Self, StoreError> {
        Ok(CredentialRow {
            id: row.text("id")?,
            provider: row.text("provider")?,
            envelope: row.bytes("envelope")?,
            kek_id: row.text("kek_id")?,
            identity_json: row.text("identity_json")?,
            saved_at: row.time("saved_at")?,
            verified_ok: row.opt_bool("verified_ok")?,
            verified_at: row.opt_time("verified_at")?,
            verify_message: row.opt_text("verify_message")?,
            verify_provider_code: row.opt_text("verify_provider_code")?,
            verify_account: row.opt_text("verify_account")?,
            verify_permissions: row.opt_text("verify_permissions")?,
        })
    }

    /// The values of every column, in table order.
    pub(crate) fn args(self) -> [Value; 12] {
        args![
            self.id,
            self.provider,
            self.envelope,
            self.kek_id,
            self.identity_json,
            self.saved_at,
            self.verified_ok,
            self.verified_at,
            self.verify_message,
            self.verify_provider_code,
            self.verify_account,
            self.verify_permissions,
        ]
    }

    /// The record these column values describe.
    pub(crate) fn decode(self) -> Result<CredentialRecord, StoreError> {
        let provider = self.provider.parse::<ProviderId>().map_err(|_| {
            StoreError::Corrupt(format!("credential {} has an unknown provider", self.id))
        })?;
        let identity: CredentialIdentity =
            serde_json::from_str(&self.identity_json).map_err(|_| {
                StoreError::Corrupt(format!(
                    "credential {} has unreadable identity_json",
                    self.id
                ))
            })?;
        let verification = VerificationColumns {
            ok: self.verified_ok,
            at: self.verified_at,
            message: self.verify_message,
            provider_code: self.verify_provider_code,
            account: self.verify_account,
            permissions: self.verify_permissions,
        }
        .decode(&self.id)?;
        Ok(CredentialRecord {
            saved_at: self.saved_at,
            id: self.id,
            provider,
            envelope: self.envelope,
            kek_id: self.kek_id,
            identity,
            verification,
        })
    }
}

/// The nullable verification columns of a `credentials` row.
#[derive(Debug, Default)]
pub(crate) struct VerificationColumns {
    pub(crate) ok: Option<bool>,
    pub(crate) at: Option<OffsetDateTime>,
    pub(crate) message: Option<String>,
    pub(crate) provider_code: Option<String>,
    pub(crate) account: Option<String>,
    /// JSON: `[{"name": …, "granted": …}, …]`.
    pub(crate) permissions: Option<String>,
}

/// One checked permission as stored.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredPermission {
    name: String,
    granted: bool,
}

impl VerificationColumns {
    /// The column values of a verification (all `None` when there is none).
    pub(crate) fn encode(v: Option<&Verification>) -> Result<Self, StoreError> {
        let Some(v) = v else {
            return Ok(Self::default());
        };
        Ok(VerificationColumns {
            ok: Some(v.ok),
            at: Some(to_stored_precision(v.checked_at)?),
            message: Some(v.message.clone()),
            provider_code: Some(v.provider_code.clone()),
            account: Some(v.account.clone()),
            permissions: Some(permissions_json(&v.permissions)),
        })
    }

    /// The verification these columns describe: `None` when `verified_ok` is NULL.
    fn decode(self, id: &str) -> Result<Option<Verification>, StoreError> {
        let Some(ok) = self.ok else {
            return Ok(None);
        };
        let at = self.at.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "credential {id} has verified_ok but no verified_at"
            ))
        })?;
        Ok(Some(Verification {
            ok,
            checked_at: at,
            message: self.message.unwrap_or_default(),
            provider_code: self.provider_code.unwrap_or_default(),
            account: self.account.unwrap_or_default(),
            permissions: match self.permissions {
                None => Vec::new(),
                Some(json) => serde_json::from_str::<Vec<StoredPermission>>(&json)
                    .map_err(|_| {
                        StoreError::Corrupt(format!(
                            "credential {id} has verify_permissions that are not a JSON list"
                        ))
                    })?
                    .into_iter()
                    .map(|p| PermissionCheck {
                        name: p.name,
                        granted: p.granted,
                    })
                    .collect(),
            },
        }))
    }
}

fn permissions_json(checks: &[PermissionCheck]) -> String {
    let stored: Vec<StoredPermission> = checks
        .iter()
        .map(|p| StoredPermission {
            name: p.name.clone(),
            granted: p.granted,
        })
        .collect();
    serde_json::to_string(&stored).unwrap_or_else(|_| "[]".into())
}

/// Decodes an `api_tokens` row.
pub(crate) fn read_api_token(row: &Row) -> Result<ApiTokenRecord, StoreError> {
    let id = row.text("id")?;
    let secret_sha256: [u8; 32] = row.bytes("secret_sha256")?.try_into().map_err(|_| {
        StoreError::Corrupt(format!("api token {id} has a hash that is not 32 bytes"))
    })?;
    let scope = row.text("scope")?;
    Ok(ApiTokenRecord {
        scope: scope.parse().map_err(|_| {
            StoreError::Corrupt(format!("api token {id} has an unknown scope `{scope}`"))
        })?,
        expires_at: row.opt_time("expires_at")?,
        created_at: row.time("created_at")?,
        revoked_at: row.opt_time("revoked_at")?,
        label: row.text("label")?,
        secret_sha256,
        id,
    })
}

/// Converts a SQL `COUNT(*)` to `u64`.
pub(crate) fn count_to_u64(n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| StoreError::Corrupt("negative row count".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn an_unknown_provider_in_a_row_is_corrupt() {
        let row = CredentialRow {
            id: "c1".into(),
            provider: "ovh".into(),
            envelope: vec![1],
            kek_id: "k".into(),
            identity_json: r#"{"kind":"token"}"#.into(),
            saved_at: datetime!(2025-01-31 12:00:00 UTC),
            verified_ok: None,
            verified_at: None,
            verify_message: None,
            verify_provider_code: None,
            verify_account: None,
            verify_permissions: None,
        };
        let err = row.decode().expect_err("unknown provider must not decode");
        assert!(matches!(err, StoreError::Corrupt(_)), "{err:?}");
        assert!(
            !err.to_string().contains("ovh"),
            "error echoes the value: {err}"
        );
    }
}
