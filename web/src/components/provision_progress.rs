//! Live progress of one provision from `WatchProvision`: the stepper creating → booting →
//! installing → enrolling → ready with the time spent in each stage, the install
//! sub-steps, the failure phase and reason, and Cancel. The stream reconnects with backoff
//! (the server sends the current state first, and `generation` drops states already seen)
//! and is aborted when the view goes away.
use std::time::Duration;

use futures::future::{AbortHandle, abortable};
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::api::types::{InstallStep, PlacementOutcome, Provision, ProvisionStatus, Role};
use crate::api::{Api, ApiError, ErrorKind, use_api};
use crate::browser::{now_ms, sleep};
use crate::logic::format::duration;
use crate::logic::providers::label;
use crate::logic::stages::{
    INSTALL_STEPS, StageState, install_step_done, is_terminal, stage_views, status_label,
    status_word, total_ms,
};

/// The state of the stream.
#[derive(Debug, Clone, PartialEq)]
enum Link {
    Connecting,
    Live,
    Reconnecting,
    /// Finished: the provision is terminal and the server closed the stream.
    Ended,
    /// Will not retry (unknown provision, signed out, not offered by the server).
    Broken(ApiError),
}

/// The progress view. `initial` (the provision as Create returned it) is shown until the
/// stream's first state; `on_change` gets every new state; `labelled_by` is the id of the
/// heading that names the view.
#[component]
pub fn ProvisionProgress(
    id: String,
    initial: Option<Provision>,
    on_change: Callback<Provision>,
    #[prop(default = "wizard-title")] labelled_by: &'static str,
) -> impl IntoView {
    let api = use_api();
    let state = RwSignal::new(None::<Provision>);
    if let Some(p) = initial {
        accept(state, on_change, p);
    }
    let link = RwSignal::new(Link::Connecting);
    let now = RwSignal::new(now_ms());

    let (task, watch) = abortable(follow(api, id.clone(), state, link, on_change));
    spawn_local(async move {
        let _ = task.await;
    });
    let ticker = set_interval_with_handle(move || now.set(now_ms()), Duration::from_secs(1)).ok();
    on_cleanup(move || stop(watch, ticker));

    let confirming = RwSignal::new(false);
    let cancel_error = RwSignal::new(None::<String>);
    let cancel = Action::new_local(move |id: &String| {
        let id = id.clone();
        async move {
            match api.cancel_provision(id).await {
                Ok(p) => {
                    confirming.set(false);
                    accept(state, on_change, p);
                }
                Err(e) => cancel_error.set(Some(e.full_message())),
            }
        }
    });

    let body = move || {
        let p = state.get()?;
        Some(view! {
            <Summary p=p.clone() now=now/>
            <Stepper p=p.clone() now=now/>
            <Choices p=p.clone()/>
            <Outcome p=p/>
        })
    };
    let cancellable = move || state.with(|p| p.as_ref().is_some_and(|p| !is_terminal(p)));
    let cancel_id = StoredValue::new(id.clone());
    view! {
        <section class="progress" data-testid="provision-progress" data-provision-id=id.clone() aria-labelledby=labelled_by>
            <LinkStatus link=link/>
            // One persistent live region, so screen readers hear each new stage.
            <p class="sr-only" aria-live="polite" data-testid="progress-announce">
                {move || state.with(|p| p.as_ref().map(|p| status_label(p.status())))}
            </p>
            {body}
            <Show when=cancellable>
                <div class="cancel-box">
                    <Show when=move || !confirming.get()
                        fallback=move || {
                            view! {
                                <div class="confirm" role="group" aria-label="Cancel provision">
                                    <p>"Delete the server and everything created for it, and stop this provision?"</p>
                                    <div class="actions">
                                        <button type="button" class="button danger" id="progress-cancel-confirm"
                                            disabled=move || cancel.pending().get()
                                            on:click=move |_| { cancel.dispatch(cancel_id.get_value()); }>
                                            {move || if cancel.pending().get() { "Cancelling…" } else { "Yes, cancel it" }}
                                        </button>
                                        <button type="button" class="button" id="progress-cancel-keep"
                                            on:click=move |_| confirming.set(false)>"Keep provisioning"</button>
                                    </div>
                                </div>
                            }
                        }
                    >
                        <button type="button" class="button danger-outline" id="progress-cancel"
                            on:click=move |_| {
                                cancel_error.set(None);
                                confirming.set(true);
                                crate::browser::focus_later("progress-cancel-confirm");
                            }>
                            "Cancel provision"
                        </button>
                    </Show>
                </div>
            </Show>
            {move || cancel_error.get().map(|e| view! { <p class="alert error" role="alert">{e}</p> })}
        </section>
    }
}

fn stop(watch: AbortHandle, ticker: Option<IntervalHandle>) {
    watch.abort();
    if let Some(t) = ticker {
        t.clear();
    }
}

/// Takes a state unless an equal or newer generation was already shown.
fn accept(state: RwSignal<Option<Provision>>, on_change: Callback<Provision>, p: Provision) {
    let newer =
        state.with_untracked(|cur| cur.as_ref().is_none_or(|c| p.generation > c.generation));
    if newer {
        state.set(Some(p.clone()));
        on_change.run(p);
    }
}

/// Watches until the provision is terminal, reconnecting with backoff on transient errors.
async fn follow(
    api: Api,
    id: String,
    state: RwSignal<Option<Provision>>,
    link: RwSignal<Link>,
    on_change: Callback<Provision>,
) {
    let mut backoff = 500;
    loop {
        match api.watch_provision(id.clone()).await {
            Ok(mut stream) => loop {
                match stream.next().await {
                    Ok(Some(p)) => {
                        link.set(Link::Live);
                        backoff = 500;
                        accept(state, on_change, p);
                    }
                    Ok(None) => break,
                    Err(e) if !e.is_transient() => return link.set(Link::Broken(e)),
                    Err(_) => break,
                }
            },
            Err(e) if !e.is_transient() => return link.set(Link::Broken(e)),
            Err(_) => {}
        }
        if state.with_untracked(|p| p.as_ref().is_some_and(is_terminal)) {
            return link.set(Link::Ended);
        }
        link.set(Link::Reconnecting);
        sleep(backoff).await;
        backoff = (backoff * 2).min(10_000);
    }
}

#[component]
fn LinkStatus(link: RwSignal<Link>) -> impl IntoView {
    move || {
        match link.get() {
        Link::Connecting => view! { <p class="link" data-testid="progress-link" data-link="connecting">"Connecting…"</p> }.into_any(),
        Link::Live => view! { <p class="link live" data-testid="progress-link" data-link="live">"● Live"</p> }.into_any(),
        Link::Ended => ().into_any(),
        Link::Reconnecting => view! {
            <p class="link warn" role="status" data-testid="progress-link" data-link="reconnecting">"Connection lost; reconnecting…"</p>
        }.into_any(),
        Link::Broken(e) => {
            let text = match e.kind {
                ErrorKind::NotFound => "This provision does not exist.".to_owned(),
                _ => e.full_message(),
            };
            view! { <p class="alert error" role="alert" data-testid="progress-link" data-link="broken">{text}</p> }.into_any()
        }
    }
    }
}

#[component]
fn Summary(p: Provision, now: RwSignal<f64>) -> impl IntoView {
    let status = p.status();
    let word = status_word(status);
    let total = {
        let p = p.clone();
        move || total_ms(&p, now.get()).map(duration).unwrap_or_default()
    };
    let role = match p.role() {
        Role::Build => "build",
        _ => "general",
    };
    view! {
        <div class="progress-head">
            <p>
                <span class=format!("pill status-{word}") data-testid="progress-status" data-status=word>
                    {status_label(status)}
                </span>
                " "<span class="muted">{move || format!("total {}", total())}</span>
            </p>
            <p class="muted">
                {format!("{} · {} · {} · {role}", label(p.provider()), p.region, p.size)}
                {(!p.ip_address.is_empty()).then(|| format!(" · {}", p.ip_address))}
            </p>
        </div>
    }
}

#[component]
fn Stepper(p: Provision, now: RwSignal<f64>) -> impl IntoView {
    let install = p.install_step();
    let rows = move || {
        stage_views(&p, now.get())
            .into_iter()
            .map(|v| {
                let word = status_word(v.stage);
                let state = v.state.as_str();
                let icon = match v.state {
                    StageState::Done => "✓",
                    StageState::Active => "●",
                    StageState::Failed => "✕",
                    StageState::Pending => "",
                };
                let spoken = match v.state {
                    StageState::Done => "done",
                    StageState::Active => "in progress",
                    StageState::Failed => "failed",
                    StageState::Pending => "not started",
                };
                let sub = (v.stage == ProvisionStatus::Installing && v.state != StageState::Pending)
                    .then(|| install_steps(install));
                view! {
                    <li class=format!("stage {state}") data-testid=format!("stage-{word}") data-state=state
                        aria-current=(v.state == StageState::Active).then_some("step")>
                        <span class="stage-icon" aria-hidden="true">{icon}</span>
                        <span class="stage-name">{status_label(v.stage)}</span>
                        <span class="sr-only">{format!(" ({spoken})")}</span>
                        <span class="stage-time" data-testid=format!("stage-{word}-time")>
                            {v.elapsed_ms.map(duration).unwrap_or_default()}
                        </span>
                        {sub}
                    </li>
                }
            })
            .collect_view()
    };
    view! { <ol class="stepper" aria-label="Provisioning stages" data-testid="progress-stepper">{rows}</ol> }
}

fn install_steps(latest: InstallStep) -> impl IntoView {
    view! {
        <ul class="substeps" data-testid="install-steps">
            {INSTALL_STEPS
                .iter()
                .map(|(step, text)| {
                    let done = install_step_done(latest, *step);
                    view! {
                        <li class:done=done data-done=done.to_string()>
                            <span aria-hidden="true">{if done { "✓ " } else { "○ " }}</span>{*text}
                        </li>
                    }
                })
                .collect_view()}
        </ul>
    }
}

/// The region/size choices when the provision named alternatives: which one is in use and
/// why each earlier one was passed over.
#[component]
fn Choices(p: Provision) -> impl IntoView {
    if p.placements.len() < 2 {
        return ().into_any();
    }
    view! {
        <ul class="choices-tried" aria-label="Region and size choices" data-testid="progress-choices">
            {p.placements
                .iter()
                .map(|c| {
                    let place = format!("{} / {}", c.region, c.size);
                    let (word, text) = match c.outcome() {
                        PlacementOutcome::InUse => ("in_use", format!("{place}: in use")),
                        PlacementOutcome::Rejected => ("rejected", format!("{place}: passed over, {}", c.reason)),
                        _ => ("pending", format!("{place}: not tried")),
                    };
                    view! {
                        <li data-testid=format!("choice-{}-{}", c.region, c.size) data-outcome=word>{text}</li>
                    }
                })
                .collect_view()}
        </ul>
    }
    .into_any()
}

#[component]
fn Outcome(p: Provision) -> impl IntoView {
    match p.status() {
        ProvisionStatus::Failed => {
            let phase = status_label(p.failed_phase()).to_lowercase();
            let code = match p.provider_error_code.is_empty() {
                true => String::new(),
                false => format!(" (provider code: {})", p.provider_error_code),
            };
            let reason = if p.failure_reason.is_empty() {
                "no reason recorded".to_owned()
            } else {
                p.failure_reason.clone()
            };
            let kept = p.keep_on_failure.then_some(
                " The server was kept for debugging; delete it at the provider when done.",
            );
            view! {
                <div class="alert error" role="alert" data-testid="progress-failure">
                    <strong>{format!("Failed while {phase}: ")}</strong>
                    <span data-testid="progress-failure-reason">{reason}</span>
                    {code}
                    {kept}
                </div>
            }
            .into_any()
        }
        ProvisionStatus::Ready => view! {
            <p class="alert ok" data-testid="progress-ready">
                {format!("Node {} enrolled and ready", p.name)}
                {(!p.node_id.is_empty()).then(|| format!(" ({})", p.node_id))}
                ". It is listed under Nodes."
            </p>
        }
        .into_any(),
        _ => ().into_any(),
    }
}
