//! The EVE `http` event: what one transaction leaves in the log.

/// The EVE `http` event: one per transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HttpEvent {
    /// Transaction number within the flow (EVE puts it at the top level as `tx_id`).
    #[serde(skip)]
    pub tx_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_user_agent: Option<String>,
    /// The response's Content-Type (Suricata logs the response's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_refer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xff: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_method: Option<String>,
    /// Request protocol, e.g. `HTTP/1.1` (the response's when there was no request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The response's Location header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect: Option<String>,
    /// Response body bytes as transferred (de-chunked, still compressed).
    pub length: u64,
    /// Request body bytes (de-chunked). Not in Suricata's schema: not written.
    #[serde(skip)]
    pub request_body_length: u64,
    /// Response `Content-Encoding` when it was decoded (`gzip`, `deflate`). Not in Suricata's schema: not written.
    #[serde(skip)]
    pub content_encoding: Option<String>,
    /// The request carried a user name and password in the clear (`Authorization: Basic`). Not in Suricata's
    /// schema: not written.
    #[serde(skip)]
    pub basic_credentials: bool,
    /// HTTP/2 transactions: the stream and its frames' fields (EVE `http.http2`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<Box<Http2Info>>,
    /// HTTP/2 transactions: the request's header fields as decoded (EVE `http.request_headers`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub request_headers: Vec<HeaderField>,
    /// HTTP/2 transactions: the response's header fields (EVE `http.response_headers`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub response_headers: Vec<HeaderField>,
}

/// One header field of EVE's `request_headers`/`response_headers` (a dynamic table size update has only
/// `table_size_update`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HeaderField {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_size_update: Option<u64>,
}

/// EVE `http.http2`: the stream of an HTTP/2 transaction and what its frames carried per direction.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Http2Info {
    pub stream_id: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<Http2Side>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<Http2Side>,
}

/// One direction of EVE `http.http2` (`request` or `response`); written only when it has a field.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Http2Side {
    /// The RST_STREAM error code's name (`CANCEL`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The stream's priority weight (requests only, as EVE has it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<Http2Setting>,
}

impl Http2Side {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.error_code.is_none() && self.priority.is_none() && self.settings.is_empty()
    }
}

/// One SETTINGS entry of EVE `http.http2.*.settings`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Http2Setting {
    pub settings_id: String,
    pub settings_value: u32,
}
