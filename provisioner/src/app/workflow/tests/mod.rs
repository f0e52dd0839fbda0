//! Workflow tests (omicron's saga test discipline): a failure injected at every step
//! unwinds to a clean slate, every step and every undo can run twice, a crash after any
//! step resumes to exactly one server, timeouts and cancels clean up, and any number of
//! watchers share one driver. They run on the memory store with Tokio's paused clock (the
//! provisioner's clock follows it), against an in-memory fake cloud.
mod backends;
mod crash;
pub(crate) mod fake;
mod fallback;
pub(crate) mod granted;
pub(crate) mod harness;
mod polling;
mod retries;
mod saga;
mod sweeper;
mod unwind;
mod watch;

/// The saga's steps see their narrow context (`StepContext`, through `Driver::cx`) and
/// change the provision only through the driver's `commit`, `reload` and `refresh`: no step
/// file names the shared state, the provision store, the change feed or the lease owner.
#[test]
fn steps_see_only_their_context() {
    let steps = [
        ("calls.rs", include_str!("../calls.rs")),
        ("create.rs", include_str!("../create.rs")),
        ("steps.rs", include_str!("../steps.rs")),
        ("wait.rs", include_str!("../wait.rs")),
        ("undo.rs", include_str!("../undo.rs")),
    ];
    let reached: Vec<String> = steps
        .iter()
        .flat_map(|(file, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| {
                    let code = line.split("//").next().unwrap_or_default();
                    ["shared", ".store", ".events", ".owner"]
                        .iter()
                        .any(|name| names(code, name))
                })
                .map(move |(n, line)| format!("{file}:{}: {}", n + 1, line.trim()))
        })
        .collect();
    assert!(
        reached.is_empty(),
        "a step reaches past its context: {reached:#?}"
    );
}

/// Whether `code` holds `name` as a whole word (`.owner`, not `.ownership`).
fn names(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        !code[at + name.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}
