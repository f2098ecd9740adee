//! A streaming MIME decoder for mail messages (RFC 2045–2047, 2183, 2231), as Suricata's SMTP parser runs one:
//! the message arrives line by line (after the SMTP layer's dot-unstuffing), header lines are unfolded, multipart
//! bodies are split at their boundaries (nested ones included), `base64` and `quoted-printable` parts are decoded,
//! and each part that carries a file name (`Content-Disposition: ...; filename=`, or `Content-Type: ...; name=`)
//! is handed to a [`MimeSink`] as a file: opened, its decoded bytes in order, closed. A part without a file name
//! is no file, as in Suricata (its text is the mail's body, not an attachment).
//!
//! **Bounds.** Nothing grows with the input: a header value keeps at most [`MimeConfig::header_value_depth`] bytes
//! (Suricata's `header-value-depth`, 2000), a header name [`MAX_HEADER_NAME`], a boundary [`MAX_BOUNDARY`], a file
//! name [`MAX_FILENAME`], and at most [`MAX_NESTING`] boundaries are open at once. A line longer than the caller's
//! line buffer arrives in pieces ([`MimeParser::line`] with `eol == false`); decoding carries across pieces (a
//! base64 quantum, a quoted-printable escape). What a cap cut is raised as one of Suricata's `smtp.mime_*`
//! anomalies (application-layer events, [`AppLayerEvent`]'s `SmtpMime*`), never silently.
//!
//! **URLs.** As Suricata's decoder does with `extract-urls` on (its default), the URLs of the message are collected
//! ([`MimeSink::url`], for `email.url`): each `http://` in the decoded text of a text part (`text/plain`,
//! `text/html`, or no `Content-Type`) or of an attachment, up to the first blank, quote, `<`, `>`, `]` or line
//! break, without its scheme (Suricata's default scheme list and `log-url-scheme: no`). A URL split between two
//! encoded lines is found whole: the decoded text is searched a line at a time, at most [`MAX_URL_LINE`] bytes.
//!
//! **Streaming.** The decoder's state is per line, so a message split over any number of segments gives the same
//! calls as the message in one piece (the SMTP layer splits lines the same way whatever the segments).

use crate::{AppLayerEvent, AppLayerEvents};

/// Longest header name kept (RFC 2822 says 76 characters with the colon; Suricata's `MAX_HEADER_NAME`).
pub const MAX_HEADER_NAME: usize = 75;
/// Longest boundary kept (RFC 2046 allows 70 characters; Suricata raises `mime_long_boundary` past 254).
pub const MAX_BOUNDARY: usize = 254;
/// Longest file name kept (Suricata raises `mime_long_filename` past `NAME_MAX`, 255).
pub const MAX_FILENAME: usize = 255;
/// Most boundaries open at once (multiparts nested deeper are read as plain parts and counted as malformed).
pub const MAX_NESTING: usize = 16;
/// Longest line RFC 5322 allows (without CRLF): a longer one raises `mime_long_line`.
pub const MAX_LINE_LEN: usize = 998;
/// Longest encoded line RFC 2045 allows (without CRLF): a longer base64 line raises `mime_long_enc_line`.
pub const MAX_ENC_LINE_LEN: usize = 76;
/// Most decoded bytes searched for URLs at once: a longer line is searched in pieces of this size (Suricata's
/// `SMTP_MIME_MAX_DECODED_LINE_LENGTH`).
pub const MAX_URL_LINE: usize = 8192;
/// The URL schemes searched for (Suricata's default `extract-urls-schemes`), and the bytes that end a URL.
const URL_SCHEMES: &[&[u8]] = &[b"http://"];
const URL_END: &[u8] = b" \"'<>]\t\r\n";

/// The MIME decoder's settings (Suricata's `app-layer.protocols.smtp.mime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MimeConfig {
    /// Header value bytes kept (`header-value-depth`).
    pub header_value_depth: usize,
    /// Decode `base64` parts (`decode-base64`); otherwise they are handed over as sent.
    pub decode_base64: bool,
    /// Decode `quoted-printable` parts (`decode-quoted-printable`).
    pub decode_quoted_printable: bool,
    /// Collect the URLs of the text parts and attachments (`extract-urls`).
    pub extract_urls: bool,
}

impl Default for MimeConfig {
    fn default() -> Self {
        MimeConfig {
            header_value_depth: 2000,
            decode_base64: true,
            decode_quoted_printable: true,
            extract_urls: true,
        }
    }
}

/// Where the decoder puts what it found.
pub trait MimeSink {
    /// One unfolded header of the message (`top`) or of a part: name as sent, value without leading blanks, cut at
    /// the configured depth.
    fn header(&mut self, top: bool, name: &[u8], value: &[u8]) {
        let _ = (top, name, value);
    }
    /// A part with file name `name` begins.
    fn file_open(&mut self, name: &[u8]);
    /// Decoded bytes of the open file, in order.
    fn file_data(&mut self, data: &[u8]);
    /// The open file ended (its part ended, or the message did).
    fn file_close(&mut self);
    /// A URL of the message's text or attachments, without its scheme (see the module documentation).
    fn url(&mut self, url: &[u8]) {
        let _ = url;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    Plain,
    Base64,
    QuotedPrintable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Header lines of the message or of a part.
    Headers,
    /// A part's body.
    Body,
    /// A multipart's preamble or epilogue: skipped until a boundary.
    Skip,
}

/// What a part's headers said.
#[derive(Debug, Default)]
struct Part {
    encoding: Option<Encoding>,
    /// `Content-Type: multipart/...; boundary=...`.
    boundary: Option<Vec<u8>>,
    multipart: bool,
    /// `Content-Type: message/rfc822`: the body is an encapsulated message (its own headers, then its body).
    rfc822: bool,
    filename: Option<Vec<u8>>,
    /// The file name came from `Content-Disposition` (outranks `Content-Type`'s `name`).
    filename_from_disposition: bool,
    /// A `Content-Type` header was seen, and whether it named text (`text/plain`, `text/html`).
    typed: bool,
    text: bool,
}

/// The streaming decoder of one message. See the module documentation.
#[derive(Debug)]
pub struct MimeParser {
    cfg: MimeConfig,
    state: State,
    /// Open boundaries, outermost first.
    boundaries: Vec<Vec<u8>>,
    /// The header being unfolded (name, value), if any.
    hdr_name: Vec<u8>,
    hdr_value: Vec<u8>,
    in_header: bool,
    part: Part,
    /// Still in the message's own headers (not a part's).
    top: bool,
    encoding: Encoding,
    file_open: bool,
    /// A line break is owed to the file before the next body line (the break before a boundary belongs to the
    /// boundary, RFC 2046 5.1.1).
    owe_crlf: bool,
    /// The previous `line` call ended without an end of line: this call continues a line.
    continuing: bool,
    /// Bytes of the current line seen so far (for the long-line anomalies).
    line_len: usize,
    /// Base64 quantum carried between lines or pieces.
    b64: [u8; 4],
    b64_len: usize,
    /// Quoted-printable escape carried between pieces (`=` and up to one hex digit).
    qp: [u8; 2],
    qp_len: usize,
    /// Decoded bytes of one line, reused.
    scratch: Vec<u8>,
    anomalies: AppLayerEvents,
    /// Files opened so far.
    files: u32,
    /// The part's body is searched for URLs, and the decoded text not searched yet (at most [`MAX_URL_LINE`]).
    url_part: bool,
    url_text: Vec<u8>,
}

impl MimeParser {
    pub fn new(cfg: MimeConfig) -> Self {
        MimeParser {
            cfg,
            state: State::Headers,
            boundaries: Vec::new(),
            hdr_name: Vec::new(),
            hdr_value: Vec::new(),
            in_header: false,
            part: Part::default(),
            top: true,
            encoding: Encoding::Plain,
            file_open: false,
            owe_crlf: false,
            continuing: false,
            line_len: 0,
            b64: [0; 4],
            b64_len: 0,
            qp: [0; 2],
            qp_len: 0,
            scratch: Vec::new(),
            anomalies: AppLayerEvents::EMPTY,
            files: 0,
            url_part: false,
            url_text: Vec::new(),
        }
    }

    /// The anomalies raised so far.
    pub fn anomalies(&self) -> AppLayerEvents {
        self.anomalies
    }

    /// Files opened so far.
    pub fn files(&self) -> u32 {
        self.files
    }

    /// One line of the message without its line break (`eol`), or a piece of a longer line (`eol == false`: the
    /// line goes on in the next call). A line is cut into pieces only past a line buffer of some hundreds of bytes:
    /// a header name and a boundary are read from the line's first piece.
    pub fn line(&mut self, line: &[u8], eol: bool, sink: &mut dyn MimeSink) {
        let start = !self.continuing;
        self.continuing = !eol;
        if start {
            self.line_len = 0;
        }
        self.line_len = self.line_len.saturating_add(line.len());
        if self.line_len > MAX_LINE_LEN {
            self.anomalies.set(AppLayerEvent::SmtpMimeLongLine);
        }
        // A boundary line: only at the start of a line (a part may also end before its headers did).
        if start
            && line.starts_with(b"--")
            && !self.boundaries.is_empty()
            && let Some((depth, closing)) = self.boundary_match(line)
        {
            self.boundary(depth, closing, sink);
            return;
        }
        match self.state {
            State::Headers => self.header_line(line, start, sink),
            State::Body => self.body_line(line, start, eol, sink),
            State::Skip => {}
        }
    }

    /// The message ended: closes the open file and flushes what a decoder holds.
    pub fn end(&mut self, sink: &mut dyn MimeSink) {
        if self.state == State::Headers {
            self.flush_header(sink);
        }
        if self.state == State::Body {
            self.flush_decoder(sink);
            self.flush_urls(sink);
            // The message's last line keeps its line break.
            if self.owe_crlf && self.file_open {
                sink.file_data(b"\r\n");
            }
            self.owe_crlf = false;
        }
        if !self.boundaries.is_empty() {
            // The closing boundary never came.
            self.anomalies.set(AppLayerEvent::SmtpMimeMalformedMsg);
        }
        self.close_file(sink);
        self.state = State::Skip;
        self.boundaries.clear();
    }

    /// Which open boundary `line` (starting with `--`) is, innermost first, and whether it closes its multipart.
    fn boundary_match(&self, line: &[u8]) -> Option<(usize, bool)> {
        let rest = line.get(2..)?;
        for (depth, b) in self.boundaries.iter().enumerate().rev() {
            if let Some(after) = rest.strip_prefix(b.as_slice()) {
                let closing = after.starts_with(b"--");
                let tail = if closing { &after[2..] } else { after };
                // Only transport padding may follow (RFC 2046).
                if tail.iter().all(|c| matches!(c, b' ' | b'\t')) {
                    return Some((depth, closing));
                }
            }
        }
        None
    }

    fn boundary(&mut self, depth: usize, closing: bool, sink: &mut dyn MimeSink) {
        if self.state == State::Headers {
            self.flush_header(sink);
        }
        if self.state == State::Body {
            self.flush_decoder(sink);
            self.flush_urls(sink);
        }
        self.close_file(sink);
        self.owe_crlf = false;
        if closing {
            self.boundaries.truncate(depth);
            self.state = State::Skip;
        } else {
            self.boundaries.truncate(depth + 1);
            self.start_part();
        }
    }

    fn start_part(&mut self) {
        self.state = State::Headers;
        self.top = false;
        self.part = Part::default();
        self.in_header = false;
        self.hdr_name.clear();
        self.hdr_value.clear();
    }

    fn header_line(&mut self, line: &[u8], start: bool, sink: &mut dyn MimeSink) {
        if !start {
            // The rest of an over-long header line: its value is over the depth anyway.
            if self.in_header {
                self.push_value(line);
            }
            return;
        }
        if line.is_empty() {
            self.flush_header(sink);
            self.end_headers(sink);
            return;
        }
        if matches!(line.first(), Some(b' ' | b'\t')) && self.in_header {
            // A folded line: unfolding removes only the line break (RFC 5322 2.2.3).
            self.push_value(line);
            return;
        }
        self.flush_header(sink);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            // No header: a body that begins without the empty line.
            self.anomalies.set(AppLayerEvent::SmtpMimeMalformedMsg);
            self.end_headers(sink);
            if self.state == State::Body {
                self.body_line(line, true, true, sink);
            }
            return;
        };
        let name = <[u8]>::trim_ascii(&line[..colon]);
        if name.len() > MAX_HEADER_NAME {
            self.anomalies.set(AppLayerEvent::SmtpMimeLongHeaderName);
        }
        self.hdr_name.clear();
        self.hdr_name
            .extend_from_slice(&name[..name.len().min(MAX_HEADER_NAME)]);
        self.hdr_value.clear();
        self.in_header = true;
        let value = &line[colon + 1..];
        let skip = value
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t'))
            .count();
        self.push_value(&value[skip..]);
    }

    fn push_value(&mut self, data: &[u8]) {
        let room = self
            .cfg
            .header_value_depth
            .saturating_sub(self.hdr_value.len());
        if data.len() > room {
            self.anomalies.set(AppLayerEvent::SmtpMimeLongHeaderValue);
        }
        self.hdr_value
            .extend_from_slice(&data[..data.len().min(room)]);
    }

    /// The header being unfolded is complete: interpret it and hand it over.
    fn flush_header(&mut self, sink: &mut dyn MimeSink) {
        if !self.in_header {
            return;
        }
        self.in_header = false;
        let name = std::mem::take(&mut self.hdr_name);
        let value = std::mem::take(&mut self.hdr_value);
        if name.eq_ignore_ascii_case(b"content-type") {
            let (kind, _) = split_params(&value);
            self.part.typed = true;
            self.part.text = starts_ci(kind, b"text/plain") || starts_ci(kind, b"text/html");
            self.part.rfc822 = starts_ci(kind, b"message/rfc822");
            if starts_ci(kind, b"multipart/") {
                self.part.multipart = true;
                match param(&value, b"boundary") {
                    Some(b) if b.len() > MAX_BOUNDARY => {
                        self.anomalies.set(AppLayerEvent::SmtpMimeLongBoundary);
                    }
                    Some(b) if !b.is_empty() => self.part.boundary = Some(b),
                    _ => {}
                }
            }
            if !self.part.filename_from_disposition
                && let Some(n) = param(&value, b"name")
            {
                self.set_filename(n, false);
            }
        } else if name.eq_ignore_ascii_case(b"content-disposition") {
            if let Some(n) = param(&value, b"filename") {
                self.set_filename(n, true);
            }
        } else if name.eq_ignore_ascii_case(b"content-transfer-encoding") {
            let v = <[u8]>::trim_ascii(&value);
            self.part.encoding = Some(if v.eq_ignore_ascii_case(b"base64") {
                Encoding::Base64
            } else if v.eq_ignore_ascii_case(b"quoted-printable") {
                Encoding::QuotedPrintable
            } else {
                Encoding::Plain
            });
        }
        sink.header(self.top, &name, &value);
        // Keep the buffers' capacity for the next header.
        self.hdr_name = name;
        self.hdr_value = value;
        self.hdr_name.clear();
        self.hdr_value.clear();
    }

    fn set_filename(&mut self, mut n: Vec<u8>, from_disposition: bool) {
        if n.is_empty() {
            return;
        }
        if n.len() > MAX_FILENAME {
            self.anomalies.set(AppLayerEvent::SmtpMimeLongFilename);
            n.truncate(MAX_FILENAME);
        }
        self.part.filename = Some(n);
        self.part.filename_from_disposition = from_disposition;
    }

    /// The empty line after the headers: a multipart opens its boundary, any other part starts its body.
    fn end_headers(&mut self, sink: &mut dyn MimeSink) {
        let part = std::mem::take(&mut self.part);
        if part.multipart {
            match part.boundary {
                Some(b) if self.boundaries.len() < MAX_NESTING => {
                    self.boundaries.push(b);
                    self.state = State::Skip;
                    return;
                }
                _ => self.anomalies.set(AppLayerEvent::SmtpMimeMalformedMsg),
            }
        }
        if part.rfc822 {
            // An encapsulated message: its headers come next, read as a part's (its own encoding, file name and
            // parts; the outer part's transfer encoding and name do not carry over), as Suricata reads one. It
            // opens no boundary, so nesting costs nothing.
            self.state = State::Headers;
            self.top = false;
            return;
        }
        self.state = State::Body;
        self.encoding = match part.encoding.unwrap_or(Encoding::Plain) {
            Encoding::Base64 if self.cfg.decode_base64 => Encoding::Base64,
            Encoding::QuotedPrintable if self.cfg.decode_quoted_printable => {
                Encoding::QuotedPrintable
            }
            _ => Encoding::Plain,
        };
        self.b64_len = 0;
        self.qp_len = 0;
        self.owe_crlf = false;
        self.url_part =
            self.cfg.extract_urls && (part.filename.is_some() || part.text || !part.typed);
        self.url_text.clear();
        if let Some(name) = part.filename {
            self.files = self.files.saturating_add(1);
            self.file_open = true;
            sink.file_open(&name);
        }
    }

    fn body_line(&mut self, line: &[u8], start: bool, eol: bool, sink: &mut dyn MimeSink) {
        if self.encoding == Encoding::Base64 && self.line_len > MAX_ENC_LINE_LEN {
            self.anomalies.set(AppLayerEvent::SmtpMimeLongEncLine);
        }
        if !self.file_open && !self.url_part {
            return;
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        match self.encoding {
            Encoding::Plain => {
                if start && self.owe_crlf {
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(line);
                self.owe_crlf = eol;
            }
            Encoding::Base64 => self.base64(line, &mut out),
            Encoding::QuotedPrintable => {
                if start && self.owe_crlf {
                    out.extend_from_slice(b"\r\n");
                }
                self.owe_crlf = self.quoted_printable(line, eol, &mut out);
            }
        }
        if !out.is_empty() {
            if self.file_open {
                sink.file_data(&out);
            }
            self.search_urls(&out, sink);
        }
        self.scratch = out;
    }

    /// Decoded text of a URL-bearing part: searched a line at a time (the text up to its last line break; the rest
    /// waits for more, up to [`MAX_URL_LINE`] bytes), so that a URL that two encoded lines split is found whole.
    fn search_urls(&mut self, text: &[u8], sink: &mut dyn MimeSink) {
        if !self.url_part {
            return;
        }
        let mut rest = text;
        while !rest.is_empty() {
            let room = MAX_URL_LINE - self.url_text.len().min(MAX_URL_LINE);
            let take = rest.len().min(room);
            self.url_text.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.url_text.len() >= MAX_URL_LINE {
                self.flush_urls(sink);
            } else if let Some(end) = memchr::memrchr(b'\n', &self.url_text) {
                extract_urls(&self.url_text[..=end], sink);
                self.url_text.drain(..=end);
            }
        }
    }

    /// The part ended (or the search buffer is full): what text is left is searched.
    fn flush_urls(&mut self, sink: &mut dyn MimeSink) {
        extract_urls(&self.url_text, sink);
        self.url_text.clear();
    }

    fn base64(&mut self, line: &[u8], out: &mut Vec<u8>) {
        for &c in line {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' => {
                    // Padding ends the quantum.
                    self.flush_b64(out);
                    continue;
                }
                b' ' | b'\t' | b'\r' | b'\n' => continue,
                _ => {
                    self.anomalies.set(AppLayerEvent::SmtpMimeInvalidBase64);
                    continue;
                }
            };
            if let Some(slot) = self.b64.get_mut(self.b64_len) {
                *slot = v;
            }
            self.b64_len += 1;
            if self.b64_len == 4 {
                let [a, b, c, d] = self.b64;
                out.extend_from_slice(&[a << 2 | b >> 4, b << 4 | c >> 2, c << 6 | d]);
                self.b64_len = 0;
            }
        }
    }

    /// A partial base64 quantum: the bytes it fully encodes.
    fn flush_b64(&mut self, out: &mut Vec<u8>) {
        let [a, b, c, _] = self.b64;
        match self.b64_len {
            2 => out.push(a << 2 | b >> 4),
            3 => out.extend_from_slice(&[a << 2 | b >> 4, b << 4 | c >> 2]),
            1 => self.anomalies.set(AppLayerEvent::SmtpMimeInvalidBase64),
            _ => {}
        }
        self.b64_len = 0;
    }

    /// Decodes one quoted-printable line (or piece); returns whether a line break is owed after it (not after a
    /// soft line break, a `=` at the end).
    fn quoted_printable(&mut self, line: &[u8], eol: bool, out: &mut Vec<u8>) -> bool {
        // An escape split between pieces: prepend what was carried.
        let mut carried = [0u8; 2];
        let carried_len = self.qp_len;
        carried[..carried_len].copy_from_slice(&self.qp[..carried_len]);
        self.qp_len = 0;
        let mut i = 0;
        let byte_at = |i: usize| -> Option<u8> {
            if i < carried_len {
                carried.get(i).copied()
            } else {
                line.get(i - carried_len).copied()
            }
        };
        let total = carried_len + line.len();
        // Trailing blanks of a line are transport padding (RFC 2045 6.7 rule 3).
        let mut end = total;
        if eol {
            while end > 0 && matches!(byte_at(end - 1), Some(b' ' | b'\t')) {
                end -= 1;
            }
        }
        while i < end {
            let Some(c) = byte_at(i) else { break };
            if c != b'=' {
                out.push(c);
                i += 1;
                continue;
            }
            if i + 1 == end {
                if eol {
                    // Soft line break.
                    return false;
                }
                self.qp[0] = b'=';
                self.qp_len = 1;
                return false;
            }
            let h = byte_at(i + 1).and_then(hex);
            if i + 2 == end && !eol && h.is_some() {
                self.qp = [b'=', byte_at(i + 1).unwrap_or(b'0')];
                self.qp_len = 2;
                return false;
            }
            match (h, byte_at(i + 2).and_then(hex)) {
                (Some(hi), Some(lo)) => {
                    out.push(hi << 4 | lo);
                    i += 3;
                }
                _ => {
                    self.anomalies.set(AppLayerEvent::SmtpMimeInvalidQp);
                    out.push(b'=');
                    i += 1;
                }
            }
        }
        eol
    }

    /// At the end of a part: what a decoder still holds.
    fn flush_decoder(&mut self, sink: &mut dyn MimeSink) {
        if !self.file_open && !self.url_part {
            return;
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        if self.encoding == Encoding::Base64 {
            self.flush_b64(&mut out);
        }
        if self.qp_len > 0 {
            out.extend_from_slice(&self.qp[..self.qp_len]);
            self.qp_len = 0;
        }
        if !out.is_empty() {
            if self.file_open {
                sink.file_data(&out);
            }
            self.search_urls(&out, sink);
        }
        self.scratch = out;
    }

    fn close_file(&mut self, sink: &mut dyn MimeSink) {
        if self.file_open {
            self.file_open = false;
            sink.file_close();
        }
    }
}

/// Hands each URL of `text` to `sink`: every occurrence of a scheme (any case), up to the first byte that ends a
/// URL, without the scheme; an empty one (a scheme alone) too, as Suricata keeps it.
fn extract_urls(text: &[u8], sink: &mut dyn MimeSink) {
    for scheme in URL_SCHEMES {
        let mut rest = text;
        while let Some(at) = find_ci(rest, scheme) {
            let url = &rest[at + scheme.len()..];
            let len = url
                .iter()
                .position(|c| URL_END.contains(c))
                .unwrap_or(url.len());
            sink.url(&url[..len]);
            rest = &url[len..];
        }
    }
}

/// The first position of `needle` in `hay`, ASCII case ignored.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'A'..=b'F' => Some(c - b'A' + 10),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn starts_ci(s: &[u8], p: &[u8]) -> bool {
    s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p)
}

/// A header value's first token (`multipart/mixed`) and its parameters.
fn split_params(v: &[u8]) -> (&[u8], &[u8]) {
    match v.iter().position(|&c| c == b';') {
        Some(p) => (<[u8]>::trim_ascii(&v[..p]), &v[p + 1..]),
        None => (<[u8]>::trim_ascii(v), &[]),
    }
}

/// The value of parameter `name` of a header value (`; name="x"`, `; name=x`), unquoted. RFC 2231 forms are read
/// too: `name*=charset'lang'percent-encoded` and the continuations `name*0=`, `name*1*=`, ... joined in order.
fn param(v: &[u8], name: &[u8]) -> Option<Vec<u8>> {
    let (_, mut rest) = split_params(v);
    let mut plain: Option<Vec<u8>> = None;
    let mut pieces: Vec<(u32, Vec<u8>)> = Vec::new();
    while !rest.is_empty() {
        let rest_trim = trim_start(rest);
        let eq = rest_trim.iter().position(|&c| c == b'=' || c == b';');
        let Some(eq) = eq.filter(|&e| rest_trim.get(e) == Some(&b'=')) else {
            // A parameter without a value: skip to the next.
            rest = match rest_trim.iter().position(|&c| c == b';') {
                Some(p) => &rest_trim[p + 1..],
                None => &[],
            };
            continue;
        };
        let key = <[u8]>::trim_ascii(&rest_trim[..eq]);
        let after = trim_start(&rest_trim[eq + 1..]);
        let (value, next) = if after.first() == Some(&b'"') {
            let mut out = Vec::new();
            let mut i = 1;
            while let Some(&c) = after.get(i) {
                match c {
                    b'"' => break,
                    b'\\' => {
                        if let Some(&n) = after.get(i + 1) {
                            out.push(n);
                        }
                        i += 2;
                        continue;
                    }
                    _ => out.push(c),
                }
                i += 1;
            }
            let rest_after = after.get(i + 1..).unwrap_or_default();
            let next = match rest_after.iter().position(|&c| c == b';') {
                Some(p) => &rest_after[p + 1..],
                None => &[],
            };
            (out, next)
        } else {
            match after.iter().position(|&c| c == b';') {
                Some(p) => (<[u8]>::trim_ascii(&after[..p]).to_vec(), &after[p + 1..]),
                None => (<[u8]>::trim_ascii(after).to_vec(), &[][..]),
            }
        };
        rest = next;
        if key.eq_ignore_ascii_case(name) {
            plain.get_or_insert(value);
        } else if key.len() > name.len()
            && key[..name.len()].eq_ignore_ascii_case(name)
            && key[name.len()] == b'*'
        {
            // RFC 2231: `name*`, `name*N`, `name*N*`.
            let ext = &key[name.len() + 1..];
            let encoded = ext.is_empty() || ext.ends_with(b"*");
            let num = ext.strip_suffix(b"*").unwrap_or(ext);
            let idx = if num.is_empty() {
                0
            } else {
                match std::str::from_utf8(num).ok().and_then(|s| s.parse().ok()) {
                    Some(n) => n,
                    None => continue,
                }
            };
            let value = if encoded {
                // The first encoded piece starts with `charset'language'`.
                let v = if idx == 0 {
                    let mut parts = value.splitn(3, |&c| c == b'\'');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(_), Some(_), Some(v)) => v.to_vec(),
                        _ => value,
                    }
                } else {
                    value
                };
                percent_decode(&v)
            } else {
                value
            };
            if pieces.len() < 64 {
                pieces.push((idx, value));
            }
        }
    }
    if !pieces.is_empty() {
        pieces.sort_by_key(|p| p.0);
        let mut out = Vec::new();
        for (_, p) in pieces {
            if out.len() < MAX_FILENAME + 1 {
                out.extend_from_slice(&p);
            }
        }
        return Some(out);
    }
    plain
}

fn trim_start(s: &[u8]) -> &[u8] {
    let a = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    &s[a..]
}

fn percent_decode(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'%'
            && let (Some(h), Some(l)) = (
                v.get(i + 1).copied().and_then(hex),
                v.get(i + 2).copied().and_then(hex),
            )
        {
            out.push(h << 4 | l);
            i += 3;
            continue;
        }
        out.push(v[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug)]
    struct Files {
        files: Vec<(Vec<u8>, Vec<u8>, bool)>,
        top: Vec<(String, String)>,
        urls: Vec<String>,
    }

    impl MimeSink for Files {
        fn header(&mut self, top: bool, name: &[u8], value: &[u8]) {
            if top {
                self.top.push((
                    String::from_utf8_lossy(name).into(),
                    String::from_utf8_lossy(value).into(),
                ));
            }
        }
        fn file_open(&mut self, name: &[u8]) {
            self.files.push((name.to_vec(), Vec::new(), false));
        }
        fn file_data(&mut self, data: &[u8]) {
            let f = self.files.last_mut().unwrap();
            assert!(!f.2, "data after close");
            f.1.extend_from_slice(data);
        }
        fn file_close(&mut self) {
            self.files.last_mut().unwrap().2 = true;
        }
        fn url(&mut self, url: &[u8]) {
            self.urls.push(String::from_utf8_lossy(url).into());
        }
    }

    /// Feeds `msg` line by line, every line cut into pieces of at most `piece` bytes.
    fn decode(msg: &[u8], piece: usize) -> (Files, AppLayerEvents) {
        let mut p = MimeParser::new(MimeConfig::default());
        let mut f = Files::default();
        let msg = msg.strip_suffix(b"\n").unwrap_or(msg);
        for line in msg.split(|&c| c == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let mut chunks = line.chunks(piece.max(1)).peekable();
            if line.is_empty() {
                p.line(b"", true, &mut f);
            }
            while let Some(c) = chunks.next() {
                p.line(c, chunks.peek().is_none(), &mut f);
            }
        }
        p.end(&mut f);
        (f, p.anomalies())
    }

    const MSG: &[u8] = b"From: a@example.com\r\n\
To: b@example.com,\r\n c@example.com\r\n\
Subject: test\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"outer\"\r\n\
\r\n\
preamble\r\n\
--outer\r\n\
Content-Type: text/plain\r\n\
\r\n\
body text, no file\r\n\
--outer\r\n\
Content-Type: multipart/alternative;\r\n\
\tboundary=inner\r\n\
\r\n\
--inner\r\n\
Content-Type: text/plain; name=\"a.txt\"\r\n\
Content-Transfer-Encoding: quoted-printable\r\n\
\r\n\
caf=C3=A9 soft=\r\n\
break\r\n\
--inner--\r\n\
--outer\r\n\
Content-Type: application/octet-stream; name=ignored.bin\r\n\
Content-Disposition: attachment;\r\n filename=\"doc.bin\"\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
aGVsbG8g\r\n\
d29ybGQ=\r\n\
--outer--\r\n\
epilogue\r\n";

    #[test]
    fn multipart_nested_encodings_and_names() {
        let (f, anomalies) = decode(MSG, usize::MAX);
        assert!(anomalies.is_empty(), "{anomalies:?}");
        let files: Vec<(&[u8], &[u8], bool)> = f
            .files
            .iter()
            .map(|(n, d, c)| (&n[..], &d[..], *c))
            .collect();
        assert_eq!(
            files,
            vec![
                (&b"a.txt"[..], "café softbreak".as_bytes(), true),
                (&b"doc.bin"[..], &b"hello world"[..], true),
            ]
        );
        let to = f.top.iter().find(|(n, _)| n == "To").unwrap();
        assert_eq!(to.1, "b@example.com, c@example.com");
        assert!(f.top.iter().any(|(n, v)| n == "Subject" && v == "test"));
    }

    #[test]
    fn pieces_give_the_same_files() {
        // Long lines, as a line buffer hands them over in pieces: base64 and quoted-printable.
        let mut msg = MSG.to_vec();
        msg.extend_from_slice(b"--outer\r\nContent-Disposition: attachment; filename=long\r\nContent-Transfer-Encoding: base64\r\n\r\n");
        for i in 0..3000u32 {
            msg.push(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
                    [(i * 7 % 64) as usize],
            );
        }
        msg.extend_from_slice(b"\r\n--outer\r\nContent-Disposition: attachment; filename=qp\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n");
        for _ in 0..700 {
            msg.extend_from_slice(b"a=3Db");
        }
        msg.extend_from_slice(b"=\r\nend\r\n--outer--\r\n");
        // The closing boundary of MSG came first: these parts are its epilogue, so reopen it.
        let msg = String::from_utf8(msg)
            .unwrap()
            .replacen("--outer--\r\nepilogue\r\n", "", 1);
        let (whole, _) = decode(msg.as_bytes(), usize::MAX);
        assert_eq!(whole.files.len(), 4);
        assert_eq!(whole.files[2].1.len(), 2250);
        assert_eq!(
            whole.files[3].1,
            [b"a=b".repeat(700), b"end".to_vec()].concat()
        );
        for piece in [300, 301, 512, 1000] {
            let (f, _) = decode(msg.as_bytes(), piece);
            assert_eq!(f.files, whole.files, "pieces of {piece}");
        }
    }

    /// An encapsulated `message/rfc822` (suricata-verify's smtp-mime-encap-8649-combined, and the same inside a
    /// multipart): its own headers are read, so its attachment is the file, decoded by its own transfer encoding
    /// (plain here, whatever the outer part said); the outer part's name makes no file, and the inner headers are
    /// not the message's.
    #[test]
    fn encapsulated_messages_are_parsed() {
        let inner = b"From: attacker@evil.com\r\nSubject: Inner\r\nContent-Type: application/octet-stream\r\n\
Content-Disposition: attachment; filename=\"malware.exe\"\r\n\r\nEICAR-MIME-BYPASS-TEST-PAYLOAD\r\n";
        let mut msg = b"From: a@x\r\nSubject: Combined\r\nContent-Type: message/rfc822\r\n\
Content-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename=\"innocent.txt\"\r\n\r\n"
            .to_vec();
        msg.extend_from_slice(inner);
        let (f, _) = decode(&msg, usize::MAX);
        assert_eq!(
            f.files,
            [(
                b"malware.exe".to_vec(),
                b"EICAR-MIME-BYPASS-TEST-PAYLOAD\r\n".to_vec(),
                true
            )]
        );
        let subjects: Vec<_> = f.top.iter().filter(|h| h.0 == "Subject").collect();
        assert_eq!(subjects.len(), 1);
        let mut msg = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
Content-Type: message/rfc822\r\n\r\n"
            .to_vec();
        msg.extend_from_slice(inner);
        msg.extend_from_slice(b"--b--\r\n");
        let (f, _) = decode(&msg, 30);
        assert_eq!(f.files.len(), 1);
        assert_eq!(f.files[0].1, b"EICAR-MIME-BYPASS-TEST-PAYLOAD");
    }

    #[test]
    fn plain_attachment_keeps_inner_line_breaks() {
        let msg = b"Content-Disposition: attachment; filename=x.txt\r\n\r\nline1\r\nline2\r\n";
        let (f, _) = decode(msg, usize::MAX);
        assert_eq!(f.files[0].1, b"line1\r\nline2\r\n");
        let msg = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Disposition: attachment; filename=x.txt\r\n\r\nline1\r\nline2\r\n--b--\r\n";
        let (f, _) = decode(msg, usize::MAX);
        assert_eq!(
            f.files[0].1, b"line1\r\nline2",
            "the last break belongs to the boundary"
        );
    }

    #[test]
    fn rfc2231_file_names() {
        assert_eq!(
            param(
                b"attachment; filename*0*=utf-8''a%20b; filename*1=\".txt\"",
                b"filename"
            )
            .unwrap(),
            b"a b.txt"
        );
        assert_eq!(
            param(b"attachment; filename*=UTF-8''%E2%82%AC.pdf", b"filename").unwrap(),
            "€.pdf".as_bytes()
        );
        assert_eq!(
            param(b"text/plain; charset=x; name=\"q\\\"x\"", b"name").unwrap(),
            b"q\"x"
        );
        assert_eq!(param(b"text/plain; charset", b"name"), None);
    }

    #[test]
    fn anomalies_are_raised_and_memory_stays_bounded() {
        let mut msg = Vec::new();
        msg.extend_from_slice(b"Subject: ");
        msg.extend(std::iter::repeat_n(b'x', 5000));
        msg.extend_from_slice(b"\r\n");
        msg.extend(std::iter::repeat_n(b'N', 100));
        msg.extend_from_slice(b": v\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n");
        msg.extend_from_slice(
            b"Content-Disposition: attachment; filename=f\r\nContent-Transfer-Encoding: base64\r\n\r\n",
        );
        msg.extend_from_slice(b"aGVs!bG8=\r\n");
        msg.extend(std::iter::repeat_n(b'A', 100));
        msg.extend_from_slice(b"\r\n");
        let (f, a) = decode(&msg, 1000);
        for want in [
            AppLayerEvent::SmtpMimeLongLine,
            AppLayerEvent::SmtpMimeLongHeaderValue,
            AppLayerEvent::SmtpMimeLongHeaderName,
            AppLayerEvent::SmtpMimeInvalidBase64,
            AppLayerEvent::SmtpMimeLongEncLine,
            AppLayerEvent::SmtpMimeMalformedMsg,
        ] {
            assert!(a.contains(want), "{want:?} not raised: {a:?}");
        }
        let subject = f.top.iter().find(|(n, _)| n == "Subject").unwrap();
        assert_eq!(subject.1.len(), 2000);
        assert_eq!(&f.files[0].1[..5], b"hello");
        assert!(f.files[0].2, "closed at the end of the message");
        // Nesting past the cap is read as a plain part.
        let mut deep = Vec::new();
        for i in 0..40 {
            deep.extend_from_slice(
                format!("Content-Type: multipart/mixed; boundary=b{i}\r\n\r\n--b{i}\r\n")
                    .as_bytes(),
            );
        }
        deep.extend_from_slice(b"Content-Disposition: attachment; filename=z\r\n\r\nzz\r\n");
        let (f, a) = decode(&deep, usize::MAX);
        assert!(a.contains(AppLayerEvent::SmtpMimeMalformedMsg));
        assert!(
            f.files.is_empty(),
            "the attachment sits past the nesting cap"
        );
    }

    /// `email.url`'s URLs, as Suricata collects them: from text parts (a part without `Content-Type` is text) and
    /// attachments, decoded (a URL split between two base64 lines is found whole), without the scheme, up to the
    /// first blank, quote, angle bracket, `]` or line break; not from a part of another type; in the order found.
    #[test]
    fn urls_come_from_decoded_text_parts_and_attachments() {
        // `<div>see <a href="HTTP://b64.example/x?y=1">here</a></div>` and CRLF, cut inside the URL.
        let html =
            "PGRpdj5zZWUgPGEgaHJlZj0iSFRUUDovL2I2NC5leGFtcGxlL3g/eT0xIj5oZXJlPC9hPjwvZGl2Pg0K";
        let (l1, l2) = html.split_at(32);
        let msg = format!(
            "Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n\
--b\r\n\r\nplain http://first.example/a/ and http://second.example]\r\n\
--b\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: base64\r\n\r\n{l1}\r\n{l2}\r\n\
--b\r\nContent-Type: image/png\r\n\r\nhttp://not-text.example/\r\n\
--b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n\
http://qp.exa=\r\nmple/=41\r\n\
--b\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\n\r\nfile 'http://file.example'\r\n\
--b--\r\n"
        );
        for piece in [usize::MAX, 30] {
            let (f, _) = decode(msg.as_bytes(), piece);
            assert_eq!(
                f.urls,
                [
                    "first.example/a/",
                    "second.example",
                    "b64.example/x?y=1",
                    "qp.example/A",
                    "file.example"
                ],
                "pieces of {piece}"
            );
        }
        // Off, nothing is collected.
        let mut p = MimeParser::new(MimeConfig {
            extract_urls: false,
            ..MimeConfig::default()
        });
        let mut f = Files::default();
        for line in [&b"Subject: x"[..], b"", b"http://a.example/"] {
            p.line(line, true, &mut f);
        }
        p.end(&mut f);
        assert!(f.urls.is_empty());
    }
}
