//! A `String` holding JSON text (a target, an output), written by serde as the JSON value it
//! holds rather than as a string: `{"target": {"url": "…"}}`, not `{"target": "{\"url\":…}"}`.
//!
//! Read back, the value is written out again as compact JSON text: the same value, though an
//! object's keys may come back in another order than they were stored in. Text that is not
//! JSON (no store of this crate keeps any) is written as the string it is.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `#[serde(with = "crate::json_text")]` for a `String` of JSON text.
pub(crate) fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => value.serialize(serializer),
        Err(_) => serializer.serialize_str(text),
    }
}

/// `#[serde(with = "crate::json_text")]` for a `String` of JSON text.
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(value.to_string())
}
