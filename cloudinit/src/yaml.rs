//! A tiny YAML emitter for the cloud-config document.
//!
//! Why not a serializer: YAML libraries for Rust resolve plain scalars by YAML 1.2 rules,
//! while cloud-init loads documents with PyYAML (YAML 1.1), where plain `yes`, `on`,
//! `1:20` (sexagesimal) or `2001-12-14` are not strings. Here no value is ever plain:
//! every scalar is single-quoted (printable ASCII) or double-quoted with escapes, and file
//! contents are literal blocks, which both YAML versions read as the exact string. Keys
//! are fixed identifiers. The tests prove the round trip with a YAML 1.2 parser and, where
//! it is installed, with PyYAML.
use std::fmt::Write as _;

/// A scalar as a quoted YAML string: `'…'` when every character is printable ASCII
/// (a `'` is doubled), otherwise `"…"` with escapes for `"`, `\` and anything outside
/// printable ASCII that YAML 1.1 would treat as a line break or reject.
pub(super) fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    push_quoted(&mut out, value);
    out
}

/// [`quote`], appended to `out`.
pub(super) fn push_quoted(out: &mut String, value: &str) {
    out.reserve(value.len() + 2);
    if value.bytes().all(printable) {
        out.push('\'');
        for c in value.chars() {
            if c == '\'' {
                out.push('\'');
            }
            out.push(c);
        }
        out.push('\'');
        return;
    }
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            // Printable for PyYAML's reader and no YAML line break (U+2028/9, U+0085) and
            // no byte-order mark.
            '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' => {
                out.push(c);
            }
            '\u{ff00}'..='\u{fffd}' | '\u{10000}'.. => out.push(c),
            _ => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
        }
    }
    out.push('"');
}

/// A flow sequence of quoted scalars: `['a', 'b']`.
pub(super) fn flow_seq(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| quote(item)).collect();
    format!("[{}]", quoted.join(", "))
}

/// The value of a mapping key whose content is `content`, indented by `indent` spaces:
/// a literal block (`|` then the lines) when the content allows one (printable ASCII
/// lines without leading or trailing blanks trouble, ending in exactly one newline),
/// otherwise a quoted scalar on the same line.
#[cfg(test)]
pub(super) fn block(content: &str, indent: usize) -> String {
    let mut out = String::new();
    push_block(&mut out, content, indent);
    out
}

/// [`block`], appended to `out` (which the caller sizes: see `render`).
pub(super) fn push_block(out: &mut String, content: &str, indent: usize) {
    let Some(body) = literal_body(content) else {
        push_quoted(out, content);
        return;
    };
    let pad = " ".repeat(indent);
    out.push_str("|\n");
    let line = |out: &mut String, text: &str| {
        if !text.is_empty() {
            out.push_str(&pad);
            out.push_str(text);
        }
    };
    // `\n` is ASCII: the slices between line breaks are whole characters.
    let mut start = 0;
    for (i, b) in body.bytes().enumerate() {
        if b == b'\n' {
            line(out, &body[start..i]);
            out.push('\n');
            start = i + 1;
        }
    }
    line(out, &body[start..]);
}

/// Printable ASCII: what a literal block line and a single-quoted scalar may hold as is.
fn printable(b: u8) -> bool {
    (0x20..0x7f).contains(&b)
}

/// The text of a literal block for `content`: `content` without its final newline, when
/// it ends in exactly one, holds only printable ASCII lines none of which ends in a
/// blank, and does not begin with a blank (which would need an indentation indicator).
fn literal_body(content: &str) -> Option<&str> {
    let body = content.strip_suffix('\n')?;
    let bytes = body.as_bytes();
    let (&first, &last) = (bytes.first()?, bytes.last()?);
    if first == b' ' || last == b'\n' || last == b' ' {
        return None;
    }
    let mut previous = first;
    for &b in bytes {
        let allowed = if b == b'\n' {
            previous != b' '
        } else {
            printable(b)
        };
        if !allowed {
            return None;
        }
        previous = b;
    }
    Some(body)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Strings that would break out of, or be misread as, a plain scalar.
    const NASTY: [&str; 22] = [
        "plain",
        "0600",
        "yes",
        "on",
        "~",
        "null",
        "1:20",
        "2001-12-14",
        "a: b",
        "# comment",
        "{x: 1}",
        "[1, 2]",
        "it's",
        "say \"hi\"",
        "back\\slash",
        "line\nbreak",
        "cr\rlf",
        "tab\there",
        "\u{7f}\u{85}\u{2028}\u{feff}",
        "ünïcødé ✓ 😀",
        "- dash",
        "  leading and trailing  ",
    ];

    #[test]
    fn quoted_scalars_round_trip_through_a_yaml_parser() {
        let mut doc = String::new();
        for (i, value) in NASTY.iter().enumerate() {
            doc.push_str(&format!("k{i}: {}\n", quote(value)));
            doc.push_str(&format!("s{i}: {}\n", flow_seq(&[value, "x"])));
        }
        let parsed: BTreeMap<String, serde_norway::Value> = serde_norway::from_str(&doc).unwrap();
        for (i, value) in NASTY.iter().enumerate() {
            assert_eq!(parsed[&format!("k{i}")].as_str(), Some(*value), "{doc}");
            let seq = parsed[&format!("s{i}")].as_sequence().unwrap();
            assert_eq!(seq[0].as_str(), Some(*value));
        }
    }

    #[test]
    fn quoted_scalars_and_blocks_round_trip_through_pyyaml_as_cloud_init_reads_them() {
        let mut doc = String::new();
        for (i, value) in NASTY.iter().enumerate() {
            doc.push_str(&format!("k{i}: {}\n", quote(value)));
            doc.push_str(&format!("b{i}: {}\n", block(&format!("{value}\n"), 2)));
        }
        let Some(parsed) = crate::validate::pyyaml_load(&doc) else {
            return;
        };
        for (i, value) in NASTY.iter().enumerate() {
            assert_eq!(parsed[format!("k{i}")].as_str(), Some(*value), "{doc}");
            assert_eq!(
                parsed[format!("b{i}")].as_str(),
                Some(format!("{value}\n").as_str())
            );
        }
    }

    #[test]
    fn blocks_round_trip_and_fall_back_to_quotes_when_a_literal_cannot_hold_the_text() {
        let contents = [
            "A=1\nB=2\n",
            "#!/bin/sh\nx='a: b' # c\n\n[Unit]\n",
            "no newline at the end",
            "two newlines\n\n",
            "  indented first line\n",
            "trailing blank \n",
            "tab\there\n",
            "crlf\r\nthen lf\n",
            "blank \nin the middle\n",
            "\n",
            "",
            "---\n...\n",
        ];
        for content in contents {
            let doc = format!("a:\n  content: {}\n  after: 'x'\n", block(content, 4));
            let parsed: BTreeMap<String, BTreeMap<String, String>> =
                serde_norway::from_str(&doc).unwrap();
            assert_eq!(parsed["a"]["content"], content, "{doc}");
            assert_eq!(parsed["a"]["after"], "x");
        }
        assert!(block("A=1\n", 4).starts_with("|\n    A=1"));
    }
}
