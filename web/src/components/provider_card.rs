//! One card of Settings › Cloud node providers: connection pill, identity, last
//! verification, the credential form, Verify and Disconnect.
use leptos::prelude::*;

use crate::api::types::ProviderStatus;
use crate::api::use_api;
use crate::components::identity::IdentityFacts;
use crate::components::provider_form::ProviderForm;
use crate::logic::providers::{label, slug};

/// A short outcome line under the card's buttons.
#[derive(Debug, Clone)]
enum Notice {
    Ok(String),
    Err(String),
}

/// The card. It keeps its own copy of the provider's status and replaces it with the
/// card every write returns, so a write never reloads (and never clears) other cards.
#[component]
pub fn ProviderCard(initial: ProviderStatus) -> impl IntoView {
    let api = use_api();
    let provider = initial.provider();
    let slug = slug(provider);
    let name = label(provider);
    let status = RwSignal::new(initial);
    let notice = RwSignal::new(None::<Notice>);
    let confirming = RwSignal::new(false);
    let connected = Signal::derive(move || status.with(|s| s.connected));

    let verify = Action::new_local(move |_: &()| async move {
        match api.verify_credential(provider).await {
            Ok((result, card)) => {
                status.set(card);
                notice.set(Some(match result.ok {
                    true => Notice::Ok(format!("Verified: {}", result.message)),
                    false => Notice::Err(format!("Verification failed: {}", result.message)),
                }));
            }
            Err(e) => notice.set(Some(Notice::Err(e.full_message()))),
        }
    });
    let disconnect = Action::new_local(move |_: &()| async move {
        match api.delete_credential(provider).await {
            Ok(card) => {
                status.set(card);
                confirming.set(false);
                notice.set(Some(Notice::Ok(format!(
                    "Disconnected. The {name} credential was deleted."
                ))));
            }
            Err(e) => notice.set(Some(Notice::Err(e.full_message()))),
        }
    });
    // A saved credential is verified at once, so the card shows what it can do.
    let on_saved = Callback::new(move |card: ProviderStatus| {
        notice.set(None);
        status.set(card);
        verify.dispatch(());
    });
    let busy = move || verify.pending().get() || disconnect.pending().get();

    view! {
        <article
            class="card provider-card"
            data-testid=format!("provider-card-{slug}")
            data-connected=move || connected.get().to_string()
            aria-labelledby=format!("provider-{slug}-title")
        >
            <header class="card-head">
                <h2 id=format!("provider-{slug}-title")>{name}</h2>
                <span
                    class=move || if connected.get() { "pill ok" } else { "pill muted" }
                    data-testid=format!("provider-status-{slug}")
                >
                    {move || if connected.get() { "Connected" } else { "Not connected" }}
                </span>
            </header>
            <IdentityFacts status=status.into() slug=slug/>
            <ProviderForm provider=provider connected=connected on_saved=on_saved/>
            <div class="actions secondary">
                <button
                    type="button"
                    class="button"
                    id=format!("{slug}-verify")
                    disabled=move || !connected.get() || busy()
                    on:click=move |_| { notice.set(None); verify.dispatch(()); }
                >
                    {move || if verify.pending().get() { "Verifying…" } else { "Verify" }}
                </button>
                <Show when=move || !confirming.get()>
                    <button
                        type="button"
                        class="button danger-outline"
                        id=format!("{slug}-disconnect")
                        disabled=move || !connected.get() || busy()
                        on:click=move |_| {
                            notice.set(None);
                            confirming.set(true);
                            crate::browser::focus_later(format!("{slug}-disconnect-confirm"));
                        }
                    >
                        "Disconnect"
                    </button>
                </Show>
            </div>
            <Show when=move || confirming.get()>
                <div class="confirm" role="group" aria-label=format!("Disconnect {name}")>
                    <p>{format!("Delete the stored {name} credential? Provisioning with {name} stops until you connect it again.")}</p>
                    <div class="actions">
                        <button
                            type="button"
                            class="button danger"
                            id=format!("{slug}-disconnect-confirm")
                            disabled=busy
                            on:click=move |_| { disconnect.dispatch(()); }
                        >
                            {move || if disconnect.pending().get() { "Disconnecting…" } else { "Delete credential" }}
                        </button>
                        <button
                            type="button"
                            class="button"
                            id=format!("{slug}-disconnect-keep")
                            on:click=move |_| confirming.set(false)
                        >
                            "Keep it"
                        </button>
                    </div>
                </div>
            </Show>
            {move || notice.get().map(|n| {
                let (class, text) = match n {
                    Notice::Ok(t) => ("alert ok", t),
                    Notice::Err(t) => ("alert error", t),
                };
                view! { <p class=class role="status" data-testid=format!("provider-notice-{slug}")>{text}</p> }
            })}
        </article>
    }
}
