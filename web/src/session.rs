//! The signed-in state: the API token, kept in `sessionStorage` so it survives reloads of
//! the tab but not closing it, and is never sent anywhere but the `authorization` header.
use leptos::prelude::*;

const KEY: &str = "levelrail.api_token";

/// The current API token (shared through context; `Copy`).
#[derive(Debug, Clone, Copy)]
pub struct Session {
    token: RwSignal<Option<String>>,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

impl Session {
    /// Reads the token saved by an earlier sign-in in this tab.
    pub fn load() -> Self {
        let saved = storage().and_then(|s| s.get_item(KEY).ok().flatten());
        Self {
            token: RwSignal::new(saved.filter(|t| !t.is_empty())),
        }
    }

    /// Whether a token is set (tracked).
    pub fn is_signed_in(&self) -> bool {
        self.token.with(Option::is_some)
    }

    /// The token, without tracking.
    pub fn token_untracked(&self) -> Option<String> {
        self.token.get_untracked()
    }

    /// Keeps `token` for this tab.
    pub fn sign_in(&self, token: String) {
        if let Some(s) = storage() {
            let _ = s.set_item(KEY, &token);
        }
        self.token.set(Some(token));
    }

    /// Forgets the token.
    pub fn sign_out(&self) {
        if let Some(s) = storage() {
            let _ = s.remove_item(KEY);
        }
        if self.token.with_untracked(Option::is_some) {
            self.token.set(None);
        }
    }
}
