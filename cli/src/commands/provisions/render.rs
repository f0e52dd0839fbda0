//! How provisions are shown: status, role and install-step words, the `provisions list`
//! table, the `provisions show` key/value view and the JSON mapping of `Provision`.
use levelrail_proto::provisioner::v1::{
    InstallStep, PlacementOutcome, Provision, ProvisionStatus, Role,
};
use serde_json::{Value, json};

use crate::duration;
use crate::output::{between, key_values, rfc3339, rfc3339_seconds, table as render_table};
use crate::provider;

/// The lowercase status word (`creating` … `failed`); a value this CLI does not know is
/// shown as `unknown(<n>)`.
pub(crate) fn status_name(value: i32) -> String {
    let name = match ProvisionStatus::try_from(value) {
        Ok(ProvisionStatus::Unspecified) => "unspecified",
        Ok(ProvisionStatus::Creating) => "creating",
        Ok(ProvisionStatus::Booting) => "booting",
        Ok(ProvisionStatus::Installing) => "installing",
        Ok(ProvisionStatus::Enrolling) => "enrolling",
        Ok(ProvisionStatus::Ready) => "ready",
        Ok(ProvisionStatus::Failed) => "failed",
        Err(_) => return format!("unknown({value})"),
    };
    name.to_owned()
}

/// `general` or `build`; unspecified counts as general, as the API defines.
pub(crate) fn role_name(value: i32) -> String {
    match Role::try_from(value) {
        Ok(Role::Unspecified | Role::General) => "general".to_owned(),
        Ok(Role::Build) => "build".to_owned(),
        Err(_) => format!("unknown({value})"),
    }
}

/// The install step as words (`docker ready`) and as its API key (`docker_ready`); `None`
/// before cloud-init reported anything.
fn install_step(value: i32) -> Option<(&'static str, &'static str)> {
    match InstallStep::try_from(value) {
        Ok(InstallStep::DockerReady) => Some(("docker ready", "docker_ready")),
        Ok(InstallStep::AgentVerified) => Some(("agent verified", "agent_verified")),
        Ok(InstallStep::AgentStarted) => Some(("agent started", "agent_started")),
        Ok(InstallStep::Unspecified) => None,
        Err(_) => Some(("unknown step", "unknown")),
    }
}

/// True for `ready` and `failed`, after which nothing changes.
pub(crate) fn is_terminal(status: i32) -> bool {
    status == ProvisionStatus::Ready as i32 || status == ProvisionStatus::Failed as i32
}

/// `installing (agent verified)` while installing; the bare status word otherwise.
pub(crate) fn status_with_step(p: &Provision) -> String {
    let status = status_name(p.status);
    match install_step(p.install_step) {
        Some((words, _)) if p.status == ProvisionStatus::Installing as i32 => {
            format!("{status} ({words})")
        }
        _ => status,
    }
}

/// `provision <id> failed in <phase>: <reason> (provider code <code>)`.
pub(crate) fn failure_message(p: &Provision) -> String {
    let mut message = format!("provision {} failed", p.id);
    if p.failed_phase != ProvisionStatus::Unspecified as i32 {
        message.push_str(&format!(" in {}", status_name(p.failed_phase)));
    }
    message.push_str(": ");
    message.push_str(if p.failure_reason.is_empty() {
        "no reason was recorded"
    } else {
        &p.failure_reason
    });
    if !p.provider_error_code.is_empty() {
        message.push_str(&format!(" (provider code {})", p.provider_error_code));
    }
    message
}

/// `ID  PROVIDER  NAME  ROLE  STATUS  NODE ID  CREATED`, one row per provision.
pub(crate) fn table(provisions: &[Provision]) -> String {
    let rows: Vec<Vec<String>> = provisions
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                provider::name_of(p.provider),
                p.name.clone(),
                role_name(p.role),
                status_name(p.status),
                dash_if_empty(&p.node_id),
                p.created_at
                    .as_ref()
                    .map_or_else(|| "-".to_owned(), rfc3339_seconds),
            ]
        })
        .collect();
    render_table(
        &[
            "ID", "PROVIDER", "NAME", "ROLE", "STATUS", "NODE ID", "CREATED",
        ],
        &rows,
    )
}

fn dash_if_empty(text: &str) -> String {
    if text.is_empty() { "-" } else { text }.to_owned()
}

/// The `provisions show` view: every field as `key:  value`, the failure only for a failed
/// provision, then one line per stage with when it was entered and how long it took.
pub(crate) fn details(p: &Provision) -> String {
    let when = |ts: Option<&prost_types::Timestamp>| ts.map(rfc3339_seconds).unwrap_or_default();
    let mut pairs = vec![
        ("id", p.id.clone()),
        ("name", p.name.clone()),
        ("provider", provider::name_of(p.provider)),
        ("region", p.region.clone()),
        ("size", p.size.clone()),
        ("role", role_name(p.role)),
        ("status", status_name(p.status)),
        (
            "install step",
            install_step(p.install_step)
                .map(|(words, _)| words.to_owned())
                .unwrap_or_default(),
        ),
        ("ip address", p.ip_address.clone()),
        ("node id", p.node_id.clone()),
    ];
    if p.status == ProvisionStatus::Failed as i32 {
        let phase = if p.failed_phase == ProvisionStatus::Unspecified as i32 {
            String::new()
        } else {
            status_name(p.failed_phase)
        };
        pairs.push(("failed phase", phase));
        pairs.push(("failure reason", p.failure_reason.clone()));
        pairs.push(("provider code", p.provider_error_code.clone()));
    }
    let keep = if p.keep_on_failure { "yes" } else { "no" };
    pairs.push(("keep on failure", keep.to_owned()));
    pairs.push(("created", when(p.created_at.as_ref())));
    pairs.push(("updated", when(p.updated_at.as_ref())));
    pairs.push(("generation", p.generation.to_string()));
    if p.stages.is_empty() {
        pairs.push(("stages", String::new()));
        return key_values(&pairs) + &placements(p);
    }
    let mut out = key_values(&pairs);
    out.push_str(&placements(p));
    out.push_str("\nstages:");
    for (i, stage) in p.stages.iter().enumerate() {
        let took = p
            .stages
            .get(i + 1)
            .and_then(|next| Some((stage.entered_at.as_ref()?, next.entered_at.as_ref()?)))
            .and_then(|(from, to)| between(from, to))
            .map(duration::format)
            .unwrap_or_default();
        let line = format!(
            "  {:<10}  {:<20}  {took}",
            status_name(stage.status),
            when(stage.entered_at.as_ref())
        );
        out.push('\n');
        out.push_str(line.trim_end());
    }
    out
}

/// The word of a placement outcome.
fn outcome_name(value: i32) -> &'static str {
    match PlacementOutcome::try_from(value) {
        Ok(PlacementOutcome::Pending) => "pending",
        Ok(PlacementOutcome::InUse) => "in use",
        Ok(PlacementOutcome::Rejected) => "rejected",
        _ => "unknown",
    }
}

/// The region/size choices, one line each, when the provision named alternatives.
fn placements(p: &Provision) -> String {
    if p.placements.len() < 2 {
        return String::new();
    }
    let mut out = String::from("\nchoices:");
    for c in &p.placements {
        let place = format!("{}/{}", c.region, c.size);
        let line = format!(
            "  {place:<24}  {:<8}  {}",
            outcome_name(c.outcome),
            c.reason
        );
        out.push('\n');
        out.push_str(line.trim_end());
    }
    out
}

/// One provision as JSON. Enum fields are their lowercase words; `install_step` and
/// `failed_phase` are null when unset.
pub(crate) fn provision_json(p: &Provision) -> Value {
    let stages: Vec<Value> = p
        .stages
        .iter()
        .map(|s| {
            json!({
                "status": status_name(s.status),
                "entered_at": s.entered_at.as_ref().map(rfc3339),
            })
        })
        .collect();
    json!({
        "id": p.id,
        "provider": provider::name_of(p.provider),
        "region": p.region,
        "size": p.size,
        "name": p.name,
        "role": role_name(p.role),
        "status": status_name(p.status),
        "install_step": install_step(p.install_step).map(|(_, key)| key),
        "ip_address": p.ip_address,
        "node_id": p.node_id,
        "failed_phase": (p.failed_phase != ProvisionStatus::Unspecified as i32)
            .then(|| status_name(p.failed_phase)),
        "failure_reason": p.failure_reason,
        "provider_error_code": p.provider_error_code,
        "created_at": p.created_at.as_ref().map(rfc3339),
        "updated_at": p.updated_at.as_ref().map(rfc3339),
        "generation": p.generation,
        "stages": stages,
        "keep_on_failure": p.keep_on_failure,
        "placements": p.placements.iter().map(|c| json!({
            "region": c.region,
            "size": c.size,
            "outcome": outcome_name(c.outcome).replace(' ', "_"),
            "reason": c.reason,
            "provider_error_code": c.provider_error_code,
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_lowercase_word() {
        let words: Vec<String> = (1..=6).map(status_name).collect();
        assert_eq!(
            words,
            [
                "creating",
                "booting",
                "installing",
                "enrolling",
                "ready",
                "failed"
            ]
        );
        assert_eq!(status_name(42), "unknown(42)");
    }

    #[test]
    fn the_install_step_is_shown_only_while_installing() {
        let mut p = Provision {
            status: ProvisionStatus::Installing as i32,
            install_step: InstallStep::AgentVerified as i32,
            ..Provision::default()
        };
        assert_eq!(status_with_step(&p), "installing (agent verified)");
        p.status = ProvisionStatus::Enrolling as i32;
        assert_eq!(status_with_step(&p), "enrolling");
    }

    #[test]
    fn a_failure_message_names_phase_reason_and_provider_code() {
        let p = Provision {
            id: "npv_1".into(),
            status: ProvisionStatus::Failed as i32,
            failed_phase: ProvisionStatus::Creating as i32,
            failure_reason: "the provider refused the server".into(),
            provider_error_code: "resource_limit_exceeded".into(),
            ..Provision::default()
        };
        assert_eq!(
            failure_message(&p),
            "provision npv_1 failed in creating: the provider refused the server (provider \
             code resource_limit_exceeded)"
        );
    }
}
