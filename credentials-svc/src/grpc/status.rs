//! The one mapping of the model's errors to `tonic::Status`. Internal details are logged with
//! their cause chain and replaced by a fixed message.
use tonic::Status;
use tracing::warn;

use crate::model::CredentialsError;
use crate::model::ports::StoreError;

impl From<CredentialsError> for Status {
    fn from(e: CredentialsError) -> Self {
        match e {
            CredentialsError::InvalidArgument(f) => {
                let mut s = Status::invalid_argument(format!("{}: {}", f.field, f.message));
                if let Ok(v) = f.field.parse() {
                    s.metadata_mut().insert("x-levelrail-field", v);
                }
                s
            }
            CredentialsError::NotConnected(p) => Status::failed_precondition(format!(
                "no credential is stored for {p}; connect it under Settings › Cloud node providers"
            )),
            CredentialsError::FailedPrecondition(m) => Status::failed_precondition(m),
            CredentialsError::NotFound(m) => Status::not_found(m),
            CredentialsError::PermissionDenied(m) => Status::permission_denied(m),
            CredentialsError::Unavailable(m) => Status::unavailable(m),
            CredentialsError::Store(StoreError::Unavailable(source)) => {
                warn!(error = %source, "credential store unavailable");
                Status::unavailable("credential store unavailable")
            }
            CredentialsError::Crypto(c) => {
                warn!(error = %c, "stored credential failed to decrypt");
                Status::data_loss(
                    "the stored credential cannot be decrypted; store it again (see server log)",
                )
            }
            other => {
                warn!(error = ?other, "internal error");
                Status::internal("internal error")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;
    use crate::crypto::CryptoError;
    use crate::model::{FieldError, ProviderId};

    #[test]
    fn every_domain_error_maps_to_its_code_without_internal_detail() {
        let cases: Vec<(CredentialsError, Code)> = vec![
            (
                FieldError {
                    field: "aws.region".into(),
                    message: "bad".into(),
                }
                .into(),
                Code::InvalidArgument,
            ),
            (
                CredentialsError::NotConnected(ProviderId::Aws),
                Code::FailedPrecondition,
            ),
            (
                CredentialsError::FailedPrecondition("x".into()),
                Code::FailedPrecondition,
            ),
            (
                CredentialsError::PermissionDenied("x".into()),
                Code::PermissionDenied,
            ),
            (CredentialsError::Unavailable("x".into()), Code::Unavailable),
            (CryptoError::Decrypt.into(), Code::DataLoss),
            (
                StoreError::Corrupt("row secret-ish".into()).into(),
                Code::Internal,
            ),
            (anyhow::anyhow!("boom detail").into(), Code::Internal),
        ];
        for (err, code) in cases {
            let s = Status::from(err);
            assert_eq!(s.code(), code);
            assert!(!s.message().contains("detail") && !s.message().contains("secret-ish"));
        }
    }

    #[test]
    fn invalid_argument_names_the_field() {
        let s = Status::from(CredentialsError::from(FieldError {
            field: "gcp.json.token_uri".into(),
            message: "must be Google's token endpoint".into(),
        }));
        assert!(s.message().starts_with("gcp.json.token_uri: "));
        assert_eq!(
            s.metadata().get("x-levelrail-field").unwrap(),
            "gcp.json.token_uri"
        );
    }
}
