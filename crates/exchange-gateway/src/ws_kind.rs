//! The `type` of a client's WebSocket message, read once into an enum so
//! that the session matches variants rather than strings (docs/protocol.md
//! lists the types). The wire names stay the strings clients send.

use serde_json::Value;

/// What a client's message asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MessageType {
    Auth,
    Subscribe,
    Unsubscribe,
    Ping,
    CancelOnDisconnect,
    Order(EntryType),
}

/// The order-entry messages: each becomes one command for the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryType {
    Place,
    Cancel,
    Replace,
    MassCancel,
}

impl MessageType {
    /// The type a wire name stands for; `None` for a name no type has.
    pub(crate) fn parse(name: &str) -> Option<MessageType> {
        Some(match name {
            "auth" => MessageType::Auth,
            "subscribe" => MessageType::Subscribe,
            "unsubscribe" => MessageType::Unsubscribe,
            "ping" => MessageType::Ping,
            "cancel_on_disconnect" => MessageType::CancelOnDisconnect,
            "place" => MessageType::Order(EntryType::Place),
            "cancel" => MessageType::Order(EntryType::Cancel),
            "replace" => MessageType::Order(EntryType::Replace),
            "mass_cancel" => MessageType::Order(EntryType::MassCancel),
            _ => return None,
        })
    }

    /// The type of a message already read as JSON, if its `type` names one.
    pub(crate) fn of(message: &Value) -> Option<MessageType> {
        message
            .get("type")
            .and_then(Value::as_str)
            .and_then(MessageType::parse)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_wire_name_reads_as_its_type_and_no_other_name_does() {
        let names = [
            ("auth", MessageType::Auth),
            ("subscribe", MessageType::Subscribe),
            ("unsubscribe", MessageType::Unsubscribe),
            ("ping", MessageType::Ping),
            ("cancel_on_disconnect", MessageType::CancelOnDisconnect),
            ("place", MessageType::Order(EntryType::Place)),
            ("cancel", MessageType::Order(EntryType::Cancel)),
            ("replace", MessageType::Order(EntryType::Replace)),
            ("mass_cancel", MessageType::Order(EntryType::MassCancel)),
        ];
        for (name, kind) in names {
            assert_eq!(MessageType::parse(name), Some(kind), "{name}");
            assert_eq!(MessageType::of(&json!({ "type": name })), Some(kind));
        }
        for name in [
            "",
            "Place",
            "PLACE",
            "mass-cancel",
            "massCancel",
            "pong",
            "order",
        ] {
            assert_eq!(MessageType::parse(name), None, "{name:?}");
        }
        assert_eq!(MessageType::of(&json!({ "type": 1 })), None);
        assert_eq!(MessageType::of(&json!({ "kind": "place" })), None);
    }
}
