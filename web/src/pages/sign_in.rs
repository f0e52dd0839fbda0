//! `/sign-in`: the API token, checked with one call before it is kept for the tab.
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::api::{Api, ApiError, ErrorKind};
use crate::components::field::{Field, InputKind};
use crate::session::Session;

/// The sign-in form.
#[component]
pub fn SignInPage() -> impl IntoView {
    let session = expect_context::<Session>();
    let query = use_query_map();
    let navigate = use_navigate();
    let token = RwSignal::new(String::new());
    let error = RwSignal::new(None::<String>);
    // Only same-app paths are followed after signing in.
    let next = move || {
        query
            .get_untracked()
            .get("next")
            .filter(|n| n.starts_with('/') && !n.starts_with("//"))
            .unwrap_or_else(|| "/nodes".to_owned())
    };
    let check = Action::new_local(move |candidate: &String| {
        let candidate = candidate.clone();
        async move { Api::check_token(&candidate).await.map(|()| candidate) }
    });
    Effect::new(move |_| {
        if let Some(result) = check.value().get() {
            match result {
                Ok(t) => {
                    token.set(String::new());
                    session.sign_in(t);
                    navigate(&next(), Default::default());
                }
                Err(e) => error.set(Some(describe(&e))),
            }
        }
    });
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let t = token.get_untracked().trim().to_owned();
        if t.is_empty() {
            error.set(Some("Enter the API token.".into()));
            return;
        }
        error.set(None);
        check.dispatch(t);
    };
    view! {
        <main class="page narrow sign-in">
            <h1>"Sign in to Levelrail"</h1>
            <form class="card" on:submit=submit novalidate>
                <Field
                    id="api-token"
                    label="API token"
                    kind=InputKind::Password
                    value=token
                    error=Signal::derive(move || error.get())
                    help="The admin token was printed at the first start and saved to levelrail-data/admin.token. It is kept only for this browser tab."
                    on_edit=Callback::new(move |()| error.set(None))
                />
                <div class="actions">
                    <button
                        type="submit"
                        class="button primary"
                        id="sign-in-submit"
                        disabled=move || check.pending().get()
                    >
                        {move || if check.pending().get() { "Signing in…" } else { "Sign in" }}
                    </button>
                </div>
            </form>
        </main>
    }
}

fn describe(e: &ApiError) -> String {
    match e.kind {
        ErrorKind::SignedOut => "That token was not accepted. Check it and try again.".into(),
        _ => e.message.clone(),
    }
}
