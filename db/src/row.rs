//! Rows as the stores read them: decoded by the dialect into typed cells, then read by
//! column name. A type mismatch is a [`ColumnError`] naming the column, never its value.
use std::fmt;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// One result row.
#[derive(Clone, Default)]
pub struct Row {
    cells: Vec<(String, Cell)>,
}

/// A decoded column value.
#[derive(Clone, PartialEq)]
pub(crate) enum Cell {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
    Bool(bool),
    Time(OffsetDateTime),
}

/// A column that is missing or holds another type than the store expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column} {problem}")]
pub struct ColumnError {
    pub column: String,
    pub problem: &'static str,
}

// Rows hold envelopes and sealed tokens: a debug print names the columns only.
impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.cells.iter().map(|(name, _)| name))
            .finish()
    }
}

/// The getters of one type: `$name` for a NOT NULL column, `$opt` for a nullable one.
macro_rules! getters {
    ($name:ident, $opt:ident, $t:ty, $expected:literal, $convert:expr) => {
        pub fn $name(&self, column: &str) -> Result<$t, ColumnError> {
            self.$opt(column)?
                .ok_or_else(|| error(column, concat!("is NULL, not ", $expected)))
        }

        pub fn $opt(&self, column: &str) -> Result<Option<$t>, ColumnError> {
            let convert: fn(&Cell) -> Option<$t> = $convert;
            match self.cell(column)? {
                Cell::Null => Ok(None),
                cell => convert(cell)
                    .map(Some)
                    .ok_or_else(|| error(column, concat!("is not ", $expected))),
            }
        }
    };
}

impl Row {
    pub(crate) fn push(&mut self, column: &str, cell: Cell) {
        self.cells.push((column.to_owned(), cell));
    }

    fn cell(&self, column: &str) -> Result<&Cell, ColumnError> {
        self.cells
            .iter()
            .find(|(name, _)| name == column)
            .map(|(_, cell)| cell)
            .ok_or_else(|| error(column, "is missing"))
    }

    getters!(text, opt_text, String, "text", |c| match c {
        Cell::Text(s) => Some(s.clone()),
        _ => None,
    });
    getters!(int, opt_int, i64, "an integer", |c| match c {
        Cell::Int(n) => Some(*n),
        _ => None,
    });
    // SQLite has no boolean type: it stores 0 and 1.
    getters!(bool, opt_bool, bool, "a boolean", |c| match c {
        Cell::Bool(b) => Some(*b),
        Cell::Int(0) => Some(false),
        Cell::Int(1) => Some(true),
        _ => None,
    });
    getters!(bytes, opt_bytes, Vec<u8>, "bytes", |c| match c {
        Cell::Bytes(b) => Some(b.clone()),
        _ => None,
    });
    // SQLite keeps timestamps as RFC 3339 text; PostgreSQL as TIMESTAMPTZ.
    getters!(time, opt_time, OffsetDateTime, "a timestamp", |c| match c {
        Cell::Time(t) => Some(*t),
        Cell::Text(s) => OffsetDateTime::parse(s, &Rfc3339).ok(),
        _ => None,
    });
    getters!(real, opt_real, f64, "a number", |c| match c {
        Cell::Real(x) => Some(*x),
        Cell::Int(n) => Some(*n as f64),
        _ => None,
    });
}

fn error(column: &str, problem: &'static str) -> ColumnError {
    ColumnError {
        column: column.to_owned(),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    fn row() -> Row {
        let mut row = Row::default();
        row.push("name", Cell::Text("web-1".into()));
        row.push("secret", Cell::Bytes(b"s3cret".to_vec()));
        row.push("flag", Cell::Int(1));
        row.push("at", Cell::Text("2026-12-03T21:05:25.000001Z".into()));
        row.push("gone", Cell::Null);
        row
    }

    #[test]
    fn columns_read_by_name_and_type() {
        let row = row();

        assert_eq!(row.text("name").unwrap(), "web-1");
        assert!(row.bool("flag").unwrap());
        assert_eq!(
            row.time("at").unwrap(),
            datetime!(2026-12-03 21:05:25.000001 UTC)
        );
        assert_eq!(row.opt_text("gone").unwrap(), None);
    }

    #[test]
    fn a_mismatch_names_the_column_and_not_the_value() {
        let row = row();

        let errors = [
            row.int("name").unwrap_err(),
            row.text("gone").unwrap_err(),
            row.text("absent").unwrap_err(),
            row.time("secret").unwrap_err(),
        ];

        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "column name is not an integer",
                "column gone is NULL, not text",
                "column absent is missing",
                "column secret is not a timestamp",
            ]
        );
        assert!(!format!("{row:?}").contains("s3cret"));
    }
}
