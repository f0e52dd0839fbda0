//! Step 4: name (checked as you type), role, opt-in SSH access, control-plane address.
use leptos::prelude::*;

use super::{Draft, Step, StepNav, StepTitle};
use crate::api::types::Role;
use crate::components::field::{Field, InputKind};
use crate::logic::name::{name_problem, name_problem_required};

/// The request fields a details input stands for (server errors go beside them).
pub const DETAIL_PATHS: [&str; 5] = [
    "name",
    "role",
    "ssh_public_keys",
    "ssh_source_cidr",
    "control_plane_addr",
];

/// What keeps the details from being submitted, if anything.
pub fn details_problem(draft: &Draft) -> Option<String> {
    if let Some(p) = name_problem_required(&draft.name.get()) {
        return Some(format!("Name: {p}"));
    }
    if draft.ssh.get() && draft.ssh_key.get().trim().is_empty() {
        return Some("Paste an SSH public key, or turn SSH access off.".into());
    }
    None
}

/// The details form.
#[component]
pub fn DetailsStep(draft: Draft) -> impl IntoView {
    let server = move |path: &'static str| {
        Signal::derive(move || draft.server_error.get().and_then(|e| e.message_for(path)))
    };
    let name_error = Signal::derive(move || {
        name_problem(&draft.name.get())
            .map(str::to_owned)
            .or_else(|| server("name").get())
    });
    let clear = Callback::new(move |()| {
        if draft.server_error.with_untracked(Option::is_some) {
            draft.server_error.set(None);
        }
    });
    let role_value = move || match draft.role.get() {
        Role::Build => "build",
        _ => "general",
    };
    view! {
        <StepTitle>"Details"</StepTitle>
        <Field id="wizard-name" label="Node name" kind=InputKind::Text value=draft.name
            error=name_error placeholder="web-1" on_edit=clear
            help=Signal::derive(|| "Lowercase letters, digits and hyphens; starts with a letter, at most 63 characters.".to_owned())/>
        <div class="field">
            <label for="wizard-role">"Role"</label>
            <select id="wizard-role" aria-describedby="wizard-role-help" prop:value=role_value
                on:change=move |ev| draft.role.set(match event_target_value(&ev).as_str() {
                    "build" => Role::Build,
                    _ => Role::General,
                })>
                <option value="general" selected=move || role_value() == "general">"General (runs apps)"</option>
                <option value="build" selected=move || role_value() == "build">"Build (runs builds)"</option>
            </select>
            <p class="help" id="wizard-role-help">"Set on the node once it enrolls."</p>
        </div>
        <div class="field checkbox">
            <input id="wizard-ssh" type="checkbox" aria-describedby="wizard-ssh-help"
                prop:checked=move || draft.ssh.get()
                on:change=move |ev| { draft.ssh.set(event_target_checked(&ev)); clear.run(()); }/>
            <label for="wizard-ssh">"Allow SSH access"</label>
            <p class="help" id="wizard-ssh-help">
                "Off by default: the server keeps zero inbound rules, and the agent dials home. Turn on to install your key and open TCP 22 to one source range."
            </p>
        </div>
        <Show when=move || draft.ssh.get()>
            <Field id="wizard-ssh-key" label="SSH public key" kind=InputKind::TextArea value=draft.ssh_key
                error=server("ssh_public_keys") placeholder="ssh-ed25519 AAAA… you@laptop" on_edit=clear/>
            <Field id="wizard-ssh-cidr" label="Allowed SSH source (CIDR, optional)" kind=InputKind::Text
                value=draft.ssh_cidr error=server("ssh_source_cidr") placeholder="203.0.113.7/32" on_edit=clear
                help=Signal::derive(|| "Opens TCP 22 from this range only. Empty installs the key without opening the port.".to_owned())/>
        </Show>
        <Field id="wizard-cp-addr" label="Control-plane address (optional)" kind=InputKind::Text
            value=draft.control_plane_addr error=server("control_plane_addr") placeholder="server default"
            on_edit=clear
            help=Signal::derive(|| "host:port the agent dials to enroll. Empty uses the control plane's configured agent address.".to_owned())/>
        <StepNav
            back=Callback::new(move |()| draft.go(Step::Size))
            next=Callback::new(move |()| draft.go(Step::Confirm))
            can_next=Signal::derive(move || details_problem(&draft).is_none())
            hint=Signal::derive(move || details_problem(&draft))
        />
    }
}
