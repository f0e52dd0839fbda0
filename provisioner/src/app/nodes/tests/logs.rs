//! A minimal tracing subscriber that captures every event and span field as text, so tests
//! can assert what reaches the logs. It is installed once as the test binary's global
//! subscriber and writes to the capture of the thread that logs, if any: a per-thread
//! (`set_default`) subscriber raced other test threads registering the same callsites,
//! which could leave a callsite cached as disabled and drop events.
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
    next_span: AtomicU64,
}

thread_local! {
    /// Where this thread's logs go while a [`capture`] guard lives.
    static CAPTURE: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
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
        let Some(captured) = CAPTURE.with(|c| c.borrow().clone()) else {
            return;
        };
        let mut out = captured.0.lock().expect("log lock");
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

/// Ends a capture when dropped.
pub(super) struct CaptureGuard;

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CAPTURE.with(|c| c.borrow_mut().take());
    }
}

/// Captures this thread's logs until the guard drops (use a current-thread runtime).
pub(super) fn capture() -> (Captured, CaptureGuard) {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let subscriber = CaptureSubscriber {
            next_span: AtomicU64::new(1),
        };
        tracing::subscriber::set_global_default(subscriber)
            .expect("no other global subscriber in this test binary");
    });
    // A callsite registered by another thread while the subscriber was being installed
    // may have cached the old answer: ask every callsite again.
    tracing::callsite::rebuild_interest_cache();
    let out = Captured::default();
    CAPTURE.with(|c| *c.borrow_mut() = Some(out.clone()));
    (out, CaptureGuard)
}
