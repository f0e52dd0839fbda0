//! Integration tests of `levelrail-agent`: the real binary against an in-process fake
//! control plane and a man-in-the-middle TLS server.

mod enroll;
mod exit_codes;
mod helpers;
mod mitm;
mod pki;
