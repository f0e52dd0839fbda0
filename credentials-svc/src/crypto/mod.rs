//! Envelope encryption of credentials: per-credential data keys wrapped by a keyring of
//! key-encryption keys.
