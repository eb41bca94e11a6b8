//! Order and account ids a client names, checked against the range the
//! exchange takes ([`exchange_types::MAX_ID`]) before anything reaches the
//! log: an id beyond it can only name nothing, and a refusal of it would
//! otherwise carry it into the journal for good.

use axum::extract::RawPathParams;
use exchange_types::{account_id_in_range, order_id_in_range, AccountId, OrderId, MAX_ID};

use super::error::ApiError;

/// Path parameters that hold an order id, and those that hold an account id.
const ORDER_PARAMS: &[&str] = &["order_id"];
const ACCOUNT_PARAMS: &[&str] = &["account_id", "account"];

fn order_out_of_range(field: &str) -> ApiError {
    ApiError::bad_request(
        "order_id_out_of_range",
        format!("`{field}` must be an order id from 1 to {MAX_ID}"),
    )
}

fn account_out_of_range(field: &str) -> ApiError {
    ApiError::bad_request(
        "account_id_out_of_range",
        format!("`{field}` must be an account id from 0 to {MAX_ID}"),
    )
}

/// `id` as an order id, or 400 `order_id_out_of_range`.
pub fn order_id(field: &str, id: u64) -> Result<OrderId, ApiError> {
    if order_id_in_range(id) {
        Ok(id)
    } else {
        Err(order_out_of_range(field))
    }
}

/// `id` as an account id, or 400 `account_id_out_of_range`.
pub fn account_id(field: &str, id: u64) -> Result<AccountId, ApiError> {
    if account_id_in_range(id) {
        Ok(id)
    } else {
        Err(account_out_of_range(field))
    }
}

/// Refuses a path whose id parameter is all digits but out of range
/// (beyond `u64` included); anything else that is not a number is left to
/// the typed extraction (400 `invalid_path`).
pub(crate) fn check_path(params: &RawPathParams) -> Result<(), ApiError> {
    for (name, value) in params {
        let digits = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
        if !digits {
            continue;
        }
        let id = value.parse::<u64>().ok();
        if ORDER_PARAMS.contains(&name) && !id.is_some_and(order_id_in_range) {
            return Err(order_out_of_range(name));
        }
        if ACCOUNT_PARAMS.contains(&name) && !id.is_some_and(account_id_in_range) {
            return Err(account_out_of_range(name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_beyond_the_signed_range_are_refused() {
        assert_eq!(order_id("order_id", 1).ok(), Some(1));
        assert_eq!(order_id("order_id", MAX_ID).ok(), Some(MAX_ID));
        for bad in [0, MAX_ID + 1, u64::MAX] {
            let error = order_id("order_id", bad).err().map(|e| e.code);
            assert_eq!(error, Some("order_id_out_of_range"), "{bad}");
        }
        assert_eq!(account_id("account_id", 0).ok(), Some(0));
        assert_eq!(account_id("account_id", MAX_ID).ok(), Some(MAX_ID));
        let error = account_id("account_id", MAX_ID + 1).err().map(|e| e.code);
        assert_eq!(error, Some("account_id_out_of_range"));
    }
}
