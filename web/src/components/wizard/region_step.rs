//! Step 2: the region, from the provider's (cached) catalog.
use leptos::prelude::*;

use super::alternatives::Alternatives;
use super::{Draft, Step, StepNav, StepTitle};
use crate::api::types::Region;
use crate::api::use_api;
use crate::components::error_view::error_fallback;
use crate::logic::choices::without;
use crate::logic::providers::label;

/// "Falkenstein DC Park 1 (fsn1)", or the id alone.
fn region_text(r: &Region) -> String {
    match r.name.is_empty() {
        true => r.id.clone(),
        false => format!("{} ({})", r.name, r.id),
    }
}

/// The region choice.
#[component]
pub fn RegionStep(draft: Draft) -> impl IntoView {
    let api = use_api();
    let regions = LocalResource::new(move || {
        let provider = draft.provider.get();
        async move {
            match provider {
                Some(p) => api.list_regions(p).await,
                None => Ok(Vec::new()),
            }
        }
    });
    let select = move || {
        Suspend::new(async move {
            regions.await.map(|list| {
                let on_change = {
                    let list = list.clone();
                    move |ev| {
                        let id = event_target_value(&ev);
                        let region = list.iter().find(|r| r.id == id).cloned();
                        if draft.region.get_untracked().map(|r| r.id) != region.as_ref().map(|r| r.id.clone()) {
                            draft.size.set(None);
                            draft.fallback_sizes.set(Vec::new());
                        }
                        draft.fallback_regions.update(|f| *f = without(f, &id));
                        draft.region.set(region);
                    }
                };
                let chosen = draft.region.get_untracked().map(|r| r.id).unwrap_or_default();
                let others = {
                    let list = list.clone();
                    move || {
                        let first = draft.region.get().map(|r| r.id)?;
                        let options: Vec<(String, String)> = list
                            .iter()
                            .filter(|r| r.id != first)
                            .map(|r| (r.id.clone(), region_text(r)))
                            .collect();
                        let legend = format!("If {first} has no capacity, try");
                        Some(view! {
                            <Alternatives legend=legend options=options chosen=draft.fallback_regions kind="wizard-alt-region"/>
                        })
                    }
                };
                view! {
                    <div class="field">
                        <label for="wizard-region">"Region"</label>
                        <select id="wizard-region" on:change=on_change prop:value=chosen.clone()>
                            <option value="" selected=chosen.is_empty()>"Choose a region"</option>
                            {list
                                .into_iter()
                                .map(|r| {
                                    let text = region_text(&r);
                                    let selected = r.id == chosen;
                                    view! { <option value=r.id.clone() selected=selected>{text}</option> }
                                })
                                .collect_view()}
                        </select>
                    </div>
                    {others}
                }
            })
        })
    };
    let provider_name = move || draft.provider.get().map(label).unwrap_or_default();
    view! {
        <StepTitle>"Region"</StepTitle>
        <p class="lead">{move || format!("Where {} should create the server.", provider_name())}</p>
        <Transition fallback=|| view! { <p class="loading">"Loading regions…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || regions.refetch())>
                {select}
            </ErrorBoundary>
        </Transition>
        <StepNav
            back=Callback::new(move |()| draft.go(Step::Provider))
            next=Callback::new(move |()| draft.go(Step::Size))
            can_next=Signal::derive(move || draft.region.with(Option::is_some))
            hint=Signal::derive(move || draft.region.with(Option::is_none).then(|| "Select a region to continue.".to_owned()))
        />
    }
}
