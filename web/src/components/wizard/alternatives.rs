//! "If unavailable, try…": checkboxes for the other regions or sizes, tried in the order
//! they are ticked when the provider has no capacity for the choices before them.
use leptos::prelude::*;

use crate::logic::choices::{MAX_ALTERNATIVES, order_text, toggle};

/// The alternatives of one kind. `options` are (id, label) pairs, the first choice left
/// out by the caller; `chosen` holds the ticked ids in order.
#[component]
pub fn Alternatives(
    /// The fieldset's legend ("If Falkenstein has no capacity, try").
    #[prop(into)]
    legend: Signal<String>,
    /// (id, label) of every other choice.
    options: Vec<(String, String)>,
    /// The ticked ids, in order.
    chosen: RwSignal<Vec<String>>,
    /// Prefix of the checkboxes' ids and test ids (`wizard-alt-region`).
    kind: &'static str,
) -> impl IntoView {
    if options.is_empty() {
        return ().into_any();
    }
    view! {
        <fieldset class="choices alternatives" data-testid=format!("{kind}s")>
            <legend>{move || legend.get()}</legend>
            {options
                .into_iter()
                .map(|(id, text)| {
                    let input_id = format!("{kind}-{id}");
                    let (tick, check, disable) = (id.clone(), id.clone(), id.clone());
                    let checked = move || chosen.with(|c| c.contains(&check));
                    let disabled = move || {
                        chosen.with(|c| c.len() >= MAX_ALTERNATIVES && !c.contains(&disable))
                    };
                    view! {
                        <label class="choice check" for=input_id.clone()>
                            <input type="checkbox" id=input_id.clone() value=id.clone()
                                prop:checked=checked
                                disabled=disabled
                                on:change=move |_| chosen.update(|c| *c = toggle(c, &tick))/>
                            <span class="choice-title">{text}</span>
                        </label>
                    }
                })
                .collect_view()}
            <p class="hint" data-testid=format!("{kind}s-order")>
                {move || chosen.with(|c| match c.is_empty() {
                    true => format!("None: the provision fails if there is no capacity (up to {MAX_ALTERNATIVES})."),
                    false => format!("Tried next, in this order: {}.", order_text(c)),
                })}
            </p>
        </fieldset>
    }
    .into_any()
}
