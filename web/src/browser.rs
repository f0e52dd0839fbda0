//! Small browser helpers: the clock, timers and ids.
use wasm_bindgen::JsCast as _;
use wasm_bindgen::prelude::Closure;

/// Milliseconds since the epoch (browser clock).
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// Resolves after `ms` milliseconds.
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// A random UUID (the provision request's idempotency key).
pub fn random_uuid() -> String {
    web_sys::window()
        .and_then(|w| w.crypto().ok())
        .map(|c| c.random_uuid())
        .unwrap_or_default()
}

/// Local date and time of a millisecond timestamp (`2026-11-02 14:05:09`).
pub fn local_time(ms: f64) -> String {
    let d = js_sys::Date::new(&ms.into());
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        d.get_full_year(),
        d.get_month() + 1,
        d.get_date(),
        d.get_hours(),
        d.get_minutes(),
        d.get_seconds()
    )
}

/// Moves keyboard focus to the element with `id`, after the current render.
pub fn focus_later(id: impl Into<String>) {
    let id = id.into();
    let f = Closure::once_into_js(move || {
        if let Some(el) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id(&id))
            .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
        {
            let _ = el.focus();
        }
    });
    if let Some(w) = web_sys::window() {
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(f.unchecked_ref(), 0);
    }
}
