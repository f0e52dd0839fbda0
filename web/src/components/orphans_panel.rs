//! The "Orphaned servers" panel: servers this control plane made that no provision or node
//! accounts for, each pending one with Adopt (shows the agent's env file once) and Delete
//! (after an inline confirmation). Every control is a button, so it works from the keyboard.
use leptos::prelude::*;

use crate::api::types::{AdoptOrphanResponse, Orphan, OrphanReason, OrphanState};
use crate::api::use_api;
use crate::logic::providers::label;

/// The orphans table (or a note when there are none). `on_change` runs after an adoption
/// or a deletion, so the page can refetch; `adopted` and `notice` belong to the page, so
/// the env file shown once and the last outcome survive that refetch.
#[component]
pub fn OrphansPanel(
    orphans: Vec<Orphan>,
    on_change: Callback<()>,
    adopted: RwSignal<Option<AdoptOrphanResponse>>,
    notice: RwSignal<Option<String>>,
) -> impl IntoView {
    let body = if orphans.is_empty() {
        view! { <p class="empty" data-testid="orphans-empty">"No orphaned servers."</p> }.into_any()
    } else {
        view! {
            <div class="table-scroll" tabindex="0" role="region" aria-label="Orphaned servers table"><table class="table" data-testid="orphans-table">
                <thead>
                    <tr><th scope="col">"Server"</th><th scope="col">"Provider"</th><th scope="col">"Why"</th>
                        <th scope="col">"State"</th><th scope="col">"Attempts"</th>
                        <th scope="col"><span class="sr-only">"Actions"</span></th></tr>
                </thead>
                <tbody>
                    {orphans.into_iter().map(|o| view! { <OrphanRow orphan=o adopted=adopted notice=notice on_change=on_change/> }).collect_view()}
                </tbody>
            </table></div>
        }
        .into_any()
    };
    view! {
        {body}
        {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="orphans-notice">{n}</p> })}
        {move || adopted.get().map(adoption_view)}
    }
}

#[component]
fn OrphanRow(
    orphan: Orphan,
    adopted: RwSignal<Option<AdoptOrphanResponse>>,
    notice: RwSignal<Option<String>>,
    on_change: Callback<()>,
) -> impl IntoView {
    let api = use_api();
    let confirming = RwSignal::new(false);
    let id = orphan.id.clone();
    let name = orphan.node_name.clone();
    let adopt = Action::new_local(move |id: &String| {
        let id = id.clone();
        async move {
            match api.adopt_orphan(id).await {
                Ok(a) => {
                    adopted.set(Some(a));
                    notice.set(None);
                    on_change.run(());
                }
                Err(e) => notice.set(Some(e.full_message())),
            }
        }
    });
    let delete = Action::new_local(move |id: &String| {
        let id = id.clone();
        async move {
            match api.delete_orphan(id).await {
                Ok(r) if r.deleted => {
                    notice.set(Some("The server was deleted.".into()));
                    on_change.run(());
                }
                Ok(r) => notice.set(Some(format!(
                    "The server was not deleted: {}",
                    r.orphan.map(|o| o.last_error).unwrap_or_default()
                ))),
                Err(e) => notice.set(Some(e.full_message())),
            }
        }
    });
    let pending = orphan.state() == OrphanState::Pending;
    let busy = move || adopt.pending().get() || delete.pending().get();
    let (adopt_id, delete_id) = (id.clone(), id.clone());
    let adopt_test = format!("adopt-orphan-{name}");
    let delete_test = format!("delete-orphan-{name}");
    view! {
        <tr data-testid=format!("orphan-row-{name}") data-state=state_word(orphan.state())>
            <th scope="row">{name.clone()}<span class="muted small mono">{format!(" {}", orphan.server_id)}</span></th>
            <td>{label(orphan.provider())}</td>
            <td>{reason_text(orphan.reason())}</td>
            <td><span class="pill">{state_word(orphan.state())}</span></td>
            <td title=orphan.last_error.clone()>{orphan.attempts}</td>
            <td>
                <Show when=move || pending && !confirming.get()>
                    <button type="button" class="button small" data-testid=adopt_test.clone()
                        disabled=busy on:click={let id = adopt_id.clone(); move |_| { adopt.dispatch(id.clone()); }}>
                        "Adopt"
                    </button>
                    <button type="button" class="button small danger-outline" data-testid=delete_test.clone()
                        disabled=busy on:click=move |_| confirming.set(true)>
                        "Delete"
                    </button>
                </Show>
                <Show when=move || confirming.get()>
                    <span role="group" aria-label="Confirm deletion">
                        "Delete this server at its provider? "
                        <button type="button" class="button small danger" data-testid="confirm-delete-orphan"
                            disabled=busy on:click={let id = delete_id.clone(); move |_| { confirming.set(false); delete.dispatch(id.clone()); }}>
                            "Delete server"
                        </button>
                        <button type="button" class="button small" on:click=move |_| confirming.set(false)>"Cancel"</button>
                    </span>
                </Show>
            </td>
        </tr>
    }
}

/// What the operator runs on an adopted server; shown once.
fn adoption_view(a: AdoptOrphanResponse) -> impl IntoView {
    view! {
        <div class="card" role="region" aria-label="Adopted server" data-testid="adoption">
            <p>{format!("Write this to {} (mode 0600) on the server, then run:", a.env_file_path)}</p>
            <pre class="mono" data-testid="adoption-env">{a.env_file.clone()}</pre>
            <pre class="mono" data-testid="adoption-command">{a.command.clone()}</pre>
            <p class="muted small">"The join token is shown only this once."</p>
        </div>
    }
}

fn state_word(s: OrphanState) -> &'static str {
    match s {
        OrphanState::Pending => "pending",
        OrphanState::Deleted => "deleted",
        OrphanState::Adopted => "adopted",
        OrphanState::Unspecified => "unknown",
    }
}

fn reason_text(r: OrphanReason) -> &'static str {
    match r {
        OrphanReason::UndoGaveUp => "cleanup gave up",
        OrphanReason::FailedProvision => "failed provision",
        OrphanReason::UnknownProvision => "unknown provision",
        OrphanReason::Unspecified => "unknown",
    }
}
