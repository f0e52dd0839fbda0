//! How a failed load is shown inside an `<ErrorBoundary>`, with a retry.
use leptos::prelude::*;

/// The `fallback` of an `<ErrorBoundary>`: every error's message and a "Try again" button.
pub fn error_fallback(
    retry: impl Fn() + Clone + Send + Sync + 'static,
) -> impl FnMut(ArcRwSignal<Errors>) -> AnyView + Clone + Send + 'static {
    move |errors: ArcRwSignal<Errors>| {
        let retry = retry.clone();
        let list = move || {
            errors
                .get()
                .into_iter()
                .map(|(_, e)| view! { <li>{e.to_string()}</li> })
                .collect_view()
        };
        view! {
            <div class="alert error" role="alert" data-testid="load-error">
                <ul>{list}</ul>
                <button type="button" class="button" on:click=move |_| retry()>
                    "Try again"
                </button>
            </div>
        }
        .into_any()
    }
}
