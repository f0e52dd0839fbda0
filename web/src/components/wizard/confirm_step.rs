//! Step 5: the summary and Create. A refusal naming a details field sends the operator
//! back to that field with the message beside it.
use leptos::prelude::*;

use super::details_step::DETAIL_PATHS;
use super::{Draft, Step, StepNav, StepTitle};
use crate::api::types::{ProvisionRequest, Role};
use crate::api::use_api;
use crate::logic::fields::field_below;
use crate::logic::format::{price, price_basis, size_specs};
use crate::logic::providers::label;

/// The summary.
#[component]
pub fn ConfirmStep(draft: Draft) -> impl IntoView {
    let api = use_api();
    let create = Action::new_local(move |req: &ProvisionRequest| {
        let req = req.clone();
        async move {
            match api.provision(req).await {
                Ok(p) => {
                    draft.server_error.set(None);
                    draft.watching.set(Some(p.id.clone()));
                    draft.created.set(Some(p));
                    draft.go(Step::Progress);
                }
                Err(e) => {
                    let about_details = e
                        .field
                        .as_deref()
                        .is_some_and(|f| DETAIL_PATHS.iter().any(|p| field_below(f, p).is_some()));
                    draft.server_error.set(Some(e));
                    if about_details {
                        draft.go(Step::Details);
                    }
                }
            }
        }
    });
    let submit = Callback::new(move |()| {
        draft.server_error.set(None);
        create.dispatch(untrack(|| request(&draft)));
    });
    let row = |k: &'static str, v: String| view! { <dt>{k}</dt><dd>{v}</dd> };
    let summary = move || {
        let provider = draft
            .provider
            .get()
            .map(label)
            .unwrap_or_default()
            .to_owned();
        let region = draft
            .region
            .get()
            .map(|r| {
                if r.name.is_empty() {
                    r.id
                } else {
                    format!("{} ({})", r.name, r.id)
                }
            })
            .unwrap_or_default();
        let size = draft
            .size
            .get()
            .map(|s| {
                format!(
                    "{} · {} · {} ({})",
                    s.id,
                    size_specs(&s),
                    price(&s),
                    price_basis(&s)
                )
            })
            .unwrap_or_default();
        let role = match draft.role.get() {
            Role::Build => "Build",
            _ => "General",
        };
        let ssh = match (draft.ssh.get(), draft.ssh_cidr.get().trim()) {
            (false, _) => "Off (default)".to_owned(),
            (true, "") => "Key installed, no inbound port".to_owned(),
            (true, cidr) => format!("Key installed, TCP 22 open to {cidr}"),
        };
        let cp = match draft.control_plane_addr.get().trim() {
            "" => "Server default".to_owned(),
            a => a.to_owned(),
        };
        let regions = draft.fallback_regions.get();
        let sizes = draft.fallback_sizes.get();
        let fallback = match (regions.is_empty(), sizes.is_empty()) {
            (true, true) => "None: fail if there is no capacity".to_owned(),
            (false, true) => format!("Regions: {}", regions.join(", ")),
            (true, false) => format!("Sizes: {}", sizes.join(", ")),
            (false, false) => format!(
                "Regions: {}; sizes: {}",
                regions.join(", "),
                sizes.join(", ")
            ),
        };
        view! {
            {row("Provider", provider)}
            {row("Region", region)}
            {row("Size", size)}
            {row("If unavailable, try", fallback)}
            {row("Name", draft.name.get())}
            {row("Role", role.to_owned())}
            {row("SSH access", ssh)}
            {row("Control-plane address", cp)}
        }
    };
    view! {
        <StepTitle>"Confirm"</StepTitle>
        <dl class="facts summary" data-testid="wizard-summary">{summary}</dl>
        <p class="note">"The provider bills for the server from now until it is deleted. Cancelling an unfinished provision deletes it."</p>
        {move || draft.server_error.get().map(|e| view! {
            <p class="alert error" role="alert" data-testid="wizard-error">{e.full_message()}</p>
        })}
        <StepNav
            back=Callback::new(move |()| draft.go(Step::Details))
            next=submit
            can_next=Signal::derive(move || !create.pending().get())
            next_label="Create node"
        />
        <p class="sr-only" role="status">{move || create.pending().get().then_some("Creating…")}</p>
    }
}

fn request(d: &Draft) -> ProvisionRequest {
    let ssh = d.ssh.get();
    let mut req = ProvisionRequest {
        provider: d.provider.get().map_or(0, |p| p as i32),
        region: d.region.get().map(|r| r.id).unwrap_or_default(),
        size: d.size.get().map(|s| s.id).unwrap_or_default(),
        name: d.name.get().trim().to_owned(),
        ssh_public_keys: match ssh {
            true => d
                .ssh_key
                .get()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            false => Vec::new(),
        },
        ssh_source_cidr: if ssh {
            d.ssh_cidr.get().trim().to_owned()
        } else {
            String::new()
        },
        control_plane_addr: d.control_plane_addr.get().trim().to_owned(),
        request_id: d.request_id.get(),
        fallback_regions: d.fallback_regions.get(),
        fallback_sizes: d.fallback_sizes.get(),
        ..Default::default()
    };
    req.set_role(d.role.get());
    req
}
