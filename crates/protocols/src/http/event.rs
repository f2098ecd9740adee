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
}
