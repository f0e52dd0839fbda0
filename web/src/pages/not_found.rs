//! Any path without a route.
use leptos::prelude::*;

/// "Not found", with a way back.
#[component]
pub fn NotFoundPage() -> impl IntoView {
    view! {
        <main class="page narrow">
            <h1>"Page not found"</h1>
            <p>"There is nothing at this address. " <a href="/nodes">"Go to Nodes"</a> "."</p>
        </main>
    }
}
