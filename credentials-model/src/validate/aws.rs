//! AWS credentials: a static access key (long-term `AKIA…` or temporary `ASIA…` with its
//! session token) or the control plane's ambient identity, plus region and optional role.
use secrecy::SecretString;
use zeroize::Zeroizing;

use super::text::{all_of, check_len, check_size, is_base64, is_upper_alnum, require_graphic};
use super::{CredentialSecret, FieldError};

/// Region used when the operator leaves it empty.
const DEFAULT_REGION: &str = "us-east-1";
/// Largest accepted session token, in bytes.
const MAX_SESSION_TOKEN_BYTES: usize = 4096;

/// The raw AWS fields, borrowed from the operator input.
pub(super) struct AwsInput<'a> {
    pub(super) access_key_id: Zeroizing<String>,
    pub(super) secret_access_key: &'a str,
    pub(super) session_token: &'a str,
    pub(super) region: Zeroizing<String>,
    pub(super) role_arn: Zeroizing<String>,
    pub(super) use_ambient_credentials: bool,
}

/// Validates the AWS fields; every string is size-checked raw, then trimmed.
pub(super) fn parse(input: &AwsInput<'_>) -> Result<CredentialSecret, FieldError> {
    check_size("aws.access_key_id", &input.access_key_id)?;
    check_size("aws.secret_access_key", input.secret_access_key)?;
    check_size("aws.session_token", input.session_token)?;
    check_size("aws.region", &input.region)?;
    check_size("aws.role_arn", &input.role_arn)?;
    let key_id = input.access_key_id.trim_ascii();
    let secret = input.secret_access_key.trim_ascii();
    let session = input.session_token.trim_ascii();

    let (secret_access_key, session_token) = if input.use_ambient_credentials {
        if !key_id.is_empty() || !secret.is_empty() || !session.is_empty() {
            return Err(FieldError::new(
                "aws.use_ambient_credentials",
                "cannot be combined with an access key id, secret access key or session token",
            ));
        }
        (None, None)
    } else {
        check_access_key_id(key_id)?;
        check_secret_access_key(secret)?;
        let session = check_session_token(key_id, session)?;
        (Some(SecretString::from(secret)), session)
    };
    Ok(CredentialSecret::Aws {
        access_key_id: key_id.to_owned(),
        secret_access_key,
        session_token,
        region: region(input.region.trim_ascii())?,
        role_arn: role_arn(input.role_arn.trim_ascii())?,
        ambient: input.use_ambient_credentials,
    })
}

/// Only `AKIA` (long-term) and `ASIA` (temporary) ids can sign requests; the other
/// IAM unique-id prefixes (`AIDA`, `AROA`, …) name principals, not keys.
fn check_access_key_id(key_id: &str) -> Result<(), FieldError> {
    const FIELD: &str = "aws.access_key_id";
    if key_id.is_empty() {
        return Err(FieldError::new(
            FIELD,
            "is required unless use_ambient_credentials is set",
        ));
    }
    require_graphic(FIELD, key_id)?;
    let prefixed = key_id.starts_with("AKIA") || key_id.starts_with("ASIA");
    if !prefixed || !all_of(key_id, 16, 128, is_upper_alnum) {
        return Err(FieldError::new(
            FIELD,
            "must be 16 to 128 uppercase letters or digits starting with AKIA or ASIA",
        ));
    }
    Ok(())
}

fn check_secret_access_key(secret: &str) -> Result<(), FieldError> {
    const FIELD: &str = "aws.secret_access_key";
    if secret.is_empty() {
        return Err(FieldError::new(
            FIELD,
            "is required unless use_ambient_credentials is set",
        ));
    }
    require_graphic(FIELD, secret)?;
    if !all_of(secret, 16, 128, is_base64) {
        return Err(FieldError::new(
            FIELD,
            "must be 16 to 128 characters of A-Z, a-z, 0-9, /, + or =",
        ));
    }
    Ok(())
}

/// A temporary (`ASIA`) key is useless without its session token, and a long-term
/// (`AKIA`) key never has one; either mismatch is an operator mistake.
fn check_session_token(key_id: &str, session: &str) -> Result<Option<SecretString>, FieldError> {
    const FIELD: &str = "aws.session_token";
    let temporary = key_id.starts_with("ASIA");
    if session.is_empty() {
        return if temporary {
            Err(FieldError::new(
                FIELD,
                "is required for a temporary (ASIA) access key",
            ))
        } else {
            Ok(None)
        };
    }
    if !temporary {
        return Err(FieldError::new(
            FIELD,
            "must be empty for a long-term (AKIA) access key",
        ));
    }
    check_len(FIELD, session, MAX_SESSION_TOKEN_BYTES)?;
    require_graphic(FIELD, session)?;
    if !session.bytes().all(is_base64) {
        return Err(FieldError::new(
            FIELD,
            "must contain only base64 characters",
        ));
    }
    Ok(Some(SecretString::from(session)))
}

/// `^[a-z]{2}(-[a-z]+)+-\d$`, defaulting to `us-east-1` when empty.
fn region(region: &str) -> Result<String, FieldError> {
    if region.is_empty() {
        return Ok(DEFAULT_REGION.to_owned());
    }
    if !is_region(region) {
        return Err(FieldError::new(
            "aws.region",
            "must be an AWS region name such as us-east-1 or ap-southeast-2",
        ));
    }
    Ok(region.to_owned())
}

fn is_region(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    let lower = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase());
    match parts.as_slice() {
        [area, middle @ .., number] if !middle.is_empty() => {
            area.len() == 2
                && lower(area)
                && middle.iter().all(lower)
                && number.len() == 1
                && number.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// Optional; when set, `^arn:aws(-cn|-us-gov)?:iam::\d{12}:role/[\w+=,.@/-]{1,512}$` with a
/// role name (last path segment) of 1 to 64 characters.
fn role_arn(arn: &str) -> Result<String, FieldError> {
    if arn.is_empty() || is_role_arn(arn) {
        return Ok(arn.to_owned());
    }
    Err(FieldError::new(
        "aws.role_arn",
        "must be an IAM role ARN, arn:<aws|aws-cn|aws-us-gov>:iam::<12-digit account>:role/<name>, \
         with a role name of at most 64 characters",
    ))
}

fn is_role_arn(arn: &str) -> bool {
    let Some(rest) = arn.strip_prefix("arn:") else {
        return false;
    };
    let Some(rest) = ["aws:", "aws-cn:", "aws-us-gov:"]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
    else {
        return false;
    };
    let Some((account, path)) = rest
        .strip_prefix("iam::")
        .and_then(|r| r.split_at_checked(12))
    else {
        return false;
    };
    let Some(path) = path.strip_prefix(":role/") else {
        return false;
    };
    let name = path.rsplit('/').next().unwrap_or_default();
    account.bytes().all(|b| b.is_ascii_digit())
        && all_of(path, 1, 512, |b| {
            b.is_ascii_alphanumeric() || b"_+=,.@/-".contains(&b)
        })
        && (1..=64).contains(&name.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_matcher_follows_the_documented_shape() {
        for ok in [
            "us-east-1",
            "ap-southeast-2",
            "us-gov-west-1",
            "eu-central-1",
        ] {
            assert!(is_region(ok), "{ok}");
        }
        for bad in [
            "us-east",
            "useast-1",
            "us-east-12",
            "US-EAST-1",
            "u-east-1",
            "us--1",
            "us-1",
        ] {
            assert!(!is_region(bad), "{bad}");
        }
    }

    #[test]
    fn role_arn_matcher_checks_partition_account_and_name() {
        assert!(is_role_arn("arn:aws:iam::123456789012:role/levelrail"));
        assert!(is_role_arn(
            "arn:aws-us-gov:iam::123456789012:role/path/to/name"
        ));
        assert!(is_role_arn(
            "arn:aws-cn:iam::123456789012:role/a+b=c,d.e@f_g-h"
        ));
        assert!(!is_role_arn("arn:aws:iam::123456789012:role/path/"));
        assert!(!is_role_arn("arn:aws:iam::12345678901x:role/name"));
        assert!(!is_role_arn(&format!(
            "arn:aws:iam::123456789012:role/{}",
            "n".repeat(65)
        )));
        assert!(!is_role_arn("arn:aws:iam::123456789012:role/na me"));
        assert!(!is_role_arn("arn:aws:iam::123456789012:role/"));
    }
}
