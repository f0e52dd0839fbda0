//! Statement arguments. Every variant carries its type even when NULL: PostgreSQL needs a
//! typed NULL for a `TIMESTAMPTZ` or `BYTEA` column.
use std::fmt;

use time::OffsetDateTime;

/// One bound argument.
#[derive(Clone, PartialEq)]
pub enum Value {
    Text(Option<String>),
    Int(Option<i64>),
    Bool(Option<bool>),
    Bytes(Option<Vec<u8>>),
    /// Stored to the microsecond; see [`crate::to_stored_precision`].
    Time(Option<OffsetDateTime>),
    /// One PostgreSQL array (`$1::text[]`): a column of many rows, for a statement over
    /// all of them (`unnest($1, $2, …)`). SQLite has no arrays: binding one there fails.
    Array(Array),
}

/// The values of one column over many rows, all of one type.
#[derive(Clone, PartialEq)]
pub enum Array {
    Text(Vec<Option<String>>),
    Int(Vec<Option<i64>>),
    Bool(Vec<Option<bool>>),
    Bytes(Vec<Option<Vec<u8>>>),
    Time(Vec<Option<OffsetDateTime>>),
}

// Like a value's, an array's debug print names its type (and length) only.
impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.sql_type(), self.len())
    }
}

impl Array {
    /// An empty array for values of `value`'s type, with room for `rows`; `None` for an
    /// array (PostgreSQL has no arrays of arrays of mixed length).
    pub fn of(value: &Value, rows: usize) -> Option<Self> {
        Some(match value {
            Value::Text(_) => Array::Text(Vec::with_capacity(rows)),
            Value::Int(_) => Array::Int(Vec::with_capacity(rows)),
            Value::Bool(_) => Array::Bool(Vec::with_capacity(rows)),
            Value::Bytes(_) => Array::Bytes(Vec::with_capacity(rows)),
            Value::Time(_) => Array::Time(Vec::with_capacity(rows)),
            Value::Array(_) => return None,
        })
    }

    /// Appends `value`, or gives it back when it is not of the array's type.
    pub fn push(&mut self, value: Value) -> Result<(), Value> {
        match (self, value) {
            (Array::Text(a), Value::Text(v)) => a.push(v),
            (Array::Int(a), Value::Int(v)) => a.push(v),
            (Array::Bool(a), Value::Bool(v)) => a.push(v),
            (Array::Bytes(a), Value::Bytes(v)) => a.push(v),
            (Array::Time(a), Value::Time(v)) => a.push(v),
            (_, other) => return Err(other),
        }
        Ok(())
    }

    /// The PostgreSQL type of the array (`text[]`, `bigint[]`, …).
    pub fn sql_type(&self) -> &'static str {
        match self {
            Array::Text(_) => "text[]",
            Array::Int(_) => "bigint[]",
            Array::Bool(_) => "boolean[]",
            Array::Bytes(_) => "bytea[]",
            Array::Time(_) => "timestamptz[]",
        }
    }

    fn len(&self) -> usize {
        match self {
            Array::Text(a) => a.len(),
            Array::Int(a) => a.len(),
            Array::Bool(a) => a.len(),
            Array::Bytes(a) => a.len(),
            Array::Time(a) => a.len(),
        }
    }
}

impl Value {
    /// The PostgreSQL type of an array of values of this one's type (`text[]`, …); `None`
    /// for an array.
    pub fn array_type(&self) -> Option<&'static str> {
        Array::of(self, 0).map(|a| a.sql_type())
    }
}

// Arguments hold sealed tokens and envelopes: a debug print names the types only.
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, null) = match self {
            Value::Text(v) => ("text", v.is_none()),
            Value::Int(v) => ("int", v.is_none()),
            Value::Bool(v) => ("bool", v.is_none()),
            Value::Bytes(v) => ("bytes", v.is_none()),
            Value::Time(v) => ("time", v.is_none()),
            Value::Array(a) => return a.fmt(f),
        };
        write!(f, "{kind}{}", if null { "(null)" } else { "" })
    }
}

macro_rules! from {
    ($variant:ident: $($t:ty => $conv:expr),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self {
                let conv: fn($t) -> _ = $conv;
                Value::$variant(conv(v))
            }
        }
    )*};
}

from!(Text:
    &str => |v| Some(v.to_owned()),
    String => Some,
    &String => |v| Some(v.clone()),
    Option<&str> => |v| v.map(str::to_owned),
    Option<String> => |v| v,
);
from!(Int:
    i64 => Some,
    u32 => |v| Some(i64::from(v)),
    Option<i64> => |v| v,
);
from!(Bool: bool => Some, Option<bool> => |v| v);
from!(Bytes:
    Vec<u8> => Some,
    &[u8] => |v| Some(v.to_vec()),
    &[u8; 32] => |v| Some(v.to_vec()),
    Option<&[u8]> => |v| v.map(<[u8]>::to_vec),
    Option<Vec<u8>> => |v| v,
);
from!(Time: OffsetDateTime => Some, Option<OffsetDateTime> => |v| v);

#[cfg(test)]
mod tests {
    use super::{Array, Value};
    #[test]
    fn a_debug_print_names_the_type_and_never_the_value() {
        let args = crate::args!["s3cret", Some(b"sealed".as_slice()), None::<String>, 7_i64];

        let text = format!("{args:?}");

        assert_eq!(text, "[text, bytes, text(null), int]");
    }

    #[test]
    fn an_array_takes_values_of_its_type_only_and_prints_its_type_and_length() {
        let mut texts = Array::of(&Value::from("a"), 2).expect("text has arrays");
        assert!(texts.push(Value::from("s3cret")).is_ok());
        assert!(texts.push(Value::Text(None)).is_ok());
        assert_eq!(texts.push(Value::from(7_i64)), Err(Value::Int(Some(7))));
        assert_eq!(Value::Time(None).array_type(), Some("timestamptz[]"));
        assert_eq!(texts, Array::Text(vec![Some("s3cret".into()), None]));
        assert!(Array::of(&Value::Array(texts.clone()), 1).is_none());

        assert_eq!(format!("{:?}", Value::Array(texts)), "text[](2)");
    }
}
