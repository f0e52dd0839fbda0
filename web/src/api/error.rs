//! `ApiError`: what the app shows for a failed call. Built from a gRPC-web status here and
//! nowhere else; it keeps the field path of validation errors so forms can show the message
//! beside the input it names.
use crate::logic::grpc_web::{Code, Status};

use crate::logic::fields::{message_beside, split_field_message};

/// A failed API call, in terms the pages act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// What went wrong, in the classes the UI distinguishes.
    pub kind: ErrorKind,
    /// One line for the operator (without the field path when `field` is set).
    pub message: String,
    /// The request field the error is about (`aws.secret_access_key`, `name`).
    pub field: Option<String>,
}

/// The classes of failure the UI reacts to differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request was refused as invalid (INVALID_ARGUMENT, OUT_OF_RANGE).
    Invalid,
    /// The name or resource already exists (ALREADY_EXISTS).
    AlreadyExists,
    /// The state does not allow it (FAILED_PRECONDITION), e.g. no credential stored.
    Precondition,
    /// Unknown id (NOT_FOUND).
    NotFound,
    /// The token was refused or is missing (UNAUTHENTICATED).
    SignedOut,
    /// The token may not do this (PERMISSION_DENIED).
    Forbidden,
    /// The server does not offer this call yet (UNIMPLEMENTED).
    Unimplemented,
    /// The server or the network is unavailable; retrying may help.
    Unavailable,
    /// Anything else.
    Other,
}

impl ApiError {
    /// The error for a call made while signed out.
    pub fn signed_out() -> Self {
        Self {
            kind: ErrorKind::SignedOut,
            message: "You are signed out. Sign in with an API token.".into(),
            field: None,
        }
    }

    /// The message to show beside the input for `input_path`, when the error is about it.
    pub fn message_for(&self, input_path: &str) -> Option<String> {
        message_beside(self.field.as_deref()?, input_path, &self.message)
    }

    /// The message with its field path, for places that show it away from the input.
    pub fn full_message(&self) -> String {
        match &self.field {
            Some(f) => format!("{f}: {}", self.message),
            None => self.message.clone(),
        }
    }

    /// Whether calling again later can succeed (used by stream reconnects).
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, ErrorKind::Unavailable | ErrorKind::Other)
    }
}

impl From<Status> for ApiError {
    fn from(s: Status) -> Self {
        let kind = match s.code {
            Code::InvalidArgument | Code::OutOfRange => ErrorKind::Invalid,
            Code::AlreadyExists => ErrorKind::AlreadyExists,
            Code::FailedPrecondition => ErrorKind::Precondition,
            Code::NotFound => ErrorKind::NotFound,
            Code::Unauthenticated => ErrorKind::SignedOut,
            Code::PermissionDenied => ErrorKind::Forbidden,
            Code::Unimplemented => ErrorKind::Unimplemented,
            Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::Cancelled => {
                ErrorKind::Unavailable
            }
            _ => ErrorKind::Other,
        };
        let (field, message) = match (s.field, split_field_message(&s.message)) {
            (Some(h), Some((f, rest))) if f == h => (Some(h), rest.to_owned()),
            (Some(h), _) => (Some(h), s.message.clone()),
            (None, Some((f, rest)))
                if matches!(kind, ErrorKind::Invalid | ErrorKind::AlreadyExists) =>
            {
                (Some(f.to_owned()), rest.to_owned())
            }
            _ => (None, s.message.clone()),
        };
        let message = match kind {
            ErrorKind::Unavailable => {
                "Cannot reach the control plane. Check that it is running, then try again."
                    .to_owned()
            }
            ErrorKind::Unimplemented => {
                "This control plane does not offer this yet (UNIMPLEMENTED).".to_owned()
            }
            _ if message.is_empty() => format!("The call failed ({:?}).", s.code),
            _ => message,
        };
        Self {
            kind,
            message,
            field,
        }
    }
}
