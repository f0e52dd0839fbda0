//! The audit log's writer: the public listener hands it one event per state-changing call
//! (and per call refused for its token's scope) once the answer's status is known; a task
//! writes what is queued, many events to one statement, off the request path.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use levelrail_proto::credentials::v1::Provider;
use levelrail_provisioner::model::AuditEvent;
use levelrail_provisioner::model::ports::{AuditStore, StoreError};
use levelrail_types::{ApiScope, ProviderId, method_of};
use tokio::sync::Notify;
use tracing::{info, warn};

/// Events written in one statement.
const PER_BATCH: usize = 256;
/// How long the writer gathers events once one arrived: the log costs the database a
/// statement per window at most, never one per call. Short, so that a busy API's events
/// go in many small statements (about 70 events each at 7,000 calls/s) beside its own
/// writes: with 100 ms, every tenth of a second the writer stopped for three statements
/// of 256 events, and the API's requests waiting behind them made its p99.
const WINDOW: std::time::Duration = std::time::Duration::from_millis(10);
/// Events waiting at most; past it the oldest are dropped, with a warning.
const QUEUED_AT_MOST: usize = 100_000;
/// How long the writer waits before it offers a batch again to a database that stayed
/// busy (the log's writes are background work, which waits while the API's are queued).
const RETRY_BUSY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a flush at shutdown may take, waits for a busy database included; what is
/// not written by then is in the log lines only.
const FLUSH_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The audit log of one process.
#[derive(Debug)]
pub struct AuditLog {
    queue: Arc<Queue>,
    /// State-changing calls admitted and not yet answered: a stop waits for them.
    open: Arc<OpenCalls>,
    /// The writer and its store (`None`: a log kept in log lines only).
    task: Option<(tokio::task::JoinHandle<()>, Arc<dyn AuditStore>)>,
}

#[derive(Debug, Default)]
struct Queue {
    waiting: Mutex<VecDeque<AuditEvent>>,
    ready: Notify,
    /// Held while events taken from `waiting` are written, so a flush waits for them.
    writing: tokio::sync::Mutex<()>,
}

impl AuditLog {
    /// A log written to `store` (within a Tokio runtime), through its handle for background
    /// work (on PostgreSQL, pools of its own). At a SQLite file's one writer a batch joins
    /// the API's group commit instead of taking a turn of its own.
    pub fn start(store: Arc<dyn AuditStore>) -> Self {
        Self::start_with(store, WINDOW)
    }

    /// [`Self::start`], gathering events for `window`.
    fn start_with(store: Arc<dyn AuditStore>, window: std::time::Duration) -> Self {
        let store = store.background().unwrap_or(store);
        let queue = Arc::new(Queue::default());
        let task = tokio::spawn(write_all(Arc::clone(&store), Arc::clone(&queue), window));
        AuditLog {
            queue,
            open: Arc::default(),
            task: Some((task, store)),
        }
    }

    /// A log kept in log lines only (a listener with no audit table of its own).
    pub fn lines_only() -> Self {
        AuditLog {
            queue: Arc::default(),
            open: Arc::default(),
            task: None,
        }
    }

    /// Records `event` (also as a log line): queued, never waited for.
    pub fn record(&self, event: AuditEvent) {
        info!(
            target: "levelrail::audit",
            token_id = %event.token_id,
            action = %event.action,
            target_id = %event.target,
            outcome = %event.outcome,
            peer = %event.peer,
            "audit"
        );
        if self.task.is_none() {
            return;
        }
        let mut waiting = self.queue.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.len() >= QUEUED_AT_MOST {
            waiting.pop_front();
            warn!("the audit log is not keeping up; dropped its oldest waiting event");
        }
        waiting.push_back(event);
        drop(waiting);
        self.queue.ready.notify_one();
    }
}

impl AuditLog {
    /// Counts a state-changing call as open until the returned guard is dropped (once its
    /// event is recorded, or the call is gone).
    pub(crate) fn begin(&self) -> OpenCall {
        *self.open.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        OpenCall(Arc::clone(&self.open))
    }

    /// Waits until no state-changing call is open, for at most `within`: at shutdown, once
    /// the listeners stopped accepting, the calls still being answered record their events
    /// before [`Self::flush`] writes them. True when none was left open.
    pub async fn drain(&self, within: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let idle = self.open.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if *self.open.count.lock().unwrap_or_else(|e| e.into_inner()) == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                warn!(
                    "stopping with state-changing calls still open: their audit events are in the log lines only"
                );
                return false;
            }
        }
    }

    /// Writes what is queued now, without waiting for the window (and after the batch the
    /// writer may be writing): at shutdown, once the listeners stopped accepting. It takes
    /// [`FLUSH_WITHIN`] at most: what a database that stayed busy did not take by then is in
    /// the log lines only (a warning says so).
    pub async fn flush(&self) {
        let Some((_, store)) = &self.task else {
            return;
        };
        let deadline = tokio::time::Instant::now() + FLUSH_WITHIN;
        loop {
            // Cut short at the deadline, an attempt loses the batch it was writing from the
            // queue (not from the log lines): the process is stopping.
            match tokio::time::timeout_at(deadline, write_queued(store.as_ref(), &self.queue)).await
            {
                Ok(Written::All) => return,
                Ok(Written::NotYet)
                    if tokio::time::Instant::now() + RETRY_BUSY_AFTER < deadline =>
                {
                    tokio::time::sleep(RETRY_BUSY_AFTER).await;
                }
                _ => {
                    let queued = self
                        .queue
                        .waiting
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .len();
                    warn!(
                        queued,
                        "stopping before the database, busy, took every audit event: those not written are in the log lines only"
                    );
                    return;
                }
            }
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        if let Some((task, _)) = &self.task {
            task.abort();
        }
    }
}

/// The state-changing calls open now.
#[derive(Debug, Default)]
struct OpenCalls {
    count: Mutex<usize>,
    idle: Notify,
}

/// One open state-changing call (see [`AuditLog::begin`]).
#[derive(Debug)]
pub(crate) struct OpenCall(Arc<OpenCalls>);

impl Drop for OpenCall {
    fn drop(&mut self) {
        let mut count = self.0.count.lock().unwrap_or_else(|e| e.into_inner());
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

async fn write_all(store: Arc<dyn AuditStore>, queue: Arc<Queue>, window: std::time::Duration) {
    loop {
        queue.ready.notified().await;
        tokio::time::sleep(window).await;
        while write_queued(store.as_ref(), &queue).await == Written::NotYet {
            tokio::time::sleep(RETRY_BUSY_AFTER).await;
        }
    }
}

/// What [`write_queued`] did.
#[derive(Debug, PartialEq, Eq)]
enum Written {
    /// Everything queued.
    All,
    /// The database stayed busy: the batch it was offered is back at the queue's front.
    NotYet,
}

/// Writes everything queued, a batch at a time. A batch the database was too busy to take
/// goes back to the front of the queue, whole; one it refused otherwise is written an
/// event at a time, so that one bad event costs only itself.
async fn write_queued(store: &dyn AuditStore, queue: &Queue) -> Written {
    let _writing = queue.writing.lock().await;
    loop {
        let batch: Vec<AuditEvent> = {
            let mut waiting = queue.waiting.lock().unwrap_or_else(|e| e.into_inner());
            let n = waiting.len().min(PER_BATCH);
            waiting.drain(..n).collect()
        };
        if batch.is_empty() {
            return Written::All;
        }
        match store.record_audit(&batch).await {
            Ok(()) => continue,
            Err(StoreError::Busy) => {
                put_back(queue, &batch);
                return Written::NotYet;
            }
            Err(_) => {}
        }
        // One bad event must not cost the others: each alone, then.
        for (i, event) in batch.iter().enumerate() {
            match store.record_audit(std::slice::from_ref(event)).await {
                Ok(()) => {}
                Err(StoreError::Busy) => {
                    put_back(queue, &batch[i..]);
                    return Written::NotYet;
                }
                // The event is in the log lines; the database misses it.
                Err(e) => warn!(error = %e, id = %event.id, "could not write an audit event"),
            }
        }
    }
}

/// Puts `events` back at the front of the queue, in their order.
fn put_back(queue: &Queue, events: &[AuditEvent]) {
    let mut waiting = queue.waiting.lock().unwrap_or_else(|e| e.into_inner());
    for event in events.iter().rev() {
        waiting.push_front(event.clone());
    }
}

/// Records `event` once `answer` says how the call ended: from its headers (an answer
/// with no message carries its status there), else from its trailers. An answer whose
/// body ends without a status, or is dropped first (the caller went away), ends `UNKNOWN`
/// or `CANCELLED`.
pub(crate) fn when_answered(
    answer: axum::response::Response,
    log: Arc<AuditLog>,
    mut event: AuditEvent,
    open: OpenCall,
) -> axum::response::Response {
    if let Some(code) = status_of(answer.headers()) {
        event.outcome = outcome(code);
        event.at = time::OffsetDateTime::now_utc();
        log.record(event);
        drop(open);
        return answer;
    }
    let (parts, body) = answer.into_parts();
    let body = axum::body::Body::new(Answered {
        inner: body,
        pending: Some((log, event, open)),
    });
    axum::response::Response::from_parts(parts, body)
}

/// The gRPC status in `headers`, if they carry one.
fn status_of(headers: &http::HeaderMap) -> Option<tonic::Code> {
    let value = headers.get("grpc-status")?.to_str().ok()?;
    Some(tonic::Code::from_i32(value.parse().ok()?))
}

/// An answer's body that records its call's event when its trailers pass.
struct Answered {
    inner: axum::body::Body,
    pending: Option<(Arc<AuditLog>, AuditEvent, OpenCall)>,
}

impl Answered {
    fn finish(&mut self, outcome: String) {
        if let Some((log, mut event, open)) = self.pending.take() {
            event.outcome = outcome;
            event.at = time::OffsetDateTime::now_utc();
            log.record(event);
            drop(open);
        }
    }
}

impl http_body::Body for Answered {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            std::task::Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(status_of) {
                    self.finish(outcome(code));
                }
            }
            std::task::Poll::Ready(Some(Err(_))) | std::task::Poll::Ready(None) => {
                self.finish("UNKNOWN".to_owned());
            }
            std::task::Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.finish("CANCELLED".to_owned());
    }
}

/// Whether the method `path` changes state (reads are not recorded): every method but
/// those that list, get or watch.
pub(crate) fn changes_state(path: &str) -> bool {
    let method = method_of(path);
    !["List", "Get", "Watch"]
        .iter()
        .any(|read| method.starts_with(read))
}

/// What a call acted on, read from its request message (`message`: the protobuf bytes,
/// frame header removed): a node name, an id, a provider, or a token label. Only the one
/// field is read, never a secret one; empty when the call names nothing or the message is
/// not what its method takes.
pub(crate) fn target(path: &str, message: &[u8]) -> String {
    let method = method_of(path);
    let field = match method {
        "Provision" => Field::Text(4),
        "CreateJoinToken" => Field::Text(2),
        "SetCredential" | "DeleteCredential" | "VerifyCredential" => Field::Provider(1),
        "CancelProvision" | "RetryProvision" | "DeleteNode" | "AdoptOrphan" | "DeleteOrphan"
        | "RevokeJoinToken" | "CreateApiToken" | "RevokeApiToken" => Field::Text(1),
        _ => return String::new(),
    };
    read_field(message, field).unwrap_or_default()
}

#[derive(Debug, Clone, Copy)]
enum Field {
    /// A string field.
    Text(u32),
    /// A `levelrail.credentials.v1.Provider` field.
    Provider(u32),
}

/// The value of `field` in a protobuf message (the last occurrence, as protobuf reads
/// it), clipped to 128 characters.
fn read_field(mut buf: &[u8], field: Field) -> Option<String> {
    let mut found = None;
    while !buf.is_empty() {
        let key = varint(&mut buf)?;
        let (tag, wire) = (u32::try_from(key >> 3).ok()?, key & 7);
        match wire {
            0 => {
                let v = varint(&mut buf)?;
                if let Field::Provider(t) = field
                    && t == tag
                {
                    let provider = Provider::try_from(i32::try_from(v).ok()?).ok()?;
                    found = ProviderId::try_from(provider)
                        .ok()
                        .map(|p| p.as_str().to_owned());
                }
            }
            1 => buf = buf.get(8..)?,
            2 => {
                let len = usize::try_from(varint(&mut buf)?).ok()?;
                let bytes = buf.get(..len)?;
                buf = &buf[len..];
                if let Field::Text(t) = field
                    && t == tag
                {
                    found = Some(clean(&String::from_utf8_lossy(bytes), 128));
                }
            }
            5 => buf = buf.get(4..)?,
            _ => return None,
        }
    }
    found
}

/// `text` as the log keeps a caller's words: at most `max` characters, control characters
/// (NUL, newlines, terminal escapes) replaced, so they reach no log line, database or
/// terminal as they came.
fn clean(text: &str, max: usize) -> String {
    text.chars()
        .take(max)
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// Reads a base-128 varint off the front of `buf`.
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// A gRPC status code's name, as the audit log records an outcome.
pub(crate) fn outcome(code: tonic::Code) -> String {
    if code == tonic::Code::Ok {
        return "OK".to_owned();
    }
    // `Code`'s Debug is its Rust name (`PermissionDenied`): spelled as gRPC does.
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// A new event for `path` (`/package.Service/Method`, recorded as `Service/Method`; a path
/// that names no method of the API, which the caller chose, as `unknown method`).
pub(crate) fn event(token_id: &str, path: &str, target: String, peer: String) -> AuditEvent {
    let action = match ApiScope::listed(path) {
        Some(_) => path
            .trim_start_matches('/')
            .rsplit_once('.')
            .map_or(path, |(_, service_method)| service_method),
        None => "unknown method",
    };
    AuditEvent {
        id: AuditEvent::new_id(),
        at: time::OffsetDateTime::now_utc(),
        token_id: token_id.to_owned(),
        action: action.to_owned(),
        target,
        outcome: String::new(),
        peer,
    }
}

#[cfg(test)]
mod tests {
    use levelrail_proto::credentials::v1 as cpb;
    use levelrail_proto::provisioner::v1 as ppb;
    use prost::Message as _;

    use super::*;

    #[test]
    fn a_calls_target_is_its_one_named_field() {
        let provision = ppb::ProvisionRequest {
            provider: cpb::Provider::Hetzner as i32,
            region: "fsn1".into(),
            size: "cx22".into(),
            name: "web-1".into(),
            ..Default::default()
        };
        let path = "/levelrail.provisioner.v1.ProvisionerService/Provision";
        assert_eq!(target(path, &provision.encode_to_vec()), "web-1");
        let set = cpb::SetCredentialRequest {
            provider: cpb::Provider::Digitalocean as i32,
            credential: Some(cpb::set_credential_request::Credential::Digitalocean(
                cpb::ApiToken {
                    token: "dop_v1_secret".into(),
                },
            )),
        };
        let path = "/levelrail.credentials.v1.CredentialsService/SetCredential";
        let got = target(path, &set.encode_to_vec());
        assert_eq!(got, "digitalocean");
        let cancel = ppb::CancelProvisionRequest { id: "npv_1".into() };
        let path = "/levelrail.provisioner.v1.ProvisionerService/CancelProvision";
        assert_eq!(target(path, &cancel.encode_to_vec()), "npv_1");
        // Control characters reach no log line or database as they came.
        let hostile = ppb::CancelProvisionRequest {
            id: "npv_1\u{0}\n\u{1b}[2J".into(),
        };
        assert_eq!(
            target(path, &hostile.encode_to_vec()),
            "npv_1\u{fffd}\u{fffd}\u{fffd}[2J"
        );
        // Garbage names nothing, and a read names nothing.
        assert_eq!(target(path, &[0xff, 0xff]), "");
        assert_eq!(
            target("/levelrail.nodes.v1.NodesService/ListNodes", b""),
            ""
        );
    }

    /// An `AuditStore` that keeps the ids of each batch it was given, and answers busy to
    /// the first `busy` batches.
    #[derive(Debug, Default)]
    struct Recorder {
        batches: Mutex<Vec<Vec<String>>>,
        busy: Mutex<usize>,
        /// How long it takes to answer busy (a database says so once its wait ran out).
        busy_after: std::time::Duration,
        background: Option<Arc<Recorder>>,
    }

    impl Recorder {
        fn batches(&self) -> Vec<Vec<String>> {
            self.batches.lock().expect("lock").clone()
        }
    }

    #[async_trait::async_trait]
    impl AuditStore for Recorder {
        async fn record_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
            let busy = {
                let mut busy = self.busy.lock().expect("lock");
                let was = *busy > 0;
                *busy = busy.saturating_sub(1);
                was
            };
            if busy {
                tokio::time::sleep(self.busy_after).await;
                return Err(StoreError::Busy);
            }
            let ids = events.iter().map(|e| e.id.clone()).collect();
            self.batches.lock().expect("lock").push(ids);
            Ok(())
        }

        async fn list_audit(&self, _: u32, _: Option<&str>) -> Result<Vec<AuditEvent>, StoreError> {
            Ok(Vec::new())
        }

        fn background(&self) -> Option<Arc<dyn AuditStore>> {
            self.background
                .clone()
                .map(|b| -> Arc<dyn AuditStore> { b })
        }
    }

    fn an_event(n: u32) -> AuditEvent {
        event(
            "lrt_0123456789abcdef",
            "/levelrail.provisioner.v1.ProvisionerService/Provision",
            format!("web-{n}"),
            "127.0.0.1:40000".into(),
        )
    }

    /// The log writes through its store's handle for background work, and a flush writes
    /// what still waits for the window.
    #[tokio::test]
    async fn the_log_writes_as_background_work_and_a_flush_does_not_wait_for_the_window() {
        let background = Arc::new(Recorder::default());
        let api = Arc::new(Recorder {
            background: Some(Arc::clone(&background)),
            ..Recorder::default()
        });
        let log = AuditLog::start_with(api.clone(), std::time::Duration::from_secs(3600));
        let event = an_event(1);
        log.record(event.clone());
        tokio::time::timeout(std::time::Duration::from_secs(60), log.flush())
            .await
            .expect("a flush does not wait for the window");
        assert_eq!(background.batches(), [vec![event.id]]);
        assert!(api.batches().is_empty(), "written through the API's handle");
    }

    /// A database too busy for a batch gets the same batch again a moment later, whole
    /// and in order, with what was recorded meanwhile after it (not its events one at a
    /// time, each waiting for the writer again); a flush at shutdown gives up on one that
    /// stays busy within its time, though each busy answer takes 5 s.
    #[tokio::test(start_paused = true)]
    async fn a_busy_database_gets_the_batch_again_later_and_a_flush_gives_up() {
        let store = Arc::new(Recorder {
            busy: Mutex::new(3),
            ..Recorder::default()
        });
        let log = AuditLog::start_with(store.clone(), WINDOW);
        let events: Vec<AuditEvent> = (0..4).map(an_event).collect();
        for e in &events[..3] {
            log.record(e.clone());
        }
        let started = tokio::time::Instant::now();
        tokio::time::sleep(RETRY_BUSY_AFTER / 2).await;
        log.record(events[3].clone());
        while store.batches().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
        assert_eq!(store.batches(), [ids]);
        assert!(started.elapsed() >= RETRY_BUSY_AFTER * 2);

        let slow = Arc::new(Recorder {
            busy: Mutex::new(usize::MAX),
            busy_after: std::time::Duration::from_secs(5),
            ..Recorder::default()
        });
        let log = AuditLog::start_with(slow.clone(), WINDOW);
        log.record(an_event(5));
        let started = tokio::time::Instant::now();
        log.flush().await;
        assert!(started.elapsed() <= FLUSH_WITHIN, "{:?}", started.elapsed());
        assert!(slow.batches().is_empty(), "nothing was written");
    }

    /// A stop waits for the state-changing calls still being answered (their events come
    /// after the listeners stopped), and no longer than it was given.
    #[tokio::test]
    async fn a_stop_waits_for_open_calls_and_no_longer_than_given() {
        let log = Arc::new(AuditLog::lines_only());
        assert!(log.drain(std::time::Duration::ZERO).await, "nothing open");
        let open = log.begin();
        let answered = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            drop(open);
        });
        let started = tokio::time::Instant::now();
        assert!(log.drain(std::time::Duration::from_secs(10)).await);
        assert!(started.elapsed() >= std::time::Duration::from_millis(100));
        answered.await.expect("answered");
        let _stuck = log.begin();
        assert!(!log.drain(std::time::Duration::from_millis(50)).await);
    }

    #[test]
    fn outcomes_and_actions_are_spelled_as_grpc_spells_them() {
        assert_eq!(outcome(tonic::Code::Ok), "OK");
        assert_eq!(outcome(tonic::Code::PermissionDenied), "PERMISSION_DENIED");
        assert_eq!(
            outcome(tonic::Code::FailedPrecondition),
            "FAILED_PRECONDITION"
        );
        let e = event(
            "lrt_0",
            "/levelrail.provisioner.v1.ProvisionerService/Provision",
            String::new(),
            String::new(),
        );
        assert_eq!(e.action, "ProvisionerService/Provision");
        let made_up = event(
            "lrt_0",
            "/levelrail.nodes.v1.NodesService/Anything",
            String::new(),
            String::new(),
        );
        assert_eq!(made_up.action, "unknown method");
        assert!(changes_state("/levelrail.nodes.v1.NodesService/DeleteNode"));
        assert!(!changes_state(
            "/levelrail.audit.v1.AuditService/ListAuditEvents"
        ));
        assert!(!changes_state(
            "/levelrail.provisioner.v1.ProvisionerService/WatchProvision"
        ));
        assert!(AuditEvent::is_id(&e.id), "{}", e.id);
    }
}
