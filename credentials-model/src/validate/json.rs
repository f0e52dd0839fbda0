//! Strict reading of pasted JSON credential documents: size and nesting limits enforced
//! before serde_json sees the text, one flat object with duplicate keys rejected, and error
//! messages built only from positions and categories, never from serde_json's own text
//! (which can quote the input, e.g. "unknown variant `…`").
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use zeroize::Zeroizing;

use super::text::{check_len, empty, shown_key};
use super::{FieldError, MAX_JSON_DEPTH};

/// One value of a top-level key. Strings are zeroized on drop; anything nested is only
/// recorded by kind, since no credential field may hold an array or object.
pub(super) enum RawValue {
    Str(Zeroizing<String>),
    Bool(bool),
    UInt(u64),
    Null,
    Other(&'static str),
}

impl RawValue {
    /// "a string", "a number", … for messages.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            RawValue::Str(_) => "a string",
            RawValue::Bool(_) => "a boolean",
            RawValue::UInt(_) => "a number",
            RawValue::Null => "null",
            RawValue::Other(kind) => kind,
        }
    }
}

/// A parsed top-level JSON object with unique keys, in document order.
pub(super) struct RawObject {
    /// Field path of the document itself, e.g. `azure.json`.
    field: &'static str,
    entries: Vec<(String, RawValue)>,
}

/// Parses `text` as one JSON object: at most `max_bytes`, nesting at most
/// [`MAX_JSON_DEPTH`], no duplicate keys.
pub(super) fn parse_object(
    field: &'static str,
    text: &str,
    max_bytes: usize,
) -> Result<RawObject, FieldError> {
    check_len(field, text, max_bytes)?;
    if text.trim_ascii().is_empty() {
        return Err(empty(field));
    }
    check_depth(field, text.as_bytes())?;
    let entries = match serde_json::from_str::<Top>(text) {
        Ok(Top::Object(entries)) => entries,
        Ok(Top::NotObject(kind)) => {
            return Err(FieldError::new(
                field,
                format!("must be a JSON object, not {kind}"),
            ));
        }
        Err(e) => return Err(FieldError::new(field, describe(&e))),
    };
    let mut seen = HashSet::with_capacity(entries.len());
    for (key, _) in &entries {
        if !seen.insert(key.as_str()) {
            return Err(FieldError::new(path(field, key), "duplicate key"));
        }
    }
    Ok(RawObject { field, entries })
}

/// Rejects nesting deeper than [`MAX_JSON_DEPTH`] with a linear byte scan that skips string
/// contents (including escaped quotes), so a 10,000-deep `[[[[…` never reaches a recursive
/// parser. Malformed input is left for serde_json to report.
pub(super) fn check_depth(field: &str, bytes: &[u8]) -> Result<(), FieldError> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(FieldError::new(
                        field,
                        format!("must not nest JSON deeper than {MAX_JSON_DEPTH} levels"),
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// A value-free description of a serde_json error: category and position only.
fn describe(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let (line, column) = (e.line(), e.column());
    match e.classify() {
        Category::Eof => {
            format!("is not valid JSON: unexpected end at line {line} column {column}")
        }
        Category::Syntax => format!("is not valid JSON at line {line} column {column}"),
        Category::Data => format!("has an unexpected JSON value at line {line} column {column}"),
        Category::Io => "could not be read".to_owned(),
    }
}

/// `field.key`, or `field` alone when the key does not look like a field name.
fn path(field: &str, key: &str) -> String {
    match shown_key(key) {
        Some(key) => format!("{field}.{key}"),
        None => field.to_owned(),
    }
}

impl RawObject {
    /// The field path of `key` inside this document.
    pub(super) fn path(&self, key: &str) -> String {
        path(self.field, key)
    }

    /// Errors on the first key (in document order) that is not in `allowed`.
    pub(super) fn deny_unknown(&self, allowed: &[&str]) -> Result<(), FieldError> {
        match self
            .entries
            .iter()
            .find(|(k, _)| !allowed.contains(&k.as_str()))
        {
            Some((key, _)) => Err(FieldError::new(self.path(key), "unknown field")),
            None => Ok(()),
        }
    }

    /// The value of `key`, if present.
    pub(super) fn get(&self, key: &str) -> Option<&RawValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The string value of `key`; `None` when absent, an error when present but not a string.
    pub(super) fn opt_str(&self, key: &str) -> Result<Option<&str>, FieldError> {
        match self.get(key) {
            None => Ok(None),
            Some(RawValue::Str(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(self.not_a_string(key, other)),
        }
    }

    /// The string value of `key`; absent is "is required".
    pub(super) fn req_str(&self, key: &str) -> Result<&str, FieldError> {
        self.opt_str(key)?
            .ok_or_else(|| FieldError::new(self.path(key), "is required"))
    }

    /// Like [`RawObject::opt_str`] but `null` also means absent.
    pub(super) fn nullable_str(&self, key: &str) -> Result<Option<&str>, FieldError> {
        match self.get(key) {
            None => Err(FieldError::new(self.path(key), "is required")),
            Some(RawValue::Null) => Ok(None),
            Some(_) => self.opt_str(key),
        }
    }

    /// The boolean value of `key`; absent or another type is an error.
    pub(super) fn req_bool(&self, key: &str) -> Result<bool, FieldError> {
        match self.get(key) {
            Some(RawValue::Bool(b)) => Ok(*b),
            Some(other) => Err(FieldError::new(
                self.path(key),
                format!("must be a boolean, not {}", other.kind()),
            )),
            None => Err(FieldError::new(self.path(key), "is required")),
        }
    }

    fn not_a_string(&self, key: &str, value: &RawValue) -> FieldError {
        FieldError::new(
            self.path(key),
            format!("must be a string, not {}", value.kind()),
        )
    }
}

/// The top level of a document: an object, or the kind of whatever else it was.
enum Top {
    Object(Vec<(String, RawValue)>),
    NotObject(&'static str),
}

impl<'de> Deserialize<'de> for Top {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<RawValue>()?;
            entries.push((key, value));
        }
        Ok(Top::Object(entries))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Top, A::Error> {
        drain_seq(seq).map(|_| Top::NotObject("an array"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Top, E> {
        Ok(Top::NotObject("a string"))
    }

    fn visit_string<E: de::Error>(self, mut v: String) -> Result<Top, E> {
        zeroize::Zeroize::zeroize(&mut v);
        Ok(Top::NotObject("a string"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Top, E> {
        Ok(Top::NotObject("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Top, E> {
        Ok(Top::NotObject("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Top, E> {
        Ok(Top::NotObject("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Top, E> {
        Ok(Top::NotObject("a number"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Top, E> {
        Ok(Top::NotObject("null"))
    }
}

impl<'de> Deserialize<'de> for RawValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawValueVisitor)
    }
}

struct RawValueVisitor;

impl<'de> Visitor<'de> for RawValueVisitor {
    type Value = RawValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawValue, E> {
        Ok(RawValue::Str(Zeroizing::new(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<RawValue, E> {
        Ok(RawValue::Str(Zeroizing::new(v)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawValue, E> {
        Ok(RawValue::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawValue, E> {
        Ok(RawValue::UInt(v))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<RawValue, E> {
        Ok(RawValue::Other("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<RawValue, E> {
        Ok(RawValue::Other("a number"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<RawValue, E> {
        Ok(RawValue::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawValue, A::Error> {
        drain_seq(seq).map(|_| RawValue::Other("an array"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawValue, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RawValue::Other("an object"))
    }
}

/// Consumes a sequence without keeping it (serde_json requires every element be read).
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_scanner_ignores_brackets_inside_strings_and_escapes() {
        let deep_in_string = format!(r#"{{"a":"\"{}"}}"#, "[".repeat(1000));
        assert!(check_depth("f", deep_in_string.as_bytes()).is_ok());
        let at_limit = format!("{}{}", "[".repeat(32), "]".repeat(32));
        assert!(check_depth("f", at_limit.as_bytes()).is_ok());
        let over = format!("{}{}", "[".repeat(33), "]".repeat(33));
        assert!(check_depth("f", over.as_bytes()).is_err());
    }

    #[test]
    fn a_closing_quote_after_an_escaped_backslash_ends_the_string() {
        let text = format!(r#"{{"a":"\\"}}{}"#, "[".repeat(40));
        assert!(check_depth("f", text.as_bytes()).is_err());
    }

    #[test]
    fn parse_object_keeps_document_order_and_rejects_duplicates() {
        let obj = parse_object("doc", r#"{"b":"1","a":true,"c":null}"#, 1024).unwrap();
        assert_eq!(
            obj.entries
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>(),
            ["b", "a", "c"]
        );
        assert_eq!(obj.req_str("b").unwrap(), "1");
        assert!(obj.req_bool("a").unwrap());
        assert_eq!(obj.nullable_str("c").unwrap(), None);
        let err = parse_object("doc", r#"{"a":"1","a":"2"}"#, 1024)
            .err()
            .unwrap();
        assert_eq!(err.field, "doc.a");
    }
}
