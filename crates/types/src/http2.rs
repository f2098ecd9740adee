//! HTTP/2's names for frame types, error codes and settings (RFC 9113 sections 6, 7 and 6.5.2), as Suricata's
//! `http2.*` keywords and EVE spell them: shared by the HTTP/2 parser and the rules.

/// Frame type names, indexed by type (Suricata's spelling for `http2.frametype`).
pub const FRAME_TYPES: [&str; 10] = [
    "DATA",
    "HEADERS",
    "PRIORITY",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "CONTINUATION",
];

/// Error codes (RFC 9113 section 7), indexed by code (Suricata's spelling for `http2.errorcode`).
pub const ERROR_CODES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// Settings identifiers (RFC 9113 section 6.5.2 and RFC 8441), indexed by identifier; index 0 is unassigned.
pub const SETTINGS_NAMES: [&str; 9] = [
    "",
    "SETTINGS_HEADER_TABLE_SIZE",
    "SETTINGS_ENABLE_PUSH",
    "SETTINGS_MAX_CONCURRENT_STREAMS",
    "SETTINGS_INITIAL_WINDOW_SIZE",
    "SETTINGS_MAX_FRAME_SIZE",
    "SETTINGS_MAX_HEADER_LIST_SIZE",
    "",
    "SETTINGS_ENABLE_CONNECT_PROTOCOL",
];

/// `SETTINGS_HEADER_TABLE_SIZE`.
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 1;

/// A frame type's number from its name (case-insensitive), or a decimal number.
pub fn frame_type_from_name(name: &str) -> Option<u8> {
    FRAME_TYPES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u8)
        .or_else(|| name.parse().ok())
}

/// An error code's number from its name (case-insensitive), or a decimal number.
pub fn error_code_from_name(name: &str) -> Option<u32> {
    ERROR_CODES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
        .map(|i| i as u32)
        .or_else(|| name.parse().ok())
}

/// A setting's identifier from its name (case-insensitive), or a decimal number.
pub fn setting_from_name(name: &str) -> Option<u16> {
    SETTINGS_NAMES
        .iter()
        .position(|n| !n.is_empty() && n.eq_ignore_ascii_case(name))
        .map(|i| i as u16)
        .or_else(|| name.parse().ok())
}
