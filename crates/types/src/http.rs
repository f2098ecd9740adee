//! The HTTP buffers the HTTP parser hands to detection.

/// One of the HTTP buffers content rules match on (Suricata's sticky buffers), handed over once per transaction when
/// the part of the transaction that holds it is complete. Rules derive normalised forms (`http.uri`, `http.host`,
/// `http.cookie`, ...) from these raw pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HttpBuffer {
    /// `http.request_line`: the request line without its line end (`GET /a HTTP/1.1`); `http.protocol` of the
    /// request derives from it.
    RequestLine,
    /// `http.start` of the request: the request line, the header lines and the empty line, as sent.
    RequestHead,
    /// `http.method`: request method, e.g. `GET`.
    Method,
    /// The request target as sent (not normalised); `http.uri` (normalised) and `http.uri.raw` derive from it.
    Uri,
    /// The Host header value as sent; `http.host` (lowercased, no port) derives from it.
    Host,
    /// `http.user_agent`.
    UserAgent,
    /// The request's header lines, `Name: value\r\n` each, without the request line; `http.header` (to server) and
    /// `http.cookie` derive from it.
    RequestHeaders,
    /// `http.request_body`: the (de-chunked) request body, up to the parser's cap.
    RequestBody,
    /// `http.response_line`: the status line without its line end (`HTTP/1.1 200 OK`); the response's
    /// `http.protocol` and `http.stat_msg` derive from it.
    ResponseLine,
    /// `http.start` of the response: the status line, the header lines and the empty line, as sent.
    ResponseHead,
    /// `http.stat_code`: response status code digits.
    StatusCode,
    /// `http.header` (to client): the response's header lines.
    ResponseHeaders,
    /// `http.response_body` / `file.data`: the de-chunked, decompressed response body, up to the parser's cap.
    ResponseBody,
}

impl HttpBuffer {
    /// Whether the buffer belongs to the request (travels to the server).
    pub fn is_request(self) -> bool {
        matches!(
            self,
            HttpBuffer::RequestLine
                | HttpBuffer::RequestHead
                | HttpBuffer::Method
                | HttpBuffer::Uri
                | HttpBuffer::Host
                | HttpBuffer::UserAgent
                | HttpBuffer::RequestHeaders
                | HttpBuffer::RequestBody
        )
    }
}
