//! Fault injection for the fake clouds: per-call rules (method + path prefix, a number of
//! times) and a seeded random ratio, each answering with one of the faults a real cloud
//! produces.
use std::sync::Mutex;
use std::time::Duration;

/// A fault a fake can answer a call with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// 429 with `Retry-After: secs` (and the provider's rate-limit headers).
    RateLimited {
        /// Seconds to wait.
        retry_after_secs: u64,
    },
    /// 500 Internal Server Error.
    InternalError,
    /// 503 Service Unavailable.
    Unavailable,
    /// Answer only after this long (the client's timeout should fire first).
    Delay(Duration),
    /// Drop the connection before a complete answer.
    DropConnection,
    /// The provider's "no capacity / resource unavailable" error for creates.
    Capacity,
    /// Process the request (e.g. create the server) and then drop the connection, as when
    /// a response is lost on the way back.
    ProcessThenDrop,
}

#[derive(Debug)]
struct Rule {
    method: Option<String>,
    path_prefix: String,
    remaining: usize,
    fault: Fault,
}

#[derive(Debug, Default)]
struct Random {
    ratio: f64,
    faults: Vec<Fault>,
    state: u64,
    path_prefix: String,
}

/// The faults a fake will inject.
#[derive(Debug, Default)]
pub struct FaultPlan {
    rules: Mutex<Vec<Rule>>,
    random: Mutex<Option<Random>>,
}

impl FaultPlan {
    /// Answers the next `times` calls matching `method` (None: any) and `path_prefix` with
    /// `fault`.
    pub fn inject(&self, method: Option<&str>, path_prefix: &str, times: usize, fault: Fault) {
        self.lock_rules().push(Rule {
            method: method.map(str::to_ascii_uppercase),
            path_prefix: path_prefix.to_owned(),
            remaining: times,
            fault,
        });
    }

    /// Answers a `ratio` (0..1) of calls under `path_prefix` with one of `faults`, chosen by
    /// a deterministic generator seeded with `seed`.
    pub fn random(&self, ratio: f64, path_prefix: &str, faults: Vec<Fault>, seed: u64) {
        *self.random.lock().unwrap_or_else(|e| e.into_inner()) = Some(Random {
            ratio,
            faults,
            state: seed.max(1),
            path_prefix: path_prefix.to_owned(),
        });
    }

    /// Removes every rule.
    pub fn clear(&self) {
        self.lock_rules().clear();
        *self.random.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The fault for this call, if any (consumes one use of a matching rule).
    pub fn take(&self, method: &str, path: &str) -> Option<Fault> {
        {
            let mut rules = self.lock_rules();
            if let Some(rule) = rules.iter_mut().find(|r| {
                r.remaining > 0
                    && path.starts_with(&r.path_prefix)
                    && r.method
                        .as_deref()
                        .is_none_or(|m| m.eq_ignore_ascii_case(method))
            }) {
                rule.remaining -= 1;
                return Some(rule.fault.clone());
            }
        }
        let mut random = self.random.lock().unwrap_or_else(|e| e.into_inner());
        let r = random.as_mut()?;
        if r.faults.is_empty() || !path.starts_with(&r.path_prefix) {
            return None;
        }
        // xorshift64*: deterministic, good enough for picking faults.
        r.state ^= r.state >> 12;
        r.state ^= r.state << 25;
        r.state ^= r.state >> 27;
        let x = r.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
        if unit < r.ratio {
            let i = (x % r.faults.len() as u64) as usize;
            return Some(r.faults[i].clone());
        }
        None
    }

    fn lock_rules(&self) -> std::sync::MutexGuard<'_, Vec<Rule>> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_fires_the_given_number_of_times_for_matching_calls_only() {
        let plan = FaultPlan::default();
        plan.inject(Some("post"), "/servers", 2, Fault::InternalError);
        assert_eq!(plan.take("GET", "/servers"), None);
        assert_eq!(plan.take("POST", "/servers"), Some(Fault::InternalError));
        assert_eq!(plan.take("POST", "/servers/1"), Some(Fault::InternalError));
        assert_eq!(plan.take("POST", "/servers"), None);
    }

    #[test]
    fn the_random_ratio_is_roughly_respected_and_deterministic() {
        let a = FaultPlan::default();
        let b = FaultPlan::default();
        for p in [&a, &b] {
            p.random(0.2, "/", vec![Fault::InternalError, Fault::Unavailable], 42);
        }
        let hits: Vec<bool> = (0..1000).map(|_| a.take("GET", "/x").is_some()).collect();
        let again: Vec<bool> = (0..1000).map(|_| b.take("GET", "/x").is_some()).collect();
        assert_eq!(hits, again);
        let n = hits.iter().filter(|h| **h).count();
        assert!((150..250).contains(&n), "{n}");
    }
}
