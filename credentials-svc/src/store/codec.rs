//! Column encodings shared by the backends: timestamp precision and text form, identity
//! JSON, provider names, and the decoding of raw rows into records (anything unexpected in a
//! row becomes `StoreError::Corrupt`, naming the column but never echoing its value).
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{OffsetDateTime, UtcOffset};

use super::{ApiTokenRecord, CredentialRecord, StoreError};
use crate::domain::{CredentialIdentity, ProviderId, Verification};

/// Normalises a timestamp to what every backend stores: UTC, truncated to microseconds
/// (PostgreSQL's precision). Years outside 1..=9999 are refused because neither RFC 3339
/// text nor every backend can hold them.
pub(crate) fn to_stored_precision(t: OffsetDateTime) -> Result<OffsetDateTime, StoreError> {
    let utc = t
        .checked_to_offset(UtcOffset::UTC)
        .filter(|u| (1..=9999).contains(&u.year()))
        .ok_or_else(|| {
            StoreError::Corrupt("timestamp outside the storable range (years 1-9999)".into())
        })?;
    // Cannot fail: the truncated value is still below one second.
    Ok(utc
        .replace_nanosecond(utc.nanosecond() / 1_000 * 1_000)
        .unwrap_or(utc))
}

/// Formats a timestamp as fixed-width UTC RFC 3339 with six fractional digits, so that
/// stored values also sort correctly as text.
pub(crate) fn format_timestamp(t: OffsetDateTime) -> Result<String, StoreError> {
    let fixed =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");
    to_stored_precision(t)?
        .format(&fixed)
        .map_err(|_| StoreError::Corrupt("timestamp could not be formatted".into()))
}

/// Parses a stored RFC 3339 timestamp; `column` names it in the error.
pub(crate) fn parse_timestamp(text: &str, column: &str) -> Result<OffsetDateTime, StoreError> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|_| StoreError::Corrupt(format!("{column} is not an RFC 3339 timestamp")))
}

/// Sorts credentials into provider card order (`ProviderId` declaration order).
pub(crate) fn in_card_order(mut records: Vec<CredentialRecord>) -> Vec<CredentialRecord> {
    records.sort_by_key(|r| r.provider);
    records
}

/// A `credentials` row as plain column values: what the SQL backends bind and read.
#[derive(Debug)]
pub(crate) struct CredentialRow {
    pub(crate) id: String,
    pub(crate) provider: String,
    pub(crate) envelope: Vec<u8>,
    pub(crate) kek_id: String,
    pub(crate) identity_json: String,
    pub(crate) saved_at: String,
    pub(crate) verified_ok: Option<bool>,
    pub(crate) verified_at: Option<String>,
    pub(crate) verify_message: Option<String>,
    pub(crate) verify_provider_code: Option<String>,
    pub(crate) verify_account: Option<String>,
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
            saved_at: format_timestamp(record.saved_at)?,
            verified_ok: v.ok,
            verified_at: v.at,
            verify_message: v.message,
            verify_provider_code: v.provider_code,
            verify_account: v.account,
        })
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
        }
        .decode(&self.id)?;
        Ok(CredentialRecord {
            saved_at: parse_timestamp(&self.saved_at, "credentials.saved_at")?,
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
    pub(crate) at: Option<String>,
    pub(crate) message: Option<String>,
    pub(crate) provider_code: Option<String>,
    pub(crate) account: Option<String>,
}

impl VerificationColumns {
    /// The column values of a verification (all `None` when there is none).
    pub(crate) fn encode(v: Option<&Verification>) -> Result<Self, StoreError> {
        let Some(v) = v else {
            return Ok(Self::default());
        };
        Ok(VerificationColumns {
            ok: Some(v.ok),
            at: Some(format_timestamp(v.checked_at)?),
            message: Some(v.message.clone()),
            provider_code: Some(v.provider_code.clone()),
            account: Some(v.account.clone()),
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
            checked_at: parse_timestamp(&at, "credentials.verified_at")?,
            message: self.message.unwrap_or_default(),
            provider_code: self.provider_code.unwrap_or_default(),
            account: self.account.unwrap_or_default(),
        }))
    }
}

/// Builds an API token record from its column values.
pub(crate) fn decode_api_token(
    id: String,
    secret_sha256: Vec<u8>,
    label: String,
    created_at: &str,
) -> Result<ApiTokenRecord, StoreError> {
    let secret_sha256: [u8; 32] = secret_sha256.try_into().map_err(|_| {
        StoreError::Corrupt(format!("api token {id} has a hash that is not 32 bytes"))
    })?;
    Ok(ApiTokenRecord {
        created_at: parse_timestamp(created_at, "api_tokens.created_at")?,
        id,
        secret_sha256,
        label,
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
    fn timestamps_are_stored_as_fixed_width_utc_micros() {
        let t = datetime!(2025-01-31 13:00:00.123456789 +01:00);
        let text = format_timestamp(t).expect("formats");
        assert_eq!(text, "2025-01-31T12:00:00.123456Z");
        assert_eq!(
            parse_timestamp(&text, "t").expect("parses"),
            datetime!(2025-01-31 12:00:00.123456 UTC)
        );
        let whole = format_timestamp(datetime!(2025-01-31 12:00:00 UTC)).expect("formats");
        assert_eq!(whole, "2025-01-31T12:00:00.000000Z");
    }

    #[test]
    fn an_unknown_provider_in_a_row_is_corrupt() {
        let row = CredentialRow {
            id: "c1".into(),
            provider: "ovh".into(),
            envelope: vec![1],
            kek_id: "k".into(),
            identity_json: r#"{"kind":"token"}"#.into(),
            saved_at: "2025-01-31T12:00:00.000000Z".into(),
            verified_ok: None,
            verified_at: None,
            verify_message: None,
            verify_provider_code: None,
            verify_account: None,
        };
        let err = row.decode().expect_err("unknown provider must not decode");
        assert!(matches!(err, StoreError::Corrupt(_)), "{err:?}");
        assert!(
            !err.to_string().contains("ovh"),
            "error echoes the value: {err}"
        );
    }
}
