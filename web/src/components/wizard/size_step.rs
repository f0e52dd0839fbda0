//! Step 3: the size, with CPU, memory, disk, architecture and the live monthly price for
//! the region with its currency and basis (or why it is unavailable). A size the control plane cannot boot (no agent binary for its architecture)
//! is shown disabled, with the reason.
use leptos::prelude::*;

use super::alternatives::Alternatives;
use super::{Draft, Step, StepNav, StepTitle};
use crate::api::use_api;
use crate::components::error_view::error_fallback;
use crate::logic::choices::without;
use crate::logic::format::{price, price_basis, size_specs};
use crate::logic::name::suggest_name;
use crate::logic::providers::slug;

/// The size choice (radio buttons: arrow keys move between sizes).
#[component]
pub fn SizeStep(draft: Draft) -> impl IntoView {
    let api = use_api();
    let sizes = LocalResource::new(move || {
        let provider = draft.provider.get();
        let region = draft.region.get().map(|r| r.id);
        async move {
            match (provider, region) {
                (Some(p), Some(r)) => api.list_sizes(p, r).await,
                _ => Ok(Vec::new()),
            }
        }
    });
    let list = move || {
        Suspend::new(async move {
            sizes.await.map(|list| {
                if list.is_empty() {
                    return view! { <p class="note">"This region offers no sizes. Go back and choose another region."</p> }.into_any();
                }
                list.into_iter()
                    .map(|s| {
                        let id = format!("wizard-size-{}", s.id);
                        let size = s.clone();
                        let unavailable = (!s.unavailable_reason.is_empty()).then(|| s.unavailable_reason.clone());
                        let disabled = unavailable.is_some();
                        let checked = {
                            let sid = s.id.clone();
                            move || draft.size.with(|c| c.as_ref().is_some_and(|c| c.id == sid))
                        };
                        view! {
                            <label class="choice radio" class:disabled=disabled for=id.clone()>
                                <input type="radio" name="wizard-size" id=id.clone() value=s.id.clone()
                                    prop:checked=checked
                                    disabled=disabled
                                    on:change=move |_| {
                                        draft.fallback_sizes.update(|f| *f = without(f, &size.id));
                                        draft.size.set(Some(size.clone()));
                                    }/>
                                <span class="choice-title">{if s.name.is_empty() { s.id.clone() } else { s.name.clone() }}</span>
                                <span class="specs">{size_specs(&s)}</span>
                                <span class="price-block">
                                    <span class="price" data-testid=format!("wizard-price-{}", s.id)>{price(&s)}</span>
                                    <span class="price-basis" data-testid=format!("wizard-price-basis-{}", s.id)>{price_basis(&s)}</span>
                                </span>
                                {unavailable.map(|why| view! {
                                    <span class="note unavailable" data-testid=format!("wizard-unavailable-{}", s.id)>{format!("Unavailable: {why}")}</span>
                                })}
                            </label>
                        }
                    })
                    .collect_view()
                    .into_any()
            })
        })
    };
    let others = move || {
        Suspend::new(async move {
            let list = sizes.await.unwrap_or_default();
            let first = draft.size.get().map(|s| s.id)?;
            let options: Vec<(String, String)> = list
                .iter()
                .filter(|s| s.id != first && s.unavailable_reason.is_empty())
                .map(|s| {
                    (
                        s.id.clone(),
                        format!("{} · {} · {}", s.id, size_specs(s), price(s)),
                    )
                })
                .collect();
            let legend = format!("If {first} is unavailable, try");
            Some(view! {
                <Alternatives legend=legend options=options chosen=draft.fallback_sizes kind="wizard-alt-size"/>
            })
        })
    };
    let next = Callback::new(move |()| {
        if draft.name.get_untracked().is_empty() {
            let p = draft.provider.get_untracked().map(slug).unwrap_or_default();
            let r = draft
                .region
                .get_untracked()
                .map(|r| r.id)
                .unwrap_or_default();
            draft.name.set(suggest_name(p, &r));
        }
        draft.go(Step::Details);
    });
    view! {
        <StepTitle>"Size"</StepTitle>
        <p class="lead">"A build node benefits from more CPU and memory. Prices are per month in this region: the cloud's monthly price, or 730 hours of its hourly rate; an estimate where composed from per-vCPU and per-GiB rates."</p>
        <Transition fallback=|| view! { <p class="loading">"Loading sizes…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || sizes.refetch())>
                <fieldset class="choices sizes">
                    <legend class="sr-only">"Size"</legend>
                    {list}
                </fieldset>
                {others}
            </ErrorBoundary>
        </Transition>
        <StepNav
            back=Callback::new(move |()| draft.go(Step::Region))
            next=next
            can_next=Signal::derive(move || draft.size.with(Option::is_some))
            hint=Signal::derive(move || draft.size.with(Option::is_none).then(|| "Select a size to continue.".to_owned()))
        />
    }
}
