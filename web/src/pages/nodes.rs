//! `/nodes`: the node list, the provisions list, the orphaned servers, and the Add node
//! wizard.
use leptos::prelude::*;

use crate::api::types::Provision;
use crate::api::use_api;
use crate::components::error_view::error_fallback;
use crate::components::nodes_table::NodesTable;
use crate::components::orphans_panel::OrphansPanel;
use crate::components::provisions_table::ProvisionsTable;
use crate::components::wizard::{AddNodeWizard, WizardStart};
use crate::logic::stages::{is_terminal, status_word};

#[component]
pub fn NodesPage() -> impl IntoView {
    let api = use_api();
    // Bumped to refetch the node page.
    let nodes_changed = RwSignal::new(0u32);
    let provisions = LocalResource::new(move || async move { api.list_provisions().await });
    let orphans = LocalResource::new(move || async move { api.list_orphans().await });
    let on_orphans = Callback::new(move |()| {
        orphans.refetch();
        nodes_changed.update(|n| *n += 1);
    });
    let adopted = RwSignal::new(None);
    let notice = RwSignal::new(None);
    let orphan_list = move || {
        Suspend::new(async move {
            orphans.await.map(|o| {
                view! { <OrphansPanel orphans=o on_change=on_orphans adopted=adopted notice=notice/> }
            })
        })
    };
    let dialog = RwSignal::new(None::<WizardStart>);
    // The status last seen per watched provision: lists refresh when it changes, not on
    // every install sub-step.
    let last_status = StoredValue::new(None::<(String, &'static str)>);
    let on_change = Callback::new(move |p: Provision| {
        let key = (p.id.clone(), status_word(p.status()));
        if last_status.get_value().as_ref() != Some(&key) {
            last_status.set_value(Some(key));
            provisions.refetch();
            if p.status() == crate::api::types::ProvisionStatus::Ready {
                nodes_changed.update(|n| *n += 1);
            }
        }
    });
    let on_close = Callback::new(move |()| {
        dialog.set(None);
        provisions.refetch();
        nodes_changed.update(|n| *n += 1);
        crate::browser::focus_later("add-node");
    });
    let on_open = Callback::new(move |id: String| dialog.set(Some(WizardStart::Watch(id))));
    let refresh = move |_| {
        nodes_changed.update(|n| *n += 1);
        provisions.refetch();
        orphans.refetch();
    };
    // The provisions list follows its in-flight provisions while the page is open; once
    // more of them are ready than a tick before, the node list is read again too.
    let ready_before = StoredValue::new(None::<usize>);
    let poll = set_interval_with_handle(
        move || {
            let (in_flight, ready) = provisions.with_untracked(|r| {
                let list = r.as_ref().and_then(|r| r.as_ref().ok());
                (
                    list.is_some_and(|l| l.iter().any(|p| !is_terminal(p))),
                    list.map_or(0, |l| {
                        l.iter()
                            .filter(|p| p.status() == crate::api::types::ProvisionStatus::Ready)
                            .count()
                    }),
                )
            });
            if ready_before
                .get_value()
                .is_some_and(|before| ready > before)
            {
                nodes_changed.update(|n| *n += 1);
            }
            ready_before.set_value(Some(ready));
            if in_flight {
                provisions.refetch();
            }
        },
        std::time::Duration::from_secs(3),
    )
    .ok();
    on_cleanup(move || {
        if let Some(p) = poll {
            p.clear();
        }
    });
    let provision_list = move || {
        Suspend::new(async move {
            provisions
                .await
                .map(|p| view! { <ProvisionsTable provisions=p on_open=on_open/> })
        })
    };
    view! {
        <div class="page-head row">
            <div>
                <h1>"Nodes"</h1>
                <p class="lead">"Machines that run apps and builds. Add one at a connected cloud, and follow it until it enrolls."</p>
            </div>
            <div class="actions">
                <button type="button" class="button" id="refresh-lists" on:click=refresh>"Refresh"</button>
                <button type="button" class="button primary" id="add-node" on:click=move |_| dialog.set(Some(WizardStart::New))>
                    "Add node"
                </button>
            </div>
        </div>
        <section aria-labelledby="nodes-title">
            <h2 id="nodes-title">"Nodes"</h2>
            <NodesTable refresh=nodes_changed.into()/>
        </section>
        <section aria-labelledby="provisions-title">
            <h2 id="provisions-title">"Provisions"</h2>
            <Transition fallback=|| view! { <p class="loading">"Loading provisions…"</p> }>
                <ErrorBoundary fallback=error_fallback(move || provisions.refetch())>{provision_list}</ErrorBoundary>
            </Transition>
        </section>
        <section aria-labelledby="orphans-title">
            <h2 id="orphans-title">"Orphaned servers"</h2>
            <Transition fallback=|| view! { <p class="loading">"Loading orphaned servers…"</p> }>
                <ErrorBoundary fallback=error_fallback(move || orphans.refetch())>{orphan_list}</ErrorBoundary>
            </Transition>
        </section>
        {move || dialog.get().map(|start| view! { <AddNodeWizard start=start on_close=on_close on_change=on_change/> })}
    }
}
