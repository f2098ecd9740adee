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

/// The HTTP transaction a buffer belongs to, as it stands when the parser hands the buffer over
/// ([`crate::EventSink::http_buffer`]): an alert on the buffer carries it (EVE writes it beside the alert as its
/// `http` object, as Suricata writes an alert's transaction). Borrowed, so that a buffer no rule alerts on costs
/// nothing: [`HttpTx::event`] builds the event only for an alert.
#[derive(Clone, Copy)]
pub enum HttpTx<'a> {
    /// The transaction's event as it stands (the request once its head is parsed, then the response's fields).
    Event(&'a HttpEvent),
    /// A request whose line arrived before the rest of its head (libhtp hands the line over first): its method,
    /// target and protocol are all the transaction has.
    RequestLine {
        tx_id: u64,
        method: &'a [u8],
        uri: &'a [u8],
        protocol: &'a [u8],
    },
    /// A transaction kept in another form (an HTTP/2 stream): `build` makes its event.
    Built {
        tx_id: u64,
        build: &'a dyn Fn() -> HttpEvent,
    },
}

impl std::fmt::Debug for HttpTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpTx::Event(e) => f.debug_tuple("Event").field(e).finish(),
            HttpTx::RequestLine { tx_id, .. } => {
                f.debug_struct("RequestLine").field("tx_id", tx_id).finish()
            }
            HttpTx::Built { tx_id, .. } => f.debug_struct("Built").field("tx_id", tx_id).finish(),
        }
    }
}

impl HttpTx<'_> {
    /// The transaction's number in its flow (0-based).
    pub fn tx_id(&self) -> u64 {
        match self {
            HttpTx::Event(e) => e.tx_id,
            HttpTx::RequestLine { tx_id, .. } | HttpTx::Built { tx_id, .. } => *tx_id,
        }
    }

    /// The transaction as its event (built: for an alert that fired on it).
    pub fn event(&self) -> HttpEvent {
        match self {
            HttpTx::Event(e) => (*e).clone(),
            HttpTx::RequestLine {
                tx_id,
                method,
                uri,
                protocol,
            } => request_line_event(*tx_id, method, uri, protocol),
            HttpTx::Built { build, .. } => build(),
        }
    }

    /// Whether `e` is this transaction's event, field for field, without building it (an HTTP/2 stream's never
    /// compares equal: it is built to compare).
    pub fn is(&self, e: &HttpEvent) -> bool {
        match self {
            HttpTx::Event(t) => *t == e,
            HttpTx::RequestLine {
                tx_id,
                method,
                uri,
                protocol,
            } => {
                // Every field named, so that a field added to the event is compared here too.
                let HttpEvent {
                    tx_id: id,
                    hostname,
                    http_port,
                    url,
                    http_user_agent,
                    http_content_type,
                    http_refer,
                    xff,
                    http_method,
                    protocol: proto,
                    status,
                    redirect,
                    length,
                    request_body_length,
                    content_encoding,
                    basic_credentials,
                    http2,
                    request_headers,
                    response_headers,
                } = e;
                let text = |s: &Option<String>, b: &[u8]| match s {
                    Some(s) => s.as_bytes() == b,
                    None => b.is_empty(),
                };
                *id == *tx_id
                    && url.as_deref().map(str::as_bytes) == Some(*uri)
                    && http_method.as_deref().map(str::as_bytes) == Some(*method)
                    && text(proto, protocol)
                    && hostname.is_none()
                    && http_port.is_none()
                    && http_user_agent.is_none()
                    && http_content_type.is_none()
                    && http_refer.is_none()
                    && xff.is_none()
                    && status.is_none()
                    && redirect.is_none()
                    && *length == 0
                    && *request_body_length == 0
                    && content_encoding.is_none()
                    && !basic_credentials
                    && http2.is_none()
                    && request_headers.is_empty()
                    && response_headers.is_empty()
            }
            HttpTx::Built { .. } => false,
        }
    }
}

/// A request's transaction as its line makes it: method, target and protocol (none for HTTP/0.9), nothing else.
/// Text is read as UTF-8 with invalid bytes replaced, as the parser reads it.
pub(crate) fn request_line_event(
    tx_id: u64,
    method: &[u8],
    uri: &[u8],
    protocol: &[u8],
) -> HttpEvent {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    HttpEvent {
        tx_id,
        url: Some(text(uri)),
        http_method: Some(text(method)),
        protocol: (!protocol.is_empty()).then(|| text(protocol)),
        ..HttpEvent::default()
    }
}
