//! The Add node wizard, a modal `<dialog>`: provider → region → size → details → confirm →
//! live progress. Closing it never stops a provision; the same dialog reopens the progress
//! of any provision from the list.
pub mod alternatives;
pub mod confirm_step;
pub mod details_step;
pub mod provider_step;
pub mod region_step;
pub mod size_step;

use leptos::html::Dialog;
use leptos::prelude::*;

use crate::api::ApiError;
use crate::api::types::{Provider, Provision, Region, Role, Size};
use crate::browser::{focus_later, random_uuid};
use crate::components::provision_progress::ProvisionProgress;
use crate::logic::stages::is_terminal;

/// What the dialog opens on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WizardStart {
    /// A new provision, from the provider step.
    New,
    /// The live progress of an existing provision.
    Watch(String),
}

/// The wizard's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Provider,
    Region,
    Size,
    Details,
    Confirm,
    Progress,
}

impl Step {
    const INPUT: [(Step, &'static str); 5] = [
        (Step::Provider, "Provider"),
        (Step::Region, "Region"),
        (Step::Size, "Size"),
        (Step::Details, "Details"),
        (Step::Confirm, "Confirm"),
    ];
}

/// Everything chosen so far (all `Copy` signals, shared by the steps).
#[derive(Debug, Clone, Copy)]
pub struct Draft {
    pub step: RwSignal<Step>,
    pub provider: RwSignal<Option<Provider>>,
    pub region: RwSignal<Option<Region>>,
    pub size: RwSignal<Option<Size>>,
    /// Regions to try, in order, when the provider has no capacity.
    pub fallback_regions: RwSignal<Vec<String>>,
    /// Sizes to try, in order, likewise.
    pub fallback_sizes: RwSignal<Vec<String>>,
    pub name: RwSignal<String>,
    pub role: RwSignal<Role>,
    pub ssh: RwSignal<bool>,
    pub ssh_key: RwSignal<String>,
    pub ssh_cidr: RwSignal<String>,
    pub control_plane_addr: RwSignal<String>,
    /// Idempotency key of the provision request; a new one per confirmed draft.
    pub request_id: RwSignal<String>,
    /// The server's refusal of the last Create, shown beside the field it names.
    pub server_error: RwSignal<Option<ApiError>>,
    /// The provision being watched.
    pub watching: RwSignal<Option<String>>,
    /// The provision as Create returned it (shown until the stream's first state).
    pub created: RwSignal<Option<Provision>>,
}

impl Draft {
    fn new() -> Self {
        Self {
            step: RwSignal::new(Step::Provider),
            provider: RwSignal::new(None),
            region: RwSignal::new(None),
            size: RwSignal::new(None),
            fallback_regions: RwSignal::new(Vec::new()),
            fallback_sizes: RwSignal::new(Vec::new()),
            name: RwSignal::new(String::new()),
            role: RwSignal::new(Role::General),
            ssh: RwSignal::new(false),
            ssh_key: RwSignal::new(String::new()),
            ssh_cidr: RwSignal::new(String::new()),
            control_plane_addr: RwSignal::new(String::new()),
            request_id: RwSignal::new(random_uuid()),
            server_error: RwSignal::new(None),
            watching: RwSignal::new(None),
            created: RwSignal::new(None),
        }
    }

    /// Moves to `step` and puts keyboard focus on its heading.
    pub fn go(&self, step: Step) {
        self.step.set(step);
        focus_later("wizard-step-title");
    }
}

/// The dialog. `on_close` is called when the operator closes it (button or Escape);
/// `on_change` with every provision state it sees (the page refreshes its lists).
#[component]
pub fn AddNodeWizard(
    start: WizardStart,
    on_close: Callback<()>,
    on_change: Callback<Provision>,
) -> impl IntoView {
    let draft = Draft::new();
    let reopened = matches!(start, WizardStart::Watch(_));
    if let WizardStart::Watch(id) = start {
        draft.watching.set(Some(id));
        draft.step.set(Step::Progress);
    }
    let latest = RwSignal::new(None::<Provision>);
    let dialog = NodeRef::<Dialog>::new();
    Effect::new(move |_| {
        if let Some(d) = dialog.get()
            && !d.open()
        {
            let _ = d.show_modal();
        }
    });
    let watch_change = Callback::new(move |p: Provision| {
        latest.set(Some(p.clone()));
        on_change.run(p);
    });
    let title = move || match (draft.step.get(), latest.get()) {
        (Step::Progress, Some(p)) => format!("Provisioning {}", p.name),
        (Step::Progress, None) => "Provisioning".to_owned(),
        _ => "Add node".to_owned(),
    };
    let start_over = move |_| {
        latest.set(None);
        draft.watching.set(None);
        draft.created.set(None);
        draft.request_id.set(random_uuid());
        draft.server_error.set(None);
        draft.go(Step::Provider);
    };
    // Until the first state arrives the provision is assumed to be in flight.
    let close_label = move || match latest.get() {
        Some(p) if is_terminal(&p) => "Close",
        _ => "Close (keeps provisioning)",
    };
    view! {
        <dialog
            node_ref=dialog
            class="wizard"
            id="add-node-dialog"
            aria-labelledby="wizard-title"
            on:close=move |_| on_close.run(())
        >
            <header class="wizard-head">
                <h2 id="wizard-title">{title}</h2>
                <button type="button" class="icon-button" id="wizard-close" aria-label="Close"
                    on:click=move |_| on_close.run(())>"×"</button>
            </header>
            <Show when=move || draft.step.get() != Step::Progress>
                <StepTrail draft=draft/>
            </Show>
            <div class="wizard-body">
                {move || match draft.step.get() {
                    Step::Provider => view! { <provider_step::ProviderStep draft=draft/> }.into_any(),
                    Step::Region => view! { <region_step::RegionStep draft=draft/> }.into_any(),
                    Step::Size => view! { <size_step::SizeStep draft=draft/> }.into_any(),
                    Step::Details => view! { <details_step::DetailsStep draft=draft/> }.into_any(),
                    Step::Confirm => view! { <confirm_step::ConfirmStep draft=draft/> }.into_any(),
                    Step::Progress => match draft.watching.get() {
                        Some(id) => {
                            let initial = draft.created.get_untracked().filter(|p| p.id == id);
                            view! { <ProvisionProgress id=id initial=initial on_change=watch_change/> }.into_any()
                        }
                        None => ().into_any(),
                    },
                }}
            </div>
            <Show when=move || draft.step.get() == Step::Progress>
                <footer class="wizard-foot">
                    <Show when=move || !reopened && latest.with(|p| p.as_ref().is_some_and(|p| p.status() == crate::api::types::ProvisionStatus::Failed))>
                        <button type="button" class="button" id="wizard-start-over" on:click=start_over>
                            "Start over"
                        </button>
                    </Show>
                    <button type="button" class="button primary" id="wizard-done" on:click=move |_| on_close.run(())>
                        {close_label}
                    </button>
                </footer>
            </Show>
        </dialog>
    }
}

/// "Step 2 of 5": where the operator is in the input steps.
#[component]
fn StepTrail(draft: Draft) -> impl IntoView {
    let current = move || {
        Step::INPUT
            .iter()
            .position(|(s, _)| *s == draft.step.get())
            .unwrap_or(0)
    };
    view! {
        <ol class="trail" aria-label="Steps">
            {Step::INPUT
                .iter()
                .enumerate()
                .map(|(i, (_, name))| {
                    view! {
                        <li
                            class:done=move || i < current()
                            class:current=move || i == current()
                            aria-current=move || (i == current()).then_some("step")
                        >
                            {*name}
                        </li>
                    }
                })
                .collect_view()}
        </ol>
    }
}

/// The heading of a step (focused when the step opens).
#[component]
pub fn StepTitle(children: Children) -> impl IntoView {
    view! { <h3 id="wizard-step-title" tabindex="-1">{children()}</h3> }
}

/// Back and Continue under a step.
#[component]
pub fn StepNav(
    /// Go back (hidden on the first step).
    #[prop(optional)]
    back: Option<Callback<()>>,
    /// Continue.
    next: Callback<()>,
    /// Whether Continue is possible.
    #[prop(into)]
    can_next: Signal<bool>,
    /// Why Continue is not possible, shown beside it.
    #[prop(optional, into)]
    hint: Option<Signal<Option<String>>>,
    /// The Continue label.
    #[prop(default = "Continue")]
    next_label: &'static str,
) -> impl IntoView {
    view! {
        <footer class="wizard-foot">
            {back.map(|b| view! {
                <button type="button" class="button" id="wizard-back" on:click=move |_| b.run(())>"Back"</button>
            })}
            {hint.map(|h| view! { <p class="hint" id="wizard-next-hint">{move || h.get()}</p> })}
            <button type="button" class="button primary" id="wizard-next"
                disabled=move || !can_next.get()
                on:click=move |_| next.run(())>
                {next_label}
            </button>
        </footer>
    }
}
