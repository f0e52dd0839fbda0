//! Page tokens of `ListProvisions`: the (creation time, id) of the last provision listed,
//! opaque to clients (base64url of `<unix micros>.<id>`).
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use time::OffsetDateTime;

use crate::model::FieldError;
use crate::model::provision::PageCursor;
use crate::model::provision::ProvisionId;

pub(super) const DEFAULT_PAGE_SIZE: u32 = 50;
/// The largest page size.
pub(super) const MAX_PAGE_SIZE: u32 = 200;

/// The token continuing after `cursor`.
pub(super) fn encode(cursor: &PageCursor) -> String {
    let micros = cursor.created_at.unix_timestamp_nanos() / 1_000;
    URL_SAFE_NO_PAD.encode(format!("{micros}.{}", cursor.id))
}

/// The cursor a token names; `None` for the empty token.
pub(super) fn decode(token: &str) -> Result<Option<PageCursor>, FieldError> {
    if token.is_empty() {
        return Ok(None);
    }
    let invalid = || FieldError::new("page_token", "is not a token from a previous response");
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (micros, id) = text.split_once('.').ok_or_else(invalid)?;
    let micros: i128 = micros.parse().map_err(|_| invalid())?;
    let created_at =
        OffsetDateTime::from_unix_timestamp_nanos(micros * 1_000).map_err(|_| invalid())?;
    let id = ProvisionId::parse(id).map_err(|_| invalid())?;
    Ok(Some(PageCursor { created_at, id }))
}

/// `0` means the default; larger than the maximum is clamped.
pub(super) fn size(requested: u32) -> u32 {
    match requested {
        0 => DEFAULT_PAGE_SIZE,
        n => n.min(MAX_PAGE_SIZE),
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn a_cursor_round_trips_through_its_token() {
        let cursor = PageCursor {
            created_at: datetime!(2030-01-01 00:00:00.123456 UTC),
            id: ProvisionId::generate(),
        };
        assert_eq!(decode(&encode(&cursor)), Ok(Some(cursor)));
        assert_eq!(decode(""), Ok(None));
    }

    #[test]
    fn a_forged_token_names_the_field() {
        for bad in ["!!", "bm9wZQ", &URL_SAFE_NO_PAD.encode("12.npv_zz")] {
            assert_eq!(decode(bad).expect_err(bad).field, "page_token");
        }
        assert_eq!((size(0), size(7), size(10_000)), (50, 7, 200));
    }
}
