//! Step 1: the provider. Only connected providers can be chosen; the others link to the
//! settings page to connect one.
use leptos::prelude::*;

use super::{Draft, Step, StepTitle};
use crate::api::types::ProviderStatus;
use crate::api::use_api;
use crate::components::error_view::error_fallback;
use crate::logic::providers::{label, slug};

/// The provider choice.
#[component]
pub fn ProviderStep(draft: Draft) -> impl IntoView {
    let api = use_api();
    let providers = LocalResource::new(move || async move { api.list_providers().await });
    let choose = move |p: ProviderStatus| {
        let provider = p.provider();
        if draft.provider.get_untracked() != Some(provider) {
            draft.region.set(None);
            draft.size.set(None);
        }
        draft.provider.set(Some(provider));
        draft.go(Step::Region);
    };
    let list = move || {
        Suspend::new(async move {
            providers.await.map(|cards| {
                cards
                    .into_iter()
                    .map(|p| {
                        let provider = p.provider();
                        let slug = slug(provider);
                        let connected = p.connected;
                        let chosen = move || draft.provider.get() == Some(provider);
                        let p2 = p.clone();
                        view! {
                            <li class="choice-row">
                                <button
                                    type="button"
                                    class="choice"
                                    class:chosen=chosen
                                    id=format!("wizard-provider-{slug}")
                                    data-testid=format!("wizard-provider-{slug}")
                                    disabled=!connected
                                    aria-describedby=(!connected).then(|| format!("wizard-provider-{slug}-note"))
                                    on:click=move |_| choose(p2.clone())
                                >
                                    <span class="choice-title">{label(provider)}</span>
                                    <span class=if connected { "pill ok" } else { "pill muted" }>
                                        {if connected { "Connected" } else { "Not connected" }}
                                    </span>
                                </button>
                                {(!connected).then(|| view! {
                                    <p class="note" id=format!("wizard-provider-{slug}-note")>
                                        "No credential stored yet. "
                                        <a href="/settings/node-providers" data-testid=format!("wizard-connect-{slug}")>"Connect one"</a>
                                    </p>
                                })}
                            </li>
                        }
                    })
                    .collect_view()
            })
        })
    };
    view! {
        <StepTitle>"Where should the server run?"</StepTitle>
        <p class="lead">"Levelrail creates the server with the stored credential and enrolls it as a node. The provider bills for it while it exists."</p>
        <Transition fallback=|| view! { <p class="loading">"Loading providers…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || providers.refetch())>
                <ul class="choices" role="list">{list}</ul>
            </ErrorBoundary>
        </Transition>
    }
}
