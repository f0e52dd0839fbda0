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
    #[test]
    fn a_debug_print_names_the_type_and_never_the_value() {
        let args = crate::args!["s3cret", Some(b"sealed".as_slice()), None::<String>, 7_i64];

        let text = format!("{args:?}");

        assert_eq!(text, "[text, bytes, text(null), int]");
    }
}
