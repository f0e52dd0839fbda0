//! Where a provision's server may go: the requested region and size, then the operator's
//! ordered alternatives (`--region fsn1,nbg1 --size cx22,cx32`). The choices are the
//! regions × sizes, region first (every size is tried in a region before the next region:
//! a node near its data matters more than its exact size), without repeats. A capacity
//! error at the provider rejects the choice in use, with its reason, and the create moves on
//! to the next one; the provision records which choice it used.
use serde::{Deserialize, Serialize};

/// Most alternatives of each kind a request may name (besides the first choice).
pub const MAX_FALLBACKS: usize = 4;

/// What became of a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementOutcome {
    /// Not tried yet.
    #[default]
    Pending,
    /// The server was created here.
    InUse,
    /// The provider had no capacity here (or the provider's catalog does not offer it).
    Rejected,
}

impl PlacementOutcome {
    /// The stored and displayed word.
    pub fn as_str(self) -> &'static str {
        match self {
            PlacementOutcome::Pending => "pending",
            PlacementOutcome::InUse => "in_use",
            PlacementOutcome::Rejected => "rejected",
        }
    }
}

/// One region and size to try, and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Region id.
    pub region: String,
    /// Size id.
    pub size: String,
    /// What became of it.
    #[serde(default)]
    pub outcome: PlacementOutcome,
    /// Why it was rejected (one clean line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The provider's error code of the rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl Placement {
    /// A choice not tried yet.
    pub fn pending(region: &str, size: &str) -> Self {
        Placement {
            region: region.to_owned(),
            size: size.to_owned(),
            outcome: PlacementOutcome::Pending,
            reason: None,
            code: None,
        }
    }
}

/// The ordered choices of `regions` × `sizes`, region first, each pair once.
pub fn choices(regions: &[String], sizes: &[String]) -> Vec<Placement> {
    let mut out: Vec<Placement> = Vec::new();
    for region in regions {
        for size in sizes {
            if !out.iter().any(|p| &p.region == region && &p.size == size) {
                out.push(Placement::pending(region, size));
            }
        }
    }
    out
}

/// The choice to create in now: the first one not rejected.
pub fn current(placements: &[Placement]) -> Option<&Placement> {
    placements
        .iter()
        .find(|p| p.outcome != PlacementOutcome::Rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn choices_try_every_size_in_a_region_before_the_next_region_without_repeats() {
        let got = choices(
            &strings(&["fsn1", "nbg1", "fsn1"]),
            &strings(&["cx22", "cx32"]),
        );
        let pairs: Vec<(&str, &str)> = got
            .iter()
            .map(|p| (p.region.as_str(), p.size.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("fsn1", "cx22"),
                ("fsn1", "cx32"),
                ("nbg1", "cx22"),
                ("nbg1", "cx32")
            ]
        );
    }

    #[test]
    fn the_current_choice_is_the_first_not_rejected() {
        let mut v = choices(&strings(&["a", "b"]), &strings(&["s"]));
        assert_eq!(current(&v).map(|p| p.region.as_str()), Some("a"));
        v[0].outcome = PlacementOutcome::Rejected;
        assert_eq!(current(&v).map(|p| p.region.as_str()), Some("b"));
        v[1].outcome = PlacementOutcome::Rejected;
        assert_eq!(current(&v), None);
    }

    #[test]
    fn a_log_without_placements_reads_as_before() {
        let old: crate::provision::SagaLog =
            serde_json::from_str(r#"{"completed":[],"create_attempts":1,"undone":[]}"#).unwrap();
        assert!(old.placements.is_empty());
    }
}
