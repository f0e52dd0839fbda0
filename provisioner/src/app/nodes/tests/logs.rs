//! A minimal tracing subscriber that captures every event and span field as text, so tests
//! can assert what reaches the logs.
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Everything logged while the guard from [`capture`] was alive.
#[derive(Debug, Clone, Default)]
pub(super) struct Captured(Arc<Mutex<String>>);

impl Captured {
    /// The captured text, one event per line.
    pub(super) fn text(&self) -> String {
        self.0.lock().expect("log lock").clone()
    }
}

#[derive(Debug)]
struct CaptureSubscriber {
    out: Captured,
    next_span: AtomicU64,
}

struct Writer<'a>(&'a mut String);

impl Visit for Writer<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl CaptureSubscriber {
    fn write(&self, f: impl FnOnce(&mut Writer<'_>)) {
        let mut out = self.out.0.lock().expect("log lock");
        f(&mut Writer(&mut out));
        out.push('\n');
    }
}

impl Subscriber for CaptureSubscriber {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.write(|w| span.record(w));
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed))
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        self.write(|w| values.record(w));
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        self.write(|w| {
            let _ = write!(w.0, "{}", event.metadata().level());
            event.record(w);
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Captures this thread's logs until the guard drops (use a current-thread runtime).
pub(super) fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let out = Captured::default();
    let subscriber = CaptureSubscriber {
        out: out.clone(),
        next_span: AtomicU64::new(1),
    };
    let guard = tracing::subscriber::set_default(subscriber);
    // Another test thread may have been registering a callsite while this subscriber was
    // installed, caching it as disabled from before; recompute every callsite's interest.
    tracing::callsite::rebuild_interest_cache();
    (out, guard)
}
