//! `/settings/node-providers`: the five provider cards.
use leptos::prelude::*;

use crate::api::use_api;
use crate::components::error_view::error_fallback;
use crate::components::provider_card::ProviderCard;

/// Settings › Cloud node providers.
#[component]
pub fn NodeProvidersPage() -> impl IntoView {
    let api = use_api();
    // Loaded once per visit; every write returns the updated card, so nothing refetches.
    let providers = LocalResource::new(move || async move { api.list_providers().await });
    let cards = move || {
        Suspend::new(async move {
            providers.await.map(|list| {
                list.into_iter()
                    .map(|p| view! { <ProviderCard initial=p/> })
                    .collect_view()
            })
        })
    };
    view! {
        <div class="page-head">
            <p class="crumbs">"Settings"</p>
            <h1>"Cloud node providers"</h1>
            <p class="lead">
                "Store one credential per cloud to create nodes there. Credentials are encrypted at rest and never shown again; a new one replaces the old."
            </p>
        </div>
        <Transition fallback=|| view! { <p class="loading" data-testid="loading">"Loading providers…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || providers.refetch())>
                <div class="cards" data-testid="provider-cards">{cards}</div>
            </ErrorBoundary>
        </Transition>
    }
}
