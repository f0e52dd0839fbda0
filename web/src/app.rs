//! The app root: session and API context, the routes, and the signed-in shell.
use leptos::prelude::*;
use leptos_router::components::{A, Outlet, ParentRoute, Redirect, Route, Router, Routes};
use leptos_router::hooks::use_location;
use leptos_router::path;

use crate::api::provide_api;
use crate::pages::{
    ApiTokensPage, AuditLogPage, NodeDetailPage, NodeProvidersPage, NodesPage, NotFoundPage,
    ProvisionDetailPage, SignInPage,
};
use crate::session::Session;

/// The whole app.
#[component]
pub fn App() -> impl IntoView {
    let session = Session::load();
    provide_context(session);
    provide_api(session);
    view! {
        <Router>
            <Routes fallback=NotFoundPage>
                <Route path=path!("/sign-in") view=SignInPage/>
                <ParentRoute path=path!("") view=SignedInShell>
                    <Route path=path!("") view=|| view! { <Redirect path="/nodes"/> }/>
                    <Route path=path!("/nodes") view=NodesPage/>
                    <Route path=path!("/nodes/:id") view=NodeDetailPage/>
                    <Route path=path!("/provisions/:id") view=ProvisionDetailPage/>
                    <Route path=path!("/settings/node-providers") view=NodeProvidersPage/>
                    <Route path=path!("/settings/api-tokens") view=ApiTokensPage/>
                    <Route path=path!("/settings/audit-log") view=AuditLogPage/>
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// Header, navigation and sign-out around the pages that need a token; without one it
/// sends the browser to the sign-in page (and back here afterwards).
#[component]
fn SignedInShell() -> impl IntoView {
    let session = expect_context::<Session>();
    let location = use_location();
    let sign_in_path = move || {
        let here = location.pathname.get_untracked();
        format!("/sign-in?next={}", js_sys::encode_uri_component(&here))
    };
    view! {
        <Show
            when=move || session.is_signed_in()
            fallback=move || view! { <Redirect path=sign_in_path()/> }
        >
            <header class="topbar">
                <a class="brand" href="/nodes">"Levelrail"</a>
                <nav aria-label="Main">
                    <A href="/nodes">"Nodes"</A>
                    <A href="/settings/node-providers">"Cloud node providers"</A>
                    <A href="/settings/api-tokens">"API tokens"</A>
                    <A href="/settings/audit-log">"Audit log"</A>
                </nav>
                <button
                    type="button"
                    class="button ghost"
                    id="sign-out"
                    data-testid="sign-out"
                    on:click=move |_| session.sign_out()
                >
                    "Sign out"
                </button>
            </header>
            <main id="main" class="page">
                <Outlet/>
            </main>
        </Show>
    }
}
