//! The write-only credential form of one provider card. Inputs are never pre-filled, are
//! masked, and are cleared once the server has stored the credential; a validation error is
//! shown beside the input whose field path it names.
use leptos::prelude::*;

use crate::api::types::{Provider, ProviderStatus};
use crate::api::{ApiError, CredentialInput, use_api};
use crate::components::field::{Field, InputKind};
use crate::logic::fields::field_below;
use crate::logic::providers::{credential_shape, label, slug, token_path};
use levelrail_types::CredentialShape;

/// The field values of every provider shape (only those of this provider are shown).
#[derive(Debug, Clone, Copy)]
struct Values {
    token: RwSignal<String>,
    access_key_id: RwSignal<String>,
    secret_access_key: RwSignal<String>,
    session_token: RwSignal<String>,
    region: RwSignal<String>,
    role_arn: RwSignal<String>,
    ambient: RwSignal<bool>,
    json: RwSignal<String>,
    project_id: RwSignal<String>,
}

impl Values {
    fn new() -> Self {
        Self {
            token: RwSignal::new(String::new()),
            access_key_id: RwSignal::new(String::new()),
            secret_access_key: RwSignal::new(String::new()),
            session_token: RwSignal::new(String::new()),
            region: RwSignal::new(String::new()),
            role_arn: RwSignal::new(String::new()),
            ambient: RwSignal::new(false),
            json: RwSignal::new(String::new()),
            project_id: RwSignal::new(String::new()),
        }
    }

    /// Forgets every typed value (after a save, so no secret stays in the DOM).
    fn clear(&self) {
        for s in [
            self.token,
            self.access_key_id,
            self.secret_access_key,
            self.session_token,
            self.region,
            self.role_arn,
            self.json,
            self.project_id,
        ] {
            s.set(String::new());
        }
        self.ambient.set(false);
    }

    /// The request input, or `None` while a required field is empty.
    fn input(&self, provider: Provider) -> Option<CredentialInput> {
        let t = |s: RwSignal<String>| s.get().trim().to_owned();
        match credential_shape(provider)? {
            CredentialShape::Token(_) => {
                let token = t(self.token);
                (!token.is_empty()).then_some(CredentialInput::Token { provider, token })
            }
            CredentialShape::AwsKeys => {
                let ambient = self.ambient.get();
                let (key, secret) = match ambient {
                    true => (String::new(), String::new()),
                    false => (t(self.access_key_id), t(self.secret_access_key)),
                };
                if !ambient && (key.is_empty() || secret.is_empty()) {
                    return None;
                }
                Some(CredentialInput::Aws {
                    access_key_id: key,
                    secret_access_key: secret,
                    session_token: if ambient {
                        String::new()
                    } else {
                        t(self.session_token)
                    },
                    region: t(self.region),
                    role_arn: t(self.role_arn),
                    use_ambient_credentials: ambient,
                })
            }
            CredentialShape::AzureServicePrincipal => {
                let json = t(self.json);
                (!json.is_empty()).then_some(CredentialInput::Azure { json })
            }
            CredentialShape::GoogleServiceAccount => {
                let json = t(self.json);
                (!json.is_empty()).then(|| CredentialInput::Gcp {
                    json,
                    project_id: t(self.project_id),
                })
            }
        }
    }
}

/// The field paths of the inputs a provider's form shows (for placing server errors).
fn visible_paths(provider: Provider, ambient: bool) -> Vec<String> {
    let paths: &[&str] = match credential_shape(provider) {
        Some(CredentialShape::Token(_)) => return vec![token_path(provider)],
        Some(CredentialShape::AwsKeys) if ambient => {
            &["aws.use_ambient_credentials", "aws.region", "aws.role_arn"]
        }
        Some(CredentialShape::AwsKeys) => &[
            "aws.use_ambient_credentials",
            "aws.access_key_id",
            "aws.secret_access_key",
            "aws.session_token",
            "aws.region",
            "aws.role_arn",
        ],
        Some(CredentialShape::AzureServicePrincipal) => &["azure.json"],
        Some(CredentialShape::GoogleServiceAccount) => &["gcp.json", "gcp.project_id"],
        None => &[],
    };
    paths.iter().map(|p| (*p).to_owned()).collect()
}

/// The form. `on_saved` receives the card the server returned.
#[component]
pub fn ProviderForm(
    /// Which provider.
    provider: Provider,
    /// Whether a credential is stored (changes the help text).
    connected: Signal<bool>,
    /// Called with the updated card after a successful save.
    on_saved: Callback<ProviderStatus>,
) -> impl IntoView {
    let api = use_api();
    let slug = slug(provider);
    let values = Values::new();
    let error = RwSignal::new(None::<ApiError>);
    let saved = RwSignal::new(false);
    let save = Action::new_local(move |input: &CredentialInput| {
        let input = input.clone();
        async move {
            match api.set_credential(input).await {
                Ok(card) => {
                    values.clear();
                    saved.set(true);
                    on_saved.run(card);
                }
                Err(e) => error.set(Some(e)),
            }
        }
    });
    let submittable = move || values.input(provider).is_some() && !save.pending().get();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        error.set(None);
        saved.set(false);
        if let Some(input) = untrack(|| values.input(provider)) {
            save.dispatch(input);
        }
    };
    // A server error about a path no visible input has is shown for the whole form.
    let form_error = move || {
        let e = error.get()?;
        let paths = visible_paths(provider, values.ambient.get());
        let placed = e
            .field
            .as_deref()
            .is_some_and(|f| paths.iter().any(|p| field_below(f, p).is_some()));
        (!placed).then(|| e.full_message())
    };
    let err = move |path: &'static str| {
        Signal::derive(move || error.get().and_then(|e| e.message_for(path)))
    };
    let clear = Callback::new(move |()| {
        saved.set(false);
        if error.with_untracked(Option::is_some) {
            error.set(None);
        }
    });
    let stored_help = move |fresh: String| {
        Signal::derive(move || {
            match connected.get() {
            true => "A credential is already stored. Paste a new one to replace it; it is never shown again.".to_owned(),
            false => fresh.clone(),
        }
        })
    };
    let fields = match credential_shape(provider) {
        Some(CredentialShape::Token(shape)) => {
            let path = token_path(provider);
            let error = Signal::derive(move || error.get().and_then(|e| e.message_for(&path)));
            let help = format!("{} Never echoed back once saved.", shape.help);
            view! {
                <Field id=format!("{slug}-token") label="API token" kind=InputKind::Password value=values.token
                    error=error help=stored_help(help) placeholder=shape.placeholder on_edit=clear/>
            }
            .into_any()
        }
        Some(CredentialShape::AwsKeys) => aws_fields(values, err, clear, stored_help).into_any(),
        Some(CredentialShape::AzureServicePrincipal) => view! {
            <Field id="azure-json" label="Service principal (JSON)" kind=InputKind::Password value=values.json
                error=err("azure.json") on_edit=clear
                placeholder=r#"{"tenant_id":"…","client_id":"…","client_secret":"…","subscription_id":"…","resource_group":"…"}"#
                help=stored_help("Single-line JSON of an app registration with Contributor on one existing resource group (and Reader on the subscription for the region and size pickers). For workload identity federation use federated_token_file instead of client_secret.".to_owned())/>
        }
        .into_any(),
        Some(CredentialShape::GoogleServiceAccount) | None => view! {
            <Field id="gcp-json" label="Service account key (JSON)" kind=InputKind::Password value=values.json
                error=err("gcp.json") on_edit=clear
                placeholder="Paste the service account key JSON, minified to one line"
                help=stored_help("A service-account key with the Compute Instance Admin (v1) and Compute Security Admin roles (the deny-ingress firewall needs the latter), pasted as-is (its project_id names the project), or a workload identity federation (external_account) file. A VPC network named default must exist.".to_owned())/>
            <Field id="gcp-project-id" label="Project ID (federation only)" kind=InputKind::Text value=values.project_id
                error=err("gcp.project_id") placeholder="my-project" on_edit=clear
                help=Signal::derive(|| "Required with an external_account file, which names no project; ignored for a service-account key.".to_owned())/>
        }
        .into_any(),
    };
    view! {
        <form class="provider-form" on:submit=submit novalidate aria-label=format!("{} credential", label(provider))>
            {fields}
            {move || form_error().map(|m| view! {
                <p class="alert error" role="alert" data-testid=format!("{slug}-form-error")>{m}</p>
            })}
            {move || saved.get().then(|| view! {
                <p class="alert ok" role="status" data-testid=format!("{slug}-saved")>
                    "Saved. The credential is stored encrypted and will not be shown again."
                </p>
            })}
            <div class="actions">
                <button type="submit" class="button primary" id=format!("{slug}-save") disabled=move || !submittable()>
                    {move || if save.pending().get() { "Saving…" } else { "Save" }}
                </button>
            </div>
        </form>
    }
}

/// The AWS shape: ambient checkbox, then the static key fields unless ambient.
fn aws_fields(
    values: Values,
    err: impl Fn(&'static str) -> Signal<Option<String>> + Copy + Send + Sync + 'static,
    clear: Callback<()>,
    stored_help: impl Fn(String) -> Signal<String> + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let ambient_error = err("aws.use_ambient_credentials");
    view! {
        <div class="field checkbox" class:invalid=move || ambient_error.with(Option::is_some)>
            <input id="aws-ambient" type="checkbox" prop:checked=move || values.ambient.get()
                aria-describedby="aws-ambient-help"
                on:change=move |ev| { values.ambient.set(event_target_checked(&ev)); clear.run(()); }/>
            <label for="aws-ambient">
                "Use this control plane's own AWS identity (environment, shared config or an EC2 instance profile) instead of a stored key"
            </label>
            <p class="help" id="aws-ambient-help">"Only useful when the control plane itself runs on AWS."</p>
            {move || ambient_error.get().map(|e| view! {
                <p class="field-error" id="aws-ambient-error" data-testid="aws-ambient-error" role="alert">{e}</p>
            })}
        </div>
        <Show when=move || !values.ambient.get()>
            <Field id="aws-access-key-id" label="Access key ID" kind=InputKind::Password value=values.access_key_id
                error=err("aws.access_key_id") placeholder="AKIA…" on_edit=clear/>
            <Field id="aws-secret-access-key" label="Secret access key" kind=InputKind::Password
                value=values.secret_access_key error=err("aws.secret_access_key") on_edit=clear
                help=stored_help("Never echoed back once saved.".to_owned())/>
            <Field id="aws-session-token" label="Session token (optional)" kind=InputKind::Password
                value=values.session_token error=err("aws.session_token") on_edit=clear
                help=Signal::derive(|| "For temporary credentials (ASIA… keys).".to_owned())/>
        </Show>
        <Field id="aws-region" label="Region (optional)" kind=InputKind::Text value=values.region
            error=err("aws.region") placeholder="us-east-1" on_edit=clear/>
        <Field id="aws-role-arn" label="Role ARN (optional)" kind=InputKind::Text value=values.role_arn
            error=err("aws.role_arn") placeholder="arn:aws:iam::123456789012:role/levelrail" on_edit=clear
            help=Signal::derive(|| "Assumed through STS before every call; the stored key then needs only sts:AssumeRole on it.".to_owned())/>
    }
}
