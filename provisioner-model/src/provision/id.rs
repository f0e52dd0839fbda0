//! Provision ids: `npv_` followed by 32 lowercase hex digits (a time-ordered UUID).
use std::fmt;

use crate::FieldError;

/// The prefix of every provision id.
pub const PROVISION_ID_PREFIX: &str = "npv_";

/// A provision's id. Safe to log; it is also the idempotency key of the server create
/// (`Ownership::provision_id`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProvisionId(String);

impl ProvisionId {
    /// A fresh id: a version 7 UUID, whose first 48 bits are the time in milliseconds
    /// and whose other 74 are random (or, within one millisecond, counted from a random
    /// start). New provisions' ids sort after older ones, so the indexes keyed by them take
    /// each one at their end: a group commit of 64 provisions changes a page or two of
    /// each, where random ids changed one page per provision in every such index.
    pub fn generate() -> Self {
        ProvisionId(format!(
            "{PROVISION_ID_PREFIX}{}",
            uuid::Uuid::now_v7().simple()
        ))
    }

    /// Validates an id given in the field `id`.
    pub fn parse(value: &str) -> Result<Self, FieldError> {
        Self::parse_as(value, "id")
    }

    /// Validates an id given in the field `field`. The error never echoes the value.
    pub fn parse_as(value: &str, field: &'static str) -> Result<Self, FieldError> {
        let valid = value.strip_prefix(PROVISION_ID_PREFIX).is_some_and(|hex| {
            hex.len() == 32
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(ProvisionId(value.to_owned()))
        } else {
            Err(FieldError::new(
                field,
                "is not a provision id (npv_ followed by 32 hex digits)",
            ))
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProvisionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_and_differ() {
        let a = ProvisionId::generate();
        assert_ne!(a, ProvisionId::generate());
        assert_eq!(ProvisionId::parse(a.as_str()).expect("parses"), a);
    }

    #[test]
    fn generated_ids_sort_in_the_order_they_were_made() {
        let ids: Vec<ProvisionId> = (0..1000).map(|_| ProvisionId::generate()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    }

    #[test]
    fn malformed_ids_are_rejected_without_echo() {
        for bad in [
            "",
            "npv_",
            "npv_XYZ",
            "node_0123",
            "npv_'; DROP TABLE provisions;--",
        ] {
            let err = ProvisionId::parse(bad).expect_err(bad);
            assert_eq!(err.field, "id");
            assert!(!err.message.contains("DROP"), "{err}");
        }
    }
}
