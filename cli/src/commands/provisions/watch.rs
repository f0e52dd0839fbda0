//! Following a provision live over `WatchProvision`: one line per change
//! (`HH:MM:SS  <status>[ (<install step>)]  …`, UTC) with how long each finished stage took,
//! or one JSON line per change under `--json`. Ends 0 on `ready` and 1 on `failed` (the
//! reason on stderr). A stream that breaks before a terminal state is reopened with backoff;
//! the server resends the current state first, and a `generation` already shown is skipped,
//! so no change is printed twice.
use std::time::Duration;

use levelrail_proto::provisioner::v1::provisioner_service_client::ProvisionerServiceClient;
use levelrail_proto::provisioner::v1::{Provision, ProvisionStatus, WatchProvisionRequest};
use serde_json::json;
use tonic::Code;

use crate::client::AuthedChannel;
use crate::commands::provisions::render;
use crate::context::Context;
use crate::duration;
use crate::error::CliError;
use crate::outcome::Outcome;
use crate::output::{between, clock};
use crate::status::code_name;

/// Consecutive reconnects without a new change before the watch gives up.
pub(crate) const MAX_RECONNECTS: u32 = 5;
/// The delay before the first reconnect; it doubles for each further one.
pub(crate) const DEFAULT_BACKOFF: Duration = Duration::from_millis(500);
/// The longest delay between two reconnects.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// What has been shown so far, so that a reopened stream adds only what is new.
#[derive(Debug, Default)]
pub(crate) struct Shown {
    generation: Option<u64>,
    /// How many finished stages already had their duration printed.
    stages_timed: usize,
    ip_address: String,
}

impl Shown {
    /// Marks `p` as already shown (the provision `nodes provision --watch --json` printed).
    pub(crate) fn mark(&mut self, p: &Provision) {
        self.generation = Some(p.generation);
        self.stages_timed = p.stages.len().saturating_sub(1);
        self.ip_address.clone_from(&p.ip_address);
    }

    fn is_new(&self, p: &Provision) -> bool {
        self.generation.is_none_or(|seen| p.generation > seen)
    }

    /// The text line for `p`, recording what it showed.
    fn line(&mut self, p: &Provision) -> String {
        let time = p
            .updated_at
            .as_ref()
            .or_else(|| p.stages.last().and_then(|s| s.entered_at.as_ref()))
            .map_or_else(|| "--:--:--".to_owned(), clock);
        let mut parts = vec![time, render::status_with_step(p)];
        if !p.ip_address.is_empty() && p.ip_address != self.ip_address {
            parts.push(format!("ip {}", p.ip_address));
        }
        if p.status == ProvisionStatus::Ready as i32 && !p.node_id.is_empty() {
            parts.push(format!("node {}", p.node_id));
        }
        for pair in p.stages.windows(2).skip(self.stages_timed) {
            let took = pair[0]
                .entered_at
                .as_ref()
                .zip(pair[1].entered_at.as_ref())
                .and_then(|(from, to)| between(from, to));
            if let Some(took) = took {
                let stage = render::status_name(pair[0].status);
                parts.push(format!("{stage} took {}", duration::format(took)));
            }
        }
        if render::is_terminal(p.status) {
            let first = p.stages.first().and_then(|s| s.entered_at.as_ref());
            let last = p.stages.last().and_then(|s| s.entered_at.as_ref());
            if let Some(total) = first.zip(last).and_then(|(a, b)| between(a, b)) {
                parts.push(format!("total {}", duration::format(total)));
            }
        }
        self.mark(p);
        parts.join("  ")
    }
}

/// Follows provision `id` until it is `ready` (exit 0) or `failed` (an error, exit 1).
pub(crate) async fn follow(
    id: &str,
    ctx: &mut Context<'_, '_>,
    shown: &mut Shown,
    backoff: Duration,
) -> Result<Outcome, CliError> {
    let mut client = ProvisionerServiceClient::new(ctx.channel().await?);
    let mut reconnects = 0u32;
    loop {
        let interruption = match watch_once(&mut client, id, ctx, shown).await? {
            Watched::Terminal(p) => return finish(&p),
            Watched::Interrupted { reason, progressed } => {
                if progressed {
                    reconnects = 0;
                }
                reason
            }
        };
        reconnects += 1;
        if reconnects > MAX_RECONNECTS {
            return Err(CliError::failed(format!(
                "lost the watch of provision {id} after {MAX_RECONNECTS} reconnects \
                 ({interruption}); follow again with: levelrail-cli nodes provisions watch {id}"
            )));
        }
        let delay = backoff
            .saturating_mul(1 << (reconnects - 1).min(16))
            .min(MAX_BACKOFF.max(backoff));
        ctx.warn(&format!(
            "the watch was interrupted ({interruption}); reconnecting in {} \
             ({reconnects}/{MAX_RECONNECTS})",
            duration::format(delay)
        ))?;
        tokio::time::sleep(delay).await;
    }
}

/// How one opened stream ended.
enum Watched {
    /// A terminal state arrived (shown already).
    Terminal(Box<Provision>),
    /// The stream broke or ended early; `progressed` says whether it showed anything new.
    Interrupted { reason: String, progressed: bool },
}

async fn watch_once(
    client: &mut ProvisionerServiceClient<AuthedChannel>,
    id: &str,
    ctx: &mut Context<'_, '_>,
    shown: &mut Shown,
) -> Result<Watched, CliError> {
    let request = WatchProvisionRequest { id: id.to_owned() };
    let mut stream = match client.watch_provision(request).await {
        Ok(response) => response.into_inner(),
        Err(status) => return interrupted_or_fail(&status, id, ctx, false),
    };
    let mut progressed = false;
    loop {
        match stream.message().await {
            Ok(Some(event)) => {
                let Some(p) = event.provision else { continue };
                if shown.is_new(&p) {
                    show(&p, ctx, shown)?;
                    progressed = true;
                }
                if render::is_terminal(p.status) {
                    return Ok(Watched::Terminal(Box::new(p)));
                }
            }
            Ok(None) => {
                return Ok(Watched::Interrupted {
                    reason: "the stream ended before a final state".to_owned(),
                    progressed,
                });
            }
            Err(status) => return interrupted_or_fail(&status, id, ctx, progressed),
        }
    }
}

/// A transient failure interrupts the watch; anything else (NOT_FOUND, a rejected token…)
/// ends it with the usual error.
fn interrupted_or_fail(
    status: &tonic::Status,
    id: &str,
    ctx: &Context<'_, '_>,
    progressed: bool,
) -> Result<Watched, CliError> {
    let transient = matches!(
        status.code(),
        Code::Unavailable
            | Code::Unknown
            | Code::Internal
            | Code::Cancelled
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::ResourceExhausted
    );
    if !transient {
        return Err(ctx.rpc_error_about(status, "provision", id));
    }
    let reason = match status.message() {
        "" => code_name(status.code()).to_owned(),
        message => format!("{}: {message}", code_name(status.code())),
    };
    Ok(Watched::Interrupted { reason, progressed })
}

fn show(p: &Provision, ctx: &mut Context<'_, '_>, shown: &mut Shown) -> Result<(), CliError> {
    if ctx.json() {
        shown.mark(p);
        ctx.print_json_line(&json!({ "provision": render::provision_json(p) }))
    } else {
        let line = shown.line(p);
        ctx.print(&line)
    }
}

fn finish(p: &Provision) -> Result<Outcome, CliError> {
    if p.status == ProvisionStatus::Ready as i32 {
        Ok(Outcome::Success)
    } else {
        Err(CliError::failed(render::failure_message(p)))
    }
}

#[cfg(test)]
mod tests {
    use levelrail_proto::provisioner::v1::StageTiming;
    use prost_types::Timestamp;

    use super::*;

    fn at(seconds: i64) -> Option<Timestamp> {
        Some(Timestamp {
            seconds: 1_767_323_045 + seconds,
            nanos: 0,
        })
    }

    fn stage(status: ProvisionStatus, seconds: i64) -> StageTiming {
        StageTiming {
            status: status as i32,
            entered_at: at(seconds),
        }
    }

    #[test]
    fn a_line_shows_time_status_new_address_and_finished_stage_durations() {
        let mut shown = Shown::default();
        let creating = Provision {
            generation: 1,
            status: ProvisionStatus::Creating as i32,
            updated_at: at(0),
            stages: vec![stage(ProvisionStatus::Creating, 0)],
            ..Provision::default()
        };
        assert_eq!(shown.line(&creating), "03:04:05  creating");
        let booting = Provision {
            generation: 2,
            status: ProvisionStatus::Booting as i32,
            ip_address: "203.0.113.7".into(),
            updated_at: at(4),
            stages: vec![
                stage(ProvisionStatus::Creating, 0),
                stage(ProvisionStatus::Booting, 4),
            ],
            ..creating.clone()
        };
        assert!(shown.is_new(&booting));
        assert_eq!(
            shown.line(&booting),
            "03:04:09  booting  ip 203.0.113.7  creating took 4s"
        );
        assert!(!shown.is_new(&booting), "a generation is shown once");
    }
}
