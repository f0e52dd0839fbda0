//! AWS failures classified into `ProviderError`: by the Query-protocol error code first
//! (`UnauthorizedOperation`, `RequestLimitExceeded`, `InsufficientInstanceCapacity`,
//! `InvalidInstanceID.NotFound`, …), then by HTTP status. Transport failures (timeouts,
//! refused or dropped connections) are `Unavailable`.
use aws_sdk_ec2::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::{ErrorKind, ProviderError, ProviderId, Reason};

/// Classifies an SDK error of any EC2 or STS operation.
pub(crate) fn classify<E>(err: SdkError<E>) -> ProviderError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match &err {
        SdkError::ServiceError(ctx) => {
            let status = ctx.raw().status().as_u16();
            let (code, message) = (ctx.err().code(), ctx.err().message());
            let kind = kind_of(code.unwrap_or_default(), status);
            let code = code.map_or_else(|| format!("http_{status}"), str::to_owned);
            let message =
                message.map_or_else(|| format!("AWS answered HTTP {status}"), str::to_owned);
            ProviderError::new(ProviderId::Aws, kind, code, &message).with_status(status)
        }
        SdkError::TimeoutError(_) => unavailable("timeout", "the request to AWS timed out"),
        SdkError::DispatchFailure(f) => {
            let what = if f.is_timeout() {
                "timeout"
            } else {
                "unreachable"
            };
            unavailable(
                what,
                &format!("could not reach AWS: {}", DisplayErrorContext(&err)),
            )
        }
        SdkError::ResponseError(_) => unavailable(
            "response_error",
            &format!(
                "AWS's answer could not be read: {}",
                DisplayErrorContext(&err)
            ),
        ),
        _ => ProviderError::new(
            ProviderId::Aws,
            ErrorKind::Other,
            "client",
            &DisplayErrorContext(&err).to_string(),
        ),
    }
}

fn unavailable(code: &str, message: &str) -> ProviderError {
    ProviderError::new(ProviderId::Aws, ErrorKind::Unavailable, code, message)
}

/// The kind of an error answer with `code` and HTTP `status`.
pub(crate) fn kind_of(code: &str, status: u16) -> ErrorKind {
    match code {
        "InvalidInstanceID.NotFound"
        | "InvalidGroup.NotFound"
        | "InvalidKeyPair.NotFound"
        | "InvalidNetworkInterfaceID.NotFound" => ErrorKind::NotFound,
        "UnauthorizedOperation"
        | "AuthFailure"
        | "InvalidClientTokenId"
        | "SignatureDoesNotMatch"
        | "ExpiredToken"
        | "ExpiredTokenException"
        | "RequestExpired"
        | "AccessDenied"
        | "AccessDeniedException"
        | "Blocked"
        | "MissingAuthenticationToken"
        | "UnrecognizedClientException"
        | "OptInRequired"
        | "PendingVerification" => ErrorKind::Unauthorized,
        "RequestLimitExceeded"
        | "Throttling"
        | "ThrottlingException"
        | "TooManyRequestsException" => ErrorKind::RateLimited,
        "InsufficientInstanceCapacity"
        | "InsufficientCapacity"
        | "InstanceLimitExceeded"
        | "VcpuLimitExceeded"
        | "InsufficientFreeAddressesInSubnet"
        | "Unsupported"
        | "MaxSpotInstanceCountExceeded"
        | "InsufficientAddressCapacity" => ErrorKind::CapacityUnavailable,
        "InternalError" | "InternalFailure" | "ServiceUnavailable" | "Unavailable" => {
            ErrorKind::Unavailable
        }
        _ => match status {
            401 | 403 => ErrorKind::Unauthorized,
            429 => ErrorKind::RateLimited,
            500..=599 => ErrorKind::Unavailable,
            400..=499 => ErrorKind::InvalidRequest,
            _ => ErrorKind::Other,
        },
    }
}

/// An operator mistake found before calling AWS.
pub(crate) fn invalid(code: &str, message: &str) -> ProviderError {
    ProviderError::new(ProviderId::Aws, ErrorKind::InvalidRequest, code, message)
}

/// What an AWS error code (or one of this client's own) means beyond its kind.
pub(super) fn reason(code: &str) -> Reason {
    match code {
        "InvalidKeyPair.Duplicate" | "InvalidGroup.Duplicate" | "InvalidPermission.Duplicate" => {
            Reason::AlreadyExists
        }
        "IdempotentParameterMismatch" => Reason::IdempotencyMismatch,
        "DryRunOperation" => Reason::DryRunPassed,
        "InsufficientInstanceCapacity" | "Unsupported" | "InsufficientFreeAddressesInSubnet" => {
            Reason::ZonalCapacity
        }
        "DependencyViolation" => Reason::InUse,
        "ExpiredToken" | "ExpiredTokenException" | "RequestExpired" => Reason::GrantExpired,
        _ => Reason::Unspecified,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_win_over_statuses() {
        assert_eq!(
            kind_of("InvalidInstanceID.NotFound", 400),
            ErrorKind::NotFound
        );
        assert_eq!(
            kind_of("UnauthorizedOperation", 403),
            ErrorKind::Unauthorized
        );
        assert_eq!(kind_of("AuthFailure", 401), ErrorKind::Unauthorized);
        assert_eq!(kind_of("RequestLimitExceeded", 503), ErrorKind::RateLimited);
        assert_eq!(
            kind_of("InsufficientInstanceCapacity", 500),
            ErrorKind::CapacityUnavailable
        );
        assert_eq!(
            kind_of("InvalidParameterValue", 400),
            ErrorKind::InvalidRequest
        );
        assert_eq!(kind_of("", 503), ErrorKind::Unavailable);
        assert_eq!(kind_of("Whatever", 302), ErrorKind::Other);
    }
}
