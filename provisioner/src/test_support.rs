//! Test support shared by the application and gRPC tests: a fresh CA, a manual clock, CSRs and
//! a `Nodes` on an in-memory store.
use std::sync::{Arc, Mutex};

use rcgen::{CertificateParams, KeyPair};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::app::Nodes;
use crate::enroll::ControlPlaneCa;
use crate::model::ports::Clock;
use crate::store::MemoryStore;

/// The instant every test starts at.
pub(crate) const START: OffsetDateTime = datetime!(2030-06-01 12:00:00 UTC);

/// A clock the test moves by hand.
#[derive(Debug, Clone)]
pub(crate) struct ManualClock(Arc<Mutex<OffsetDateTime>>);

impl ManualClock {
    /// A clock at [`START`].
    pub(crate) fn new() -> Self {
        ManualClock(Arc::new(Mutex::new(START)))
    }

    /// Moves the clock forward.
    pub(crate) fn advance(&self, by: time::Duration) {
        let mut now = self.0.lock().expect("clock lock");
        *now += by;
    }

    /// The clock as a `Clock`.
    pub(crate) fn clock(&self) -> Clock {
        let inner = Arc::clone(&self.0);
        Arc::new(move || *inner.lock().expect("clock lock"))
    }
}

/// A fresh control-plane CA, in memory.
pub(crate) fn ca() -> Arc<ControlPlaneCa> {
    let (cert, key) = ControlPlaneCa::generate().expect("generate CA");
    Arc::new(ControlPlaneCa::from_pem(&cert, &key).expect("load CA"))
}

/// A registry on an empty memory store with a manual clock.
pub(crate) fn nodes() -> (Arc<Nodes>, ManualClock) {
    let clock = ManualClock::new();
    let nodes = Nodes::with_clock(Arc::new(MemoryStore::new()), ca(), clock.clock());
    (Arc::new(nodes), clock)
}

/// A CSR (PEM) for a fresh key pair, as an agent makes it.
pub(crate) fn csr() -> String {
    let key = KeyPair::generate().expect("key pair");
    let params = CertificateParams::new(vec!["agent.local".to_owned()]).expect("params");
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("csr pem")
}

/// The DER of the first certificate in a PEM string.
pub(crate) fn first_cert_der(pem: &str) -> rustls::pki_types::CertificateDer<'static> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .next()
        .expect("a certificate")
        .expect("valid PEM")
}
