//! FIX 4.4 tag numbers and enumerated values used by the gateway, named as
//! in the specification so the code reads like the message tables in
//! docs/fix.md.

pub const ACCOUNT: u32 = 1;
pub const AVG_PX: u32 = 6;
pub const BEGIN_SEQ_NO: u32 = 7;
pub const BEGIN_STRING: u32 = 8;
pub const BODY_LENGTH: u32 = 9;
pub const CHECK_SUM: u32 = 10;
pub const CL_ORD_ID: u32 = 11;
pub const COMMISSION: u32 = 12;
pub const COMM_TYPE: u32 = 13;
pub const CUM_QTY: u32 = 14;
pub const END_SEQ_NO: u32 = 16;
pub const EXEC_ID: u32 = 17;
pub const EXEC_INST: u32 = 18;
pub const HANDL_INST: u32 = 21;
pub const SECURITY_ID_SOURCE: u32 = 22;
pub const LAST_PX: u32 = 31;
pub const LAST_QTY: u32 = 32;
pub const MSG_SEQ_NUM: u32 = 34;
pub const MSG_TYPE: u32 = 35;
pub const NEW_SEQ_NO: u32 = 36;
pub const ORDER_ID: u32 = 37;
pub const ORDER_QTY: u32 = 38;
pub const ORD_STATUS: u32 = 39;
pub const ORD_TYPE: u32 = 40;
pub const ORIG_CL_ORD_ID: u32 = 41;
pub const POSS_DUP_FLAG: u32 = 43;
pub const PRICE: u32 = 44;
pub const STOP_PX: u32 = 99;
pub const EXPIRE_TIME: u32 = 126;
pub const REF_SEQ_NUM: u32 = 45;
pub const SECURITY_ID: u32 = 48;
pub const SENDER_COMP_ID: u32 = 49;
pub const SENDER_SUB_ID: u32 = 50;
pub const SENDING_TIME: u32 = 52;
pub const SIDE: u32 = 54;
pub const SYMBOL: u32 = 55;
pub const TARGET_COMP_ID: u32 = 56;
pub const TARGET_SUB_ID: u32 = 57;
pub const TEXT: u32 = 58;
pub const TIME_IN_FORCE: u32 = 59;
pub const TRANSACT_TIME: u32 = 60;
pub const POSS_RESEND: u32 = 97;
pub const ENCRYPT_METHOD: u32 = 98;
pub const CXL_REJ_REASON: u32 = 102;
pub const ORD_REJ_REASON: u32 = 103;
pub const HEART_BT_INT: u32 = 108;
pub const TEST_REQ_ID: u32 = 112;
pub const ON_BEHALF_OF_COMP_ID: u32 = 115;
pub const ON_BEHALF_OF_SUB_ID: u32 = 116;
pub const ORIG_SENDING_TIME: u32 = 122;
pub const GAP_FILL_FLAG: u32 = 123;
pub const DELIVER_TO_COMP_ID: u32 = 128;
pub const DELIVER_TO_SUB_ID: u32 = 129;
pub const RESET_SEQ_NUM_FLAG: u32 = 141;
pub const SENDER_LOCATION_ID: u32 = 142;
pub const TARGET_LOCATION_ID: u32 = 143;
pub const ON_BEHALF_OF_LOCATION_ID: u32 = 144;
pub const DELIVER_TO_LOCATION_ID: u32 = 145;
pub const EXEC_TYPE: u32 = 150;
pub const LEAVES_QTY: u32 = 151;
pub const CASH_ORDER_QTY: u32 = 152;
/// Minimum acceptable quantity: what the order must fill on entry.
pub const MIN_QTY: u32 = 110;
/// The quantity an iceberg shows (display quantity).
pub const MAX_FLOOR: u32 = 111;
/// DisplayQty (DisplayInstruction): only 0, which enters a hidden order.
pub const DISPLAY_QTY: u32 = 1138;
pub const SECURITY_TYPE: u32 = 167;
/// A trailing stop's distance (PegInstructions), with ExecInst `a`.
pub const PEG_OFFSET_VALUE: u32 = 211;
/// What PegOffsetValue counts: 0 price, 1 basis points.
pub const PEG_OFFSET_TYPE: u32 = 836;
/// The ClOrdID of the open order a one-cancels-other order pairs with.
pub const CL_ORD_LINK_ID: u32 = 583;
/// FIX 5.0 SP1's ContingencyType, accepted on a 4.4 NewOrderSingle: 1
/// one-cancels-other.
pub const CONTINGENCY_TYPE: u32 = 1385;
pub const SUBSCRIPTION_REQUEST_TYPE: u32 = 263;
pub const SECURITY_STATUS_REQ_ID: u32 = 324;
pub const UNSOLICITED_INDICATOR: u32 = 325;
pub const SECURITY_TRADING_STATUS: u32 = 326;
pub const BUY_VOLUME: u32 = 330;
pub const SELL_VOLUME: u32 = 331;
pub const HIGH_PX: u32 = 332;
pub const LOW_PX: u32 = 333;
pub const LAST_MSG_SEQ_NUM_PROCESSED: u32 = 369;
pub const REF_TAG_ID: u32 = 371;
pub const REF_MSG_TYPE: u32 = 372;
pub const SESSION_REJECT_REASON: u32 = 373;
pub const EXEC_RESTATEMENT_REASON: u32 = 378;
pub const BUSINESS_REJECT_REF_ID: u32 = 379;
pub const BUSINESS_REJECT_REASON: u32 = 380;
pub const MAX_MESSAGE_SIZE: u32 = 383;
pub const TRADING_SESSION_ID: u32 = 336;
pub const NO_TRADING_SESSIONS: u32 = 386;
pub const CXL_REJ_RESPONSE_TO: u32 = 434;
pub const PARTY_ID_SOURCE: u32 = 447;
pub const PARTY_ID: u32 = 448;
pub const PARTY_ROLE: u32 = 452;
pub const NO_PARTIES: u32 = 453;
pub const TRADING_SESSION_SUB_ID: u32 = 625;
pub const TEST_MESSAGE_INDICATOR: u32 = 464;
pub const ORDER_PERCENT: u32 = 516;
pub const SECONDARY_CL_ORD_ID: u32 = 526;
pub const SECONDARY_EXEC_ID: u32 = 527;
pub const MASS_CANCEL_REQUEST_TYPE: u32 = 530;
pub const MASS_CANCEL_RESPONSE: u32 = 531;
pub const MASS_CANCEL_REJECT_REASON: u32 = 532;
pub const TOTAL_AFFECTED_ORDERS: u32 = 533;
pub const NO_AFFECTED_ORDERS: u32 = 534;
pub const AFFECTED_ORDER_ID: u32 = 535;
pub const USERNAME: u32 = 553;
pub const PASSWORD: u32 = 554;
pub const NEXT_EXPECTED_MSG_SEQ_NUM: u32 = 789;
pub const ORD_STATUS_REQ_ID: u32 = 790;
pub const LAST_LIQUIDITY_IND: u32 = 851;
pub const TRD_MATCH_ID: u32 = 880;
/// User-defined: the exchange's self-trade prevention mode for an order.
pub const SELF_TRADE_PREVENTION: u32 = 7928;
/// The highest tag number FIX 4.4 defines.
pub const LAST_FIX44_TAG: u32 = 956;

/// Whether `tag` names a field at all: one FIX 4.4 defines, one of the
/// exchange's own, or ContingencyType, borrowed from FIX 5.0 SP1 for
/// one-cancels-other orders. Any other number is an invalid tag, whatever
/// the message.
pub fn is_known(tag: u32) -> bool {
    (1..=LAST_FIX44_TAG).contains(&tag) || tag == SELF_TRADE_PREVENTION || tag == CONTINGENCY_TYPE
}

/// Message types.
pub mod msg {
    pub const HEARTBEAT: &str = "0";
    pub const TEST_REQUEST: &str = "1";
    pub const RESEND_REQUEST: &str = "2";
    pub const REJECT: &str = "3";
    pub const SEQUENCE_RESET: &str = "4";
    pub const LOGOUT: &str = "5";
    pub const EXECUTION_REPORT: &str = "8";
    pub const ORDER_CANCEL_REJECT: &str = "9";
    pub const LOGON: &str = "A";
    pub const NEW_ORDER_SINGLE: &str = "D";
    pub const ORDER_CANCEL_REQUEST: &str = "F";
    pub const ORDER_CANCEL_REPLACE_REQUEST: &str = "G";
    pub const ORDER_STATUS_REQUEST: &str = "H";
    pub const BUSINESS_MESSAGE_REJECT: &str = "j";
    pub const ORDER_MASS_CANCEL_REQUEST: &str = "q";
    pub const ORDER_MASS_CANCEL_REPORT: &str = "r";
    pub const SECURITY_STATUS_REQUEST: &str = "e";
    pub const SECURITY_STATUS: &str = "f";

    /// Session-level (administrative) messages: never resent, gap-filled.
    pub fn is_admin(msg_type: &[u8]) -> bool {
        matches!(msg_type, b"0" | b"1" | b"2" | b"3" | b"4" | b"5" | b"A")
    }

    /// Whether FIX 4.4 defines this message type at all: an undefined type
    /// is a session-level reject, a defined one the gateway does not take a
    /// business-level one.
    pub fn is_defined(msg_type: &[u8]) -> bool {
        match msg_type {
            [c] => c.is_ascii_digit() || (c.is_ascii_alphabetic() && !matches!(c, b'I' | b'O')),
            [b'A', c] => c.is_ascii_uppercase(),
            [b'B', c] => (b'A'..=b'H').contains(c),
            _ => false,
        }
    }
}

/// SessionRejectReason (373) values.
pub mod session_reject {
    pub const INVALID_TAG_NUMBER: u32 = 0;
    pub const REQUIRED_TAG_MISSING: u32 = 1;
    pub const TAG_NOT_DEFINED_FOR_MESSAGE: u32 = 2;
    pub const UNDEFINED_TAG: u32 = 3;
    pub const TAG_WITHOUT_VALUE: u32 = 4;
    pub const VALUE_INCORRECT: u32 = 5;
    pub const INCORRECT_DATA_FORMAT: u32 = 6;
    pub const COMP_ID_PROBLEM: u32 = 9;
    pub const SENDING_TIME_ACCURACY: u32 = 10;
    pub const INVALID_MSG_TYPE: u32 = 11;
    pub const TAG_APPEARS_MORE_THAN_ONCE: u32 = 13;
    pub const TAG_OUT_OF_ORDER: u32 = 14;
    pub const REPEATING_GROUP_OUT_OF_ORDER: u32 = 15;
    pub const INCORRECT_NUM_IN_GROUP_COUNT: u32 = 16;
    pub const FIELD_DELIMITER_IN_VALUE: u32 = 17;
    pub const OTHER: u32 = 99;
}

/// BusinessRejectReason (380) values.
pub mod business_reject {
    pub const OTHER: u32 = 0;
    pub const UNSUPPORTED_MESSAGE_TYPE: u32 = 3;
    pub const APPLICATION_NOT_AVAILABLE: u32 = 4;
    pub const NOT_AUTHORIZED: u32 = 6;
}
