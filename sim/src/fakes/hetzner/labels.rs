//! Hetzner label rules and the label-selector language (`k=v`, `k==v`, `k!=v`, `k`, `!k`,
//! `k in (a,b)`, `k notin (a,b)`, comma = and), as documented in "Labels" and
//! "Label Selector".
use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Checks a `labels` object; the error names the offending key.
pub(crate) fn validate(labels: &Value) -> Result<BTreeMap<String, String>, String> {
    let Some(map) = labels.as_object() else {
        return if labels.is_null() {
            Ok(BTreeMap::new())
        } else {
            Err("labels must be an object".into())
        };
    };
    let mut out = BTreeMap::new();
    for (k, v) in map {
        let v = v
            .as_str()
            .ok_or_else(|| format!("label value of `{k}` must be a string"))?;
        if !valid_key(k) {
            return Err(format!("invalid label key `{k}`"));
        }
        if !valid_value(v) {
            return Err(format!("invalid label value for `{k}`"));
        }
        out.insert(k.clone(), v.to_owned());
    }
    Ok(out)
}

fn name_ok(s: &str, allow_empty: bool) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return allow_empty;
    }
    b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn valid_key(k: &str) -> bool {
    match k.rsplit_once('/') {
        Some((prefix, name)) => {
            prefix != "hetzner.cloud"
                && !prefix.ends_with(".hetzner.cloud")
                && prefix.len() <= 253
                && prefix
                    .split('.')
                    .all(|l| name_ok(l, false) && !l.contains('_'))
                && name_ok(name, false)
        }
        None => name_ok(k, false),
    }
}

fn valid_value(v: &str) -> bool {
    name_ok(v, true)
}

#[derive(Debug)]
enum Term {
    Eq(String, String),
    Ne(String, String),
    Exists(String),
    Absent(String),
    /// A set held sorted: a batched poll asks for the servers of many provisions at once,
    /// and each server is looked up in it.
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
}

/// A parsed label selector.
#[derive(Debug)]
pub(crate) struct Selector(Vec<Term>);

impl Selector {
    /// Parses the `label_selector` query parameter.
    pub(crate) fn parse(s: &str) -> Result<Selector, String> {
        let mut terms = Vec::new();
        for raw in split_top_level(s) {
            let t = raw.trim();
            let term = if let Some(k) = t.strip_prefix('!') {
                Term::Absent(k.trim().to_owned())
            } else if let Some((k, set)) = t.split_once(" notin ") {
                Term::NotIn(k.trim().to_owned(), set_of(set)?)
            } else if let Some((k, set)) = t.split_once(" in ") {
                Term::In(k.trim().to_owned(), set_of(set)?)
            } else if let Some((k, v)) = t.split_once("!=") {
                Term::Ne(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                Term::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else {
                Term::Exists(t.to_owned())
            };
            let key = match &term {
                Term::Eq(k, _)
                | Term::Ne(k, _)
                | Term::Exists(k)
                | Term::Absent(k)
                | Term::In(k, _)
                | Term::NotIn(k, _) => k,
            };
            if !valid_key(key) {
                return Err(format!("invalid label selector `{s}`"));
            }
            terms.push(term);
        }
        Ok(Selector(terms))
    }

    /// Whether `labels` satisfy every term.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|t| match t {
            Term::Eq(k, v) => labels.get(k) == Some(v),
            Term::Ne(k, v) => labels.get(k) != Some(v),
            Term::Exists(k) => labels.contains_key(k),
            Term::Absent(k) => !labels.contains_key(k),
            Term::In(k, set) => labels.get(k).is_some_and(|v| set.contains(v)),
            Term::NotIn(k, set) => labels.get(k).is_none_or(|v| !set.contains(v)),
        })
    }
}

fn set_of(s: &str) -> Result<BTreeSet<String>, String> {
    let inner = s
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or("a set must be in parentheses")?;
    Ok(inner.split(',').map(|v| v.trim().to_owned()).collect())
}

/// Splits on commas outside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}
