//! Target `progress_report`: what the progress endpoint (`POST /v1/provision-progress`)
//! reads from a booting node, or from anyone who can reach the agent listener: the bearer
//! credential (`ProgressCredential::parse`) and the JSON body (`ProgressReport::from_json`).
//!
//! Bytes: the `Authorization` header value, NUL, the body.
//!
//! Properties: no panic; a parsed credential is recognised as one and `Debug` hides its
//! secret; an accepted report's step is one of the install steps and its error one line of
//! printable ASCII, at most `NODE_ERROR_MAX` characters, neither empty nor padded; encoding
//! an accepted report again gives the same report; an error names `body`, `step` or
//! `error` and repeats no string of the body.
use levelrail_provisioner_model::provision::{ProgressCredential, is_progress_credential};
use levelrail_provisioner_model::{InstallStep, NODE_ERROR_MAX, ProgressReport};

use crate::credentials::strings_in;
use crate::opaque::{assert_hides, assert_no_echo};

/// Whether both the credential and the body are accepted.
pub fn accepts(data: &[u8]) -> bool {
    let Some(at) = data.iter().position(|&b| b == 0) else {
        return false;
    };
    let credential = std::str::from_utf8(&data[..at])
        .ok()
        .and_then(|h| ProgressCredential::parse(h.strip_prefix("Bearer ").unwrap_or(h)));
    credential.is_some() && ProgressReport::from_json(&data[at + 1..]).is_ok()
}

/// Checks one input.
pub fn check(data: &[u8]) {
    let (header, body) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    if let Ok(header) = std::str::from_utf8(header) {
        let presented = header.strip_prefix("Bearer ").unwrap_or(header);
        if let Some(credential) = ProgressCredential::parse(presented) {
            assert!(is_progress_credential(presented));
            let secret = presented.trim().rsplit('.').next().unwrap_or_default();
            assert_hides(
                &format!("{credential:?}"),
                &[secret],
                "Debug of a credential",
            );
        }
    }
    match ProgressReport::from_json(body) {
        Ok(report) => accepted(&report),
        Err(error) => {
            assert!(
                ["body", "step", "error"].contains(&error.field),
                "the error names a field of the report"
            );
            let Ok(text) = std::str::from_utf8(body) else {
                return;
            };
            let mut values = Vec::new();
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(text) {
                strings_in(&json, &mut values);
            }
            assert_no_echo(
                &[text.to_owned()],
                &values,
                "a progress-report error",
                |f| {
                    ProgressReport::from_json(f[0].as_bytes())
                        .err()
                        .map(|e| e.to_string())
                },
            );
        }
    }
}

fn accepted(report: &ProgressReport) {
    assert!(InstallStep::ALL.contains(&report.step));
    if let Some(error) = &report.error {
        assert!(!error.is_empty());
        assert!(error.chars().count() <= NODE_ERROR_MAX);
        assert!(error.bytes().all(|b| b.is_ascii_graphic() || b == b' '));
        assert_eq!(error.trim(), error, "no padding");
        assert!(!error.contains("  "), "whitespace runs are folded");
    }
    let again = serde_json::json!({"step": report.step.as_str(), "error": report.error});
    let again = ProgressReport::from_json(again.to_string().as_bytes())
        .expect("an accepted report, encoded again, is accepted");
    assert_eq!(&again, report);
}
