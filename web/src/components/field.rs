//! A labelled input with help text and the error beside it (linked by
//! `aria-describedby`, announced as an alert).
use leptos::prelude::*;

/// What kind of control a [`Field`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// One line of text.
    Text,
    /// A secret: masked, never autofilled by the browser.
    Password,
    /// Several lines of text.
    TextArea,
}

/// One form field. The input's `id` names the label, help and error elements too
/// (`<id>-help`, `<id>-error`).
#[component]
pub fn Field(
    /// Element id (also the test id).
    #[prop(into)]
    id: String,
    /// Visible label.
    label: &'static str,
    /// Text, password or text area.
    kind: InputKind,
    /// The value, two-way.
    value: RwSignal<String>,
    /// The message shown beside the input, when any.
    #[prop(into)]
    error: Signal<Option<String>>,
    /// Help under the input.
    #[prop(optional, into)]
    help: Option<Signal<String>>,
    /// Placeholder text.
    #[prop(optional)]
    placeholder: &'static str,
    /// Called after every edit (forms use it to clear a stale server error).
    #[prop(optional)]
    on_edit: Option<Callback<()>>,
) -> impl IntoView {
    let error_id = format!("{id}-error");
    let help_id = format!("{id}-help");
    let has_help = help.is_some();
    let described_by = {
        let (error_id, help_id) = (error_id.clone(), help_id.clone());
        move || {
            let mut ids = Vec::new();
            if has_help {
                ids.push(help_id.clone());
            }
            if error.with(Option::is_some) {
                ids.push(error_id.clone());
            }
            (!ids.is_empty()).then(|| ids.join(" "))
        }
    };
    let invalid = move || error.with(Option::is_some).then_some("true");
    let on_input = move |ev| {
        value.set(event_target_value(&ev));
        if let Some(cb) = on_edit {
            cb.run(());
        }
    };
    let control = match kind {
        InputKind::TextArea => view! {
            <textarea
                id=id.clone()
                name=id.clone()
                rows="3"
                spellcheck="false"
                placeholder=placeholder
                aria-invalid=invalid
                aria-describedby=described_by.clone()
                prop:value=move || value.get()
                on:input=on_input
            ></textarea>
        }
        .into_any(),
        InputKind::Text | InputKind::Password => view! {
            <input
                id=id.clone()
                name=id.clone()
                type=if kind == InputKind::Password { "password" } else { "text" }
                autocomplete=if kind == InputKind::Password { "new-password" } else { "off" }
                spellcheck="false"
                autocapitalize="off"
                placeholder=placeholder
                aria-invalid=invalid
                aria-describedby=described_by
                prop:value=move || value.get()
                on:input=on_input
            />
        }
        .into_any(),
    };
    view! {
        <div class="field" class:invalid=move || error.with(Option::is_some)>
            <label for=id>{label}</label>
            {control}
            {help.map(|h| view! { <p class="help" id=help_id.clone()>{h}</p> })}
            {move || {
                error
                    .get()
                    .map(|e| {
                        view! {
                            <p class="field-error" id=error_id.clone() data-testid=error_id.clone() role="alert">
                                {e}
                            </p>
                        }
                    })
            }}
        </div>
    }
}
