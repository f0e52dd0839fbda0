//! Step 3: the size, with CPU, memory, disk, architecture and the live monthly price for
//! the region with its currency and basis (or why it is unavailable). Sizes sort by price,
//! vCPUs or memory and filter by a minimum of each; a size the control plane cannot boot
//! (no agent binary for its architecture) is shown disabled, with the reason, after the
//! others. "Compare across connected clouds" shows each connected cloud's cheapest size
//! meeting the same minimum.
use leptos::prelude::*;

use super::alternatives::Alternatives;
use super::{Draft, Step, StepNav, StepTitle};
use crate::api::types::{Provider, Size};
use crate::api::use_api;
use crate::components::error_view::error_fallback;
use crate::logic::choices::without;
use crate::logic::format::{price, price_basis, size_specs};
use crate::logic::name::suggest_name;
use crate::logic::providers::{label, slug};
use crate::logic::sizes::{SizeFilter, SizeOrder, arrange, cheapest};

/// The minimums offered by the filters.
const VCPUS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
const MEMORY_GB: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

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
    let order = RwSignal::new(SizeOrder::Price);
    let filter = RwSignal::new(SizeFilter::default());
    let list = move || {
        Suspend::new(async move {
            sizes.await.map(|list| {
                if list.is_empty() {
                    return view! { <p class="note">"This region offers no sizes. Go back and choose another region."</p> }.into_any();
                }
                let shown = arrange(&list, filter.get(), order.get());
                if shown.is_empty() {
                    return view! { <p class="note" data-testid="wizard-sizes-filtered">"No size here has that many vCPUs and that much memory. Lower the minimum."</p> }.into_any();
                }
                shown.into_iter()
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
    let comparing = RwSignal::new(false);
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
        <SizeControls order=order filter=filter/>
        <Transition fallback=|| view! { <p class="loading">"Loading sizes…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || sizes.refetch())>
                <fieldset class="choices sizes">
                    <legend class="sr-only">"Size"</legend>
                    {list}
                </fieldset>
                {others}
            </ErrorBoundary>
        </Transition>
        <details class="compare" data-testid="compare-clouds" on:toggle=move |ev| {
            let open = event_target::<web_sys::HtmlDetailsElement>(&ev).open();
            comparing.set(open);
        }>
            <summary>"Compare across connected clouds"</summary>
            <Show when=move || comparing.get()>
                <CompareClouds filter=filter.into() draft=draft/>
            </Show>
        </details>
        <StepNav
            back=Callback::new(move |()| draft.go(Step::Region))
            next=next
            can_next=Signal::derive(move || draft.size.with(Option::is_some))
            hint=Signal::derive(move || draft.size.with(Option::is_none).then(|| "Select a size to continue.".to_owned()))
        />
    }
}

/// Sort order and the minimum vCPUs and memory.
#[component]
fn SizeControls(order: RwSignal<SizeOrder>, filter: RwSignal<SizeFilter>) -> impl IntoView {
    let minimum = |values: &'static [u32], unit: &'static str| {
        std::iter::once(view! { <option value="0">"Any"</option> }.into_any())
            .chain(values.iter().map(move |v| {
                view! { <option value=*v>{format!("{v}{unit}")}</option> }.into_any()
            }))
            .collect_view()
    };
    let number = |ev: &leptos::ev::Event| event_target_value(ev).parse::<u32>().unwrap_or(0);
    view! {
        <div class="filters" role="group" aria-label="Sort and filter sizes">
            <label>"Sort by "
                <select data-testid="wizard-size-order" on:change=move |ev| order.set(SizeOrder::from_value(&event_target_value(&ev)))>
                    {[SizeOrder::Price, SizeOrder::Vcpus, SizeOrder::Memory].into_iter().map(|o| {
                        let text = match o { SizeOrder::Price => "Price", SizeOrder::Vcpus => "vCPUs", SizeOrder::Memory => "Memory" };
                        view! { <option value=o.as_str()>{text}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label>"At least "
                <select data-testid="wizard-min-vcpus" aria-label="Minimum vCPUs"
                    on:change=move |ev| filter.update(|f| f.min_vcpus = number(&ev))>
                    {minimum(&VCPUS, " vCPU")}
                </select>
            </label>
            <label>"and "
                <select data-testid="wizard-min-memory" aria-label="Minimum memory"
                    on:change=move |ev| filter.update(|f| f.min_memory_gb = number(&ev))>
                    {minimum(&MEMORY_GB, " GB")}
                </select>
            </label>
        </div>
    }
}

/// One connected cloud's sizes in the region compared.
#[derive(Debug, Clone)]
struct CloudSizes {
    provider: Provider,
    region: String,
    sizes: Result<Vec<Size>, String>,
}

/// Each connected cloud's cheapest bootable size meeting `filter`, in the region chosen
/// for the current cloud and the first region of the others.
#[component]
fn CompareClouds(filter: Signal<SizeFilter>, draft: Draft) -> impl IntoView {
    let api = use_api();
    let clouds = LocalResource::new(move || {
        let current = draft.provider.get_untracked();
        let region = draft.region.get_untracked().map(|r| r.id);
        async move {
            let connected: Vec<Provider> = api
                .list_providers()
                .await?
                .iter()
                .filter(|p| p.connected)
                .map(|p| p.provider())
                .collect();
            let reads = connected.into_iter().map(|p| {
                let here = (Some(p) == current).then(|| region.clone()).flatten();
                async move {
                    let region = match here {
                        Some(r) => r,
                        None => match api.list_regions(p).await {
                            Ok(list) => list.into_iter().next().map(|r| r.id).unwrap_or_default(),
                            Err(e) => {
                                return CloudSizes {
                                    provider: p,
                                    region: String::new(),
                                    sizes: Err(e.full_message()),
                                };
                            }
                        },
                    };
                    let sizes = api
                        .list_sizes(p, region.clone())
                        .await
                        .map_err(|e| e.full_message());
                    CloudSizes {
                        provider: p,
                        region,
                        sizes,
                    }
                }
            });
            Ok::<_, crate::api::ApiError>(futures::future::join_all(reads).await)
        }
    });
    let rows = move || {
        Suspend::new(async move {
            clouds.await.map(|clouds| {
                let f = filter.get();
                let wanted = match (f.min_vcpus, f.min_memory_gb) {
                    (0, 0) => "any size".to_owned(),
                    (c, m) => format!("at least {c} vCPU and {m} GB"),
                };
                view! {
                    <p class="note">{format!("The cheapest size that can be provisioned, {wanted}, per connected cloud. Prices are in each cloud's currency.")}</p>
                    <div class="table-scroll" tabindex="0" role="region" aria-label="Cheapest size per cloud table">
                    <table class="table" data-testid="compare-table">
                        <thead><tr><th scope="col">"Cloud"</th><th scope="col">"Region"</th><th scope="col">"Size"</th><th scope="col">"Price"</th></tr></thead>
                        <tbody>
                            {clouds.into_iter().map(|c| compare_row(c, f)).collect_view()}
                        </tbody>
                    </table>
                    </div>
                }
            })
        })
    };
    view! {
        <Transition fallback=|| view! { <p class="loading">"Reading every connected cloud's sizes…"</p> }>
            <ErrorBoundary fallback=error_fallback(move || clouds.refetch())>{rows}</ErrorBoundary>
        </Transition>
    }
}

fn compare_row(c: CloudSizes, filter: SizeFilter) -> impl IntoView {
    let (size, cost) = match &c.sizes {
        Err(e) => (e.clone(), String::new()),
        Ok(list) => match cheapest(list, filter) {
            None => ("No size meets the minimum".to_owned(), String::new()),
            Some(s) => (
                format!("{} · {}", s.id, size_specs(&s)),
                format!("{} ({})", price(&s), price_basis(&s)),
            ),
        },
    };
    view! {
        <tr data-testid=format!("compare-{}", slug(c.provider))>
            <th scope="row">{label(c.provider)}</th>
            <td class="mono">{c.region}</td>
            <td>{size}</td>
            <td data-testid=format!("compare-price-{}", slug(c.provider))>{cost}</td>
        </tr>
    }
}
