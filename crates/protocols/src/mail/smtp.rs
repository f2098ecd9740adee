//! The SMTP parser (RFC 5321): the client's commands, the message after `DATA` (dot-unstuffed, up to the lone
//! `.`) or in `BDAT` chunks (RFC 3030), decoded by the MIME decoder ([`super::mime`]); attachments go to the rules'
//! `file.data` ([`EventSink::file`]) and to EVE `fileinfo`, each transaction to EVE `smtp` with its `email` fields,
//! as Suricata's SMTP parser does.
//!
//! **Transactions.** One per mail: it starts with `MAIL FROM` (or the first `RCPT TO`, `DATA`, `BDAT`), ends with
//! the end of its message (or `RSET`, or the flow's end) and is numbered per flow from 0. `HELO`/`EHLO` belong to
//! the session, as in Suricata.
//!
//! **The server's side** is read only for what changes the client's: a `DATA` the server refused (not `354`)
//! before any message line came leaves data mode (Suricata's `data_command_rejected`); a `220` to `STARTTLS` ends
//! the parse (the rest is TLS).
//!
//! **Bounds.** A client line is buffered up to [`MAX_LINE`] bytes; a longer message line goes to the MIME decoder
//! in pieces, a longer command is cut (counted). A file keeps its first [`SmtpLimits::file_cap`] bytes for the
//! rules (Suricata's `content-limit`), the rest is counted in its size; at most [`MAX_RCPT`] recipients and
//! [`MAX_LIST`] entries of each `email` list are kept.

use super::mime::{MimeConfig, MimeParser, MimeSink};
use crate::file::{FileEnd, FileOptions, FileRecord};
use crate::scan::starts_ci;
use crate::{AppEvent, AppLayerEvents, AppProto, Direction, EventSink, Parser, ParserStats};

/// Longest client line buffered before it is handed on in pieces (a message line) or cut (a command).
pub const MAX_LINE: usize = 4096;
/// Recipients kept per transaction.
pub const MAX_RCPT: usize = 64;
/// Entries kept per `email` list (`to`, `cc`, `received`, `attachment`, `url`).
pub const MAX_LIST: usize = 64;
/// Longest envelope or header field kept in an event.
const MAX_FIELD: usize = 1024;

/// The SMTP parser's caps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmtpLimits {
    /// Bytes of each file kept for the rules (Suricata's `smtp.inspected-tracker.content-limit`, 100000).
    pub file_cap: usize,
    /// Hashes and magic of each file.
    pub files: FileOptions,
    pub mime: MimeConfig,
}

impl Default for SmtpLimits {
    fn default() -> Self {
        SmtpLimits {
            file_cap: 100_000,
            files: FileOptions::default(),
            mime: MimeConfig::default(),
        }
    }
}

/// Suricata's EVE `smtp` record: the envelope, and the message's `email` fields beside it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SmtpEvent {
    #[serde(skip)]
    pub tx_id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub helo: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mail_from: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rcpt_to: Vec<String>,
    /// The message's fields (`email`), when a message was sent.
    #[serde(skip)]
    pub email: Option<EmailInfo>,
}

/// Suricata's EVE `email` object: the message's main headers and its attachments' names.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EmailInfo {
    /// `PARSE_DONE` when the message ended, `PARSE_ERROR` when the flow ended inside it.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cc: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x_mailer: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub received: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachment: Vec<String>,
    /// The URLs of the message's text and attachments, without their scheme (`email.url`; see `mime`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub url: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Command,
    /// After `DATA`: message lines up to the lone `.`.
    Data,
    /// In a `BDAT` chunk: `left` more bytes of message, the last chunk when `last`.
    Bdat {
        left: u64,
        last: bool,
    },
    /// After `STARTTLS` was accepted: nothing more is readable.
    Tls,
}

/// One mail transaction.
#[derive(Debug, Default)]
struct Tx {
    started: bool,
    mail_from: Option<String>,
    rcpt_to: Vec<String>,
    mime: Option<Box<MimeParser>>,
    email: Option<EmailInfo>,
    file: Option<FileRecord>,
}

/// The SMTP parser of one flow. See the module documentation.
pub struct SmtpParser {
    limits: SmtpLimits,
    mode: Mode,
    /// The client's partial line.
    line: Vec<u8>,
    /// The partial message line of a `BDAT` chunk.
    bdat_line: Vec<u8>,
    /// The current client line was already handed on in part (it is longer than [`MAX_LINE`]).
    continuing: bool,
    /// The server's current line: its first bytes (the reply code) and its length.
    srv_head: [u8; 4],
    srv_len: usize,
    /// A `DATA` waits for its reply; message lines seen since.
    data_reply_pending: bool,
    /// Replies the server owes (commands and ended messages not yet answered), and of them, those due before the
    /// reply to a pending `DATA` (a pipelining client sends `MAIL`, `RCPT` and `DATA` at once: RFC 2920).
    outstanding: u32,
    replies_before_data: u32,
    /// The server's greeting came (it answers no command).
    greeted: bool,
    data_lines: u64,
    starttls_pending: bool,
    helo: Option<String>,
    tx: Tx,
    tx_id: u64,
    anomalies: AppLayerEvents,
    stats: ParserStats,
}

impl SmtpParser {
    pub fn new(limits: SmtpLimits) -> Self {
        SmtpParser {
            limits,
            mode: Mode::Command,
            line: Vec::new(),
            bdat_line: Vec::new(),
            continuing: false,
            srv_head: [0; 4],
            srv_len: 0,
            data_reply_pending: false,
            outstanding: 0,
            replies_before_data: 0,
            greeted: false,
            data_lines: 0,
            starttls_pending: false,
            helo: None,
            tx: Tx::default(),
            tx_id: 0,
            anomalies: AppLayerEvents::EMPTY,
            stats: ParserStats::default(),
        }
    }

    /// The MIME anomalies raised on the flow so far.
    pub fn anomalies(&self) -> AppLayerEvents {
        self.anomalies
    }

    fn client(&mut self, mut data: &[u8], out: &mut dyn EventSink) {
        while !data.is_empty() {
            if self.mode == Mode::Tls {
                return;
            }
            if let Mode::Bdat { left, last } = self.mode {
                let take = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
                let (chunk, rest) = data.split_at(take);
                self.message_bytes(chunk, out);
                data = rest;
                let left = left - take as u64;
                self.mode = Mode::Bdat { left, last };
                if left == 0 {
                    self.mode = Mode::Command;
                    if last {
                        self.end_bdat(out);
                    }
                }
                continue;
            }
            match data.iter().position(|&b| b == b'\n') {
                Some(p) => {
                    self.push_line_bytes(&data[..p], out);
                    data = &data[p + 1..];
                    let mut line = std::mem::take(&mut self.line);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    self.client_piece(&line, true, out);
                    line.clear();
                    self.line = line;
                }
                None => {
                    self.push_line_bytes(data, out);
                    return;
                }
            }
        }
    }

    /// Bytes of the current client line (no line break among them). A message line longer than [`MAX_LINE`] is
    /// handed on in pieces of [`MAX_LINE`] bytes, each as soon as the byte after it arrives (a trailing CR waits
    /// for the next piece: it may end the line), so the pieces do not depend on how the line was segmented; a
    /// longer command is cut.
    fn push_line_bytes(&mut self, mut seg: &[u8], out: &mut dyn EventSink) {
        loop {
            let room = MAX_LINE.saturating_sub(self.line.len());
            if seg.len() <= room {
                self.line.extend_from_slice(seg);
                return;
            }
            self.line.extend_from_slice(&seg[..room]);
            seg = &seg[room..];
            if self.mode != Mode::Data {
                self.stats.bytes_cut += seg.len() as u64;
                return;
            }
            let mut line = std::mem::take(&mut self.line);
            let keep_cr = line.last() == Some(&b'\r');
            if keep_cr {
                line.pop();
            }
            self.client_piece(&line, false, out);
            line.clear();
            if keep_cr {
                line.push(b'\r');
            }
            self.line = line;
        }
    }

    /// A client line (`eol`) or a piece of a longer one.
    fn client_piece(&mut self, line: &[u8], eol: bool, out: &mut dyn EventSink) {
        let start = !self.continuing;
        self.continuing = !eol;
        match self.mode {
            Mode::Data => {
                if start && eol && line == b"." {
                    self.data_reply_pending = false;
                    // The message's own reply.
                    self.outstanding = self.outstanding.saturating_add(1);
                    self.mode = Mode::Command;
                    self.end_message(true, out);
                    return;
                }
                self.data_lines += 1;
                let line = if start {
                    line.strip_prefix(b".").unwrap_or(line)
                } else {
                    line
                };
                self.mime_line(line, eol, out);
            }
            Mode::Command if start => self.command(line, out),
            _ => {}
        }
    }

    /// Raw message bytes of a `BDAT` chunk: split into lines for the MIME decoder (no dot-unstuffing); a line may
    /// go on in the next chunk.
    fn message_bytes(&mut self, mut data: &[u8], out: &mut dyn EventSink) {
        while !data.is_empty() {
            let mut line = std::mem::take(&mut self.bdat_line);
            let room = MAX_LINE.saturating_sub(line.len());
            match data.iter().position(|&b| b == b'\n') {
                Some(p) if p <= room => {
                    line.extend_from_slice(&data[..p]);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    self.mime_line(&line, true, out);
                    line.clear();
                    data = &data[p + 1..];
                }
                _ if data.len() > room => {
                    line.extend_from_slice(&data[..room]);
                    self.mime_line(&line, false, out);
                    line.clear();
                    data = &data[room..];
                }
                _ => {
                    line.extend_from_slice(data);
                    data = &[];
                }
            }
            self.bdat_line = line;
        }
    }

    /// The last `BDAT` chunk ended: its partial last line, then the message.
    fn end_bdat(&mut self, out: &mut dyn EventSink) {
        let line = std::mem::take(&mut self.bdat_line);
        if !line.is_empty() {
            self.mime_line(&line, true, out);
        }
        self.end_message(true, out);
    }

    fn mime_line(&mut self, line: &[u8], eol: bool, out: &mut dyn EventSink) {
        self.tx.started = true;
        let limits = self.limits;
        let mime = self
            .tx
            .mime
            .get_or_insert_with(|| Box::new(MimeParser::new(limits.mime)));
        let email = self.tx.email.get_or_insert_with(EmailInfo::default);
        let mut sink = TxSink {
            email,
            file: &mut self.tx.file,
            out,
            tx_id: self.tx_id,
            cap: limits.file_cap,
            files: limits.files,
            stats: &mut self.stats,
            complete: true,
        };
        mime.line(line, eol, &mut sink);
    }

    fn command(&mut self, line: &[u8], out: &mut dyn EventSink) {
        let arg =
            |n: usize| -> String { field(<[u8]>::trim_ascii(line.get(n..).unwrap_or_default())) };
        let before = self.outstanding;
        self.outstanding = self.outstanding.saturating_add(1);
        if starts_ci(line, b"HELO") || starts_ci(line, b"EHLO") {
            self.helo = Some(arg(4));
        } else if starts_ci(line, b"MAIL FROM:") {
            if self.tx.started {
                self.end_tx(out);
            }
            self.tx.started = true;
            self.tx.mail_from = Some(address(line.get(10..).unwrap_or_default()));
        } else if starts_ci(line, b"RCPT TO:") {
            self.tx.started = true;
            if self.tx.rcpt_to.len() < MAX_RCPT {
                self.tx
                    .rcpt_to
                    .push(address(line.get(8..).unwrap_or_default()));
            }
        } else if line.eq_ignore_ascii_case(b"DATA") {
            self.tx.started = true;
            self.mode = Mode::Data;
            self.data_reply_pending = true;
            self.replies_before_data = before;
            self.data_lines = 0;
        } else if starts_ci(line, b"BDAT ") {
            let mut words = line[5..].split(|&b| b == b' ').filter(|w| !w.is_empty());
            let size = words
                .next()
                .and_then(|w| std::str::from_utf8(w).ok())
                .and_then(|w| w.parse::<u64>().ok());
            let last = words
                .next()
                .is_some_and(|w| w.eq_ignore_ascii_case(b"LAST"));
            match size {
                Some(left) => {
                    self.tx.started = true;
                    if left > 0 {
                        self.mode = Mode::Bdat { left, last };
                    } else if last {
                        self.end_bdat(out);
                    }
                }
                None => self.stats.malformed += 1,
            }
        } else if line.eq_ignore_ascii_case(b"RSET") {
            if self.tx.started {
                self.end_tx(out);
            }
        } else if line.eq_ignore_ascii_case(b"STARTTLS") {
            self.starttls_pending = true;
        }
    }

    /// The server's bytes: reply lines, of which only the code and the end of a reply matter.
    fn server(&mut self, data: &[u8]) {
        for &b in data {
            if b == b'\n' {
                let head_buf = self.srv_head;
                let head = &head_buf[..self.srv_len.min(4)];
                // `250-...` continues a reply; `250 ...` (or a bare code) ends it.
                let last = head.len() < 4 || head[3] != b'-';
                if last && head.len() >= 3 && head[..3].iter().all(u8::is_ascii_digit) {
                    self.reply(&head[..3]);
                }
                self.srv_len = 0;
            } else {
                if let Some(slot) = self.srv_head.get_mut(self.srv_len) {
                    *slot = b;
                }
                self.srv_len = self.srv_len.saturating_add(1);
            }
        }
    }

    fn reply(&mut self, code: &[u8]) {
        if !self.greeted {
            self.greeted = true;
            // The greeting comes before any command (a reply while commands wait answers the first of them: the
            // greeting was not seen).
            if self.outstanding == 0 {
                return;
            }
        }
        self.outstanding = self.outstanding.saturating_sub(1);
        if self.data_reply_pending && self.replies_before_data > 0 {
            // A reply to a command pipelined before `DATA`.
            self.replies_before_data -= 1;
            return;
        }
        if self.starttls_pending {
            self.starttls_pending = false;
            if code == b"220" {
                self.mode = Mode::Tls;
                return;
            }
        }
        if self.data_reply_pending {
            self.data_reply_pending = false;
            if code != b"354" && self.mode == Mode::Data && self.data_lines == 0 {
                // The server refused the message: the client goes on with commands.
                self.mode = Mode::Command;
            }
        }
    }

    /// The message ended (`ended`: normally; else the flow ended inside it).
    fn end_message(&mut self, ended: bool, out: &mut dyn EventSink) {
        if let Some(mut mime) = self.tx.mime.take() {
            let email = self.tx.email.get_or_insert_with(EmailInfo::default);
            let mut sink = TxSink {
                email,
                file: &mut self.tx.file,
                out,
                tx_id: self.tx_id,
                cap: self.limits.file_cap,
                files: self.limits.files,
                stats: &mut self.stats,
                // A file still open when the message ends: closed if the message ended as SMTP ends one, else
                // (the flow ended inside it) truncated.
                complete: ended,
            };
            mime.end(&mut sink);
            let a = mime.anomalies();
            self.anomalies = self.anomalies.union(a);
            if !a.is_empty() {
                self.stats.malformed += 1;
                // Suricata's `smtp.mime_*` events, on the message's transaction (to the server).
                out.app_layer_events(self.tx_id, true, a);
            }
        }
        let email = self.tx.email.get_or_insert_with(EmailInfo::default);
        email.status = if ended { "PARSE_DONE" } else { "PARSE_ERROR" };
        self.end_tx(out);
    }

    /// The transaction ends: its EVE record, and the next one starts.
    fn end_tx(&mut self, out: &mut dyn EventSink) {
        let tx = std::mem::take(&mut self.tx);
        out.event(AppEvent::Smtp(SmtpEvent {
            tx_id: self.tx_id,
            helo: self.helo.clone(),
            mail_from: tx.mail_from,
            rcpt_to: tx.rcpt_to,
            email: tx.email,
        }));
        self.tx_id += 1;
        self.mode = match self.mode {
            Mode::Tls => Mode::Tls,
            _ => Mode::Command,
        };
    }
}

impl Parser for SmtpParser {
    fn parse(&mut self, dir: Direction, data: &[u8], _ts_ns: u64, out: &mut dyn EventSink) {
        match dir {
            Direction::ToServer => self.client(data, out),
            Direction::ToClient => self.server(data),
        }
    }

    fn gap(&mut self, dir: Direction, _len: u64) {
        if dir == Direction::ToServer && self.mode != Mode::Tls {
            // Lines cannot be trusted across a hole: stop reading the client.
            self.stats.gave_up += 1;
            self.mode = Mode::Tls;
        }
    }

    fn finish(&mut self, out: &mut dyn EventSink) {
        // A partial last line still belongs to the message.
        if matches!(self.mode, Mode::Data | Mode::Bdat { .. }) {
            let mut line = std::mem::take(&mut self.line);
            line.append(&mut self.bdat_line);
            if !line.is_empty() {
                self.mime_line(&line, true, out);
            }
            self.end_message(false, out);
        } else if self.tx.started {
            self.end_tx(out);
        }
    }

    fn stats(&self) -> ParserStats {
        self.stats
    }
}

/// The MIME decoder's sink for one transaction: top headers into `email`, files kept up to the cap and handed
/// over when they end.
struct TxSink<'a> {
    email: &'a mut EmailInfo,
    file: &'a mut Option<FileRecord>,
    files: FileOptions,
    out: &'a mut dyn EventSink,
    tx_id: u64,
    cap: usize,
    stats: &'a mut ParserStats,
    /// A file closed now ended as its message says files end (EVE state `CLOSED`, else `TRUNCATED`).
    complete: bool,
}

impl MimeSink for TxSink<'_> {
    fn header(&mut self, top: bool, name: &[u8], value: &[u8]) {
        if !top {
            return;
        }
        let e = &mut *self.email;
        let one = |slot: &mut Option<String>| {
            if slot.is_none() {
                *slot = Some(field(<[u8]>::trim_ascii(value)));
            }
        };
        let list = |l: &mut Vec<String>, split: bool| {
            if split {
                for a in addresses(value) {
                    let a = <[u8]>::trim_ascii(a);
                    if !a.is_empty() && l.len() < MAX_LIST {
                        l.push(field(a));
                    }
                }
            } else if l.len() < MAX_LIST {
                l.push(field(<[u8]>::trim_ascii(value)));
            }
        };
        match name.to_ascii_lowercase().as_slice() {
            b"from" => one(&mut e.from),
            b"subject" => one(&mut e.subject),
            b"date" => one(&mut e.date),
            b"message-id" => one(&mut e.message_id),
            b"x-mailer" => one(&mut e.x_mailer),
            b"to" => list(&mut e.to, true),
            b"cc" => list(&mut e.cc, true),
            b"received" => list(&mut e.received, false),
            _ => {}
        }
    }

    fn file_open(&mut self, name: &[u8]) {
        if self.email.attachment.len() < MAX_LIST {
            self.email.attachment.push(field(name));
        }
        *self.file = Some(FileRecord::new(name, self.cap, self.files));
    }

    fn file_data(&mut self, data: &[u8]) {
        if let Some(f) = self.file.as_mut() {
            let room = self.cap.saturating_sub(f.kept().len());
            if data.len() > room {
                self.stats.bytes_cut += (data.len() - room) as u64;
            }
            f.data(data);
        }
    }

    fn url(&mut self, url: &[u8]) {
        if self.email.url.len() < MAX_LIST {
            self.email.url.push(field(url));
        }
    }

    fn file_close(&mut self) {
        let Some(f) = self.file.take() else { return };
        f.close(
            FileEnd {
                proto: AppProto::Smtp,
                tx_id: self.tx_id,
                to_server: true,
                complete: self.complete,
            },
            self.out,
        );
    }
}

/// The addresses of an address-list header (`To`, `Cc`): split at the commas outside double quotes (a display
/// name may hold a comma: `"Doe, Jane" <jane@example.org>`), a backslash escaping the next character in quotes.
fn addresses(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut quoted = false;
    let mut escaped = false;
    let mut cuts = Vec::new();
    for (i, &b) in value.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if quoted && b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            quoted = !quoted;
        } else if b == b',' && !quoted {
            cuts.push(start..i);
            start = i + 1;
        }
    }
    cuts.push(start..value.len());
    cuts.into_iter().map(move |r| &value[r])
}

/// A field for an event: lossy UTF-8, at most [`MAX_FIELD`] bytes.
fn field(s: &[u8]) -> String {
    String::from_utf8_lossy(&s[..s.len().min(MAX_FIELD)]).into_owned()
}

/// The address of `MAIL FROM:` / `RCPT TO:` (`<a@b>`, without the ESMTP parameters after it).
fn address(arg: &[u8]) -> String {
    let arg = <[u8]>::trim_ascii(arg);
    if arg.first() == Some(&b'<')
        && let Some(end) = arg.iter().position(|&b| b == b'>')
    {
        return field(&arg[..=end]);
    }
    let end = arg.iter().position(|&b| b == b' ').unwrap_or(arg.len());
    field(&arg[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AppLayerEvent, FileData};

    #[derive(Default)]
    struct Out {
        events: Vec<AppEvent>,
        files: Vec<(u64, Vec<u8>, Vec<u8>, u64)>,
        /// Each file's state as EVE `fileinfo` gives it, in the order of `files`.
        states: Vec<&'static str>,
        raised: Vec<(u64, bool, AppLayerEvents)>,
    }

    impl EventSink for Out {
        fn event(&mut self, event: AppEvent) {
            if let AppEvent::Fileinfo(f) = &event {
                self.states.push(f.state);
            }
            self.events.push(event);
        }
        fn app_layer_events(&mut self, tx_id: u64, to_server: bool, events: AppLayerEvents) {
            self.raised.push((tx_id, to_server, events));
        }
        fn file(&mut self, f: &FileData<'_>) {
            assert_eq!(f.proto, AppProto::Smtp);
            self.files
                .push((f.tx_id, f.name.to_vec(), f.data.to_vec(), f.size));
        }
    }

    const SERVER: &[&[u8]] = &[
        b"220 mx.example.com ESMTP\r\n",
        b"250-mx.example.com\r\n250 PIPELINING\r\n",
        b"250 OK\r\n",
        b"250 OK\r\n",
        b"354 go ahead\r\n",
    ];

    fn session(message: &[u8]) -> Vec<u8> {
        let mut c = Vec::new();
        c.extend_from_slice(b"EHLO client.example.org\r\nMAIL FROM:<a@example.org> SIZE=10\r\nRCPT TO:<b@example.com>\r\nDATA\r\n");
        c.extend_from_slice(message);
        c.extend_from_slice(b".\r\nQUIT\r\n");
        c
    }

    const MESSAGE: &[u8] = b"From: A <a@example.org>\r\nTo: b@example.com\r\nSubject: hi\r\n\
Content-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\nContent-Type: text/plain\r\n\r\n\
..dot-stuffed body\r\n--XX\r\nContent-Disposition: attachment; filename=\"e.txt\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nLi5kb3QK\r\n--XX--\r\n";

    fn run(client: &[u8], seg: usize) -> Out {
        let mut p = SmtpParser::new(SmtpLimits::default());
        let mut o = Out::default();
        for s in SERVER {
            p.parse(Direction::ToClient, s, 0, &mut o);
        }
        for c in client.chunks(seg) {
            p.parse(Direction::ToServer, c, 0, &mut o);
        }
        p.finish(&mut o);
        o
    }

    #[test]
    fn address_lists_split_at_commas_outside_quotes() {
        let split = |v: &[u8]| -> Vec<Vec<u8>> { addresses(v).map(<[u8]>::to_vec).collect() };
        assert_eq!(
            split(br#""jam,abrakadabra.ch" <m@a.ch>, b@c.d"#),
            vec![
                br#""jam,abrakadabra.ch" <m@a.ch>"#.to_vec(),
                b" b@c.d".to_vec()
            ]
        );
        assert_eq!(
            split(br#""a\",b" <x@y>,z"#),
            vec![br#""a\",b" <x@y>"#.to_vec(), b"z".to_vec()]
        );
        assert_eq!(split(b""), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn a_mail_with_an_attachment() {
        let o = run(&session(MESSAGE), usize::MAX);
        assert_eq!(
            o.files,
            vec![(0, b"e.txt".to_vec(), b"..dot\n".to_vec(), 6)]
        );
        let smtp: Vec<&SmtpEvent> = o
            .events
            .iter()
            .filter_map(|e| match e {
                AppEvent::Smtp(s) => Some(s),
                _ => None,
            })
            .collect();
        assert_eq!(smtp.len(), 1, "QUIT starts no transaction");
        let s = smtp[0];
        assert_eq!(s.helo.as_deref(), Some("client.example.org"));
        assert_eq!(s.mail_from.as_deref(), Some("<a@example.org>"));
        assert_eq!(s.rcpt_to, vec!["<b@example.com>"]);
        let e = s.email.as_ref().unwrap();
        assert_eq!(e.status, "PARSE_DONE");
        assert_eq!(e.from.as_deref(), Some("A <a@example.org>"));
        assert_eq!(e.to, vec!["b@example.com"]);
        assert_eq!(e.attachment, vec!["e.txt"]);
        assert!(
            o.events.iter().any(
                |e| matches!(e, AppEvent::Fileinfo(f) if f.filename == "e.txt" && f.size == 6)
            )
        );
    }

    #[test]
    fn segments_do_not_change_the_files() {
        let whole = run(&session(MESSAGE), usize::MAX).files;
        for seg in [1, 2, 3, 7, 64] {
            assert_eq!(
                run(&session(MESSAGE), seg).files,
                whole,
                "segments of {seg}"
            );
        }
    }

    #[test]
    fn long_lines_give_the_same_pieces_whatever_the_segments() {
        // Lines past the line buffer, one with its CR right at the buffer's end, in a plain and a QP attachment.
        let mut msg = b"Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Disposition: attachment; filename=p\r\n\r\n".to_vec();
        msg.extend(std::iter::repeat_n(b'p', MAX_LINE - 1));
        msg.extend_from_slice(b"\r\n");
        msg.extend(std::iter::repeat_n(b'q', 3 * MAX_LINE + 5));
        msg.extend_from_slice(b"\r\n--B\r\nContent-Disposition: attachment; filename=q\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n");
        for _ in 0..2000 {
            msg.extend_from_slice(b"x=41");
        }
        msg.extend_from_slice(b"\r\n--B--\r\n");
        let whole = run(&session(&msg), usize::MAX).files;
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].3, (MAX_LINE - 1 + 2 + 3 * MAX_LINE + 5) as u64);
        assert_eq!(whole[1].2, b"xA".repeat(2000));
        for seg in [1, 3, MAX_LINE - 1, MAX_LINE, MAX_LINE + 1, 1460] {
            assert_eq!(run(&session(&msg), seg).files, whole, "segments of {seg}");
        }
    }

    /// An attachment the capture cut (the flow ends inside the message, before its `.`) is `TRUNCATED`, as
    /// Suricata logs it; the attachment its part closed before the cut, and one whose message ended, `CLOSED`.
    #[test]
    fn an_attachment_cut_by_the_capture_is_truncated() {
        let message = b"Content-Type: multipart/mixed; boundary=XX\r\n\r\n--XX\r\n\
Content-Disposition: attachment; filename=\"a.txt\"\r\n\r\nwhole\r\n--XX\r\n\
Content-Disposition: attachment; filename=\"b.txt\"\r\n\r\nhalf of i";
        let mut c = session(message);
        c.truncate(c.len() - b".\r\nQUIT\r\n".len());
        let o = run(&c, usize::MAX);
        assert_eq!(
            o.files,
            vec![
                (0, b"a.txt".to_vec(), b"whole".to_vec(), 5),
                // The cut line is the message's last line (its line end given back by the decoder).
                (0, b"b.txt".to_vec(), b"half of i\r\n".to_vec(), 11)
            ]
        );
        assert_eq!(o.states, ["CLOSED", "TRUNCATED"]);
        let mut whole = message.to_vec();
        whole.extend_from_slice(b"t\r\n");
        let o = run(&session(&whole), usize::MAX);
        assert_eq!(o.states, ["CLOSED", "CLOSED"]);
    }

    #[test]
    fn bdat_chunks_and_rejected_data() {
        let msg = b"Content-Disposition: attachment; filename=b.bin\r\n\r\npayload\r\n";
        let (a, b) = msg.split_at(20);
        let mut c = Vec::new();
        c.extend_from_slice(b"EHLO x\r\nMAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\n");
        c.extend_from_slice(format!("BDAT {}\r\n", a.len()).as_bytes());
        c.extend_from_slice(a);
        c.extend_from_slice(format!("BDAT {} LAST\r\n", b.len()).as_bytes());
        c.extend_from_slice(b);
        let o = run(&c, 5);
        assert_eq!(
            o.files,
            vec![(0, b"b.bin".to_vec(), b"payload\r\n".to_vec(), 9)]
        );

        // A DATA refused by the server (pipelined after MAIL FROM, whose reply comes first): the next command is a
        // command again.
        let mut p = SmtpParser::new(SmtpLimits::default());
        let mut o = Out::default();
        p.parse(Direction::ToClient, b"220 mx\r\n", 0, &mut o);
        p.parse(
            Direction::ToServer,
            b"MAIL FROM:<a@x>\r\nDATA\r\n",
            0,
            &mut o,
        );
        p.parse(Direction::ToClient, b"250 ok\r\n554 no\r\n", 0, &mut o);
        p.parse(
            Direction::ToServer,
            b"RSET\r\nMAIL FROM:<c@x>\r\n",
            0,
            &mut o,
        );
        p.finish(&mut o);
        let froms: Vec<_> = o
            .events
            .iter()
            .filter_map(|e| match e {
                AppEvent::Smtp(s) => s.mail_from.clone(),
                _ => None,
            })
            .collect();
        assert_eq!(froms, vec!["<a@x>", "<c@x>"]);
    }

    /// RFC 2920 pipelining: `MAIL`, `RCPT` and `DATA` in one segment; the replies to `MAIL` and `RCPT` come before
    /// the `354` and do not end data mode.
    #[test]
    fn pipelined_commands_reply_before_data() {
        let mut p = SmtpParser::new(SmtpLimits::default());
        let mut o = Out::default();
        p.parse(Direction::ToClient, b"220 mx ESMTP\r\n", 0, &mut o);
        p.parse(Direction::ToServer, b"EHLO c\r\n", 0, &mut o);
        p.parse(
            Direction::ToClient,
            b"250-mx\r\n250 PIPELINING\r\n",
            0,
            &mut o,
        );
        p.parse(
            Direction::ToServer,
            b"MAIL FROM:<a@x>\r\nRCPT TO:<b@y>\r\nDATA\r\n",
            0,
            &mut o,
        );
        p.parse(Direction::ToClient, b"250 sender ok\r\n", 0, &mut o);
        p.parse(Direction::ToClient, b"250 rcpt ok\r\n354 go\r\n", 0, &mut o);
        p.parse(
            Direction::ToServer,
            b"Subject: piped\r\nMessage-ID: <m@x>\r\n\r\nbody\r\n.\r\nQUIT\r\n",
            0,
            &mut o,
        );
        p.finish(&mut o);
        let e = o
            .events
            .iter()
            .find_map(|e| match e {
                AppEvent::Smtp(s) => s.email.clone(),
                _ => None,
            })
            .expect("the mail's transaction");
        assert_eq!(e.subject.as_deref(), Some("piped"));
        assert_eq!(e.message_id.as_deref(), Some("<m@x>"));
        assert_eq!(e.status, "PARSE_DONE");
    }

    #[test]
    fn starttls_ends_the_parse_and_long_lines_stay_bounded() {
        let mut p = SmtpParser::new(SmtpLimits::default());
        let mut o = Out::default();
        p.parse(Direction::ToServer, b"STARTTLS\r\n", 0, &mut o);
        p.parse(Direction::ToClient, b"220 go\r\n", 0, &mut o);
        p.parse(Direction::ToServer, b"MAIL FROM:<a@x>\r\n", 0, &mut o);
        p.finish(&mut o);
        assert!(o.events.is_empty());

        // One endless line in a message: bounded buffer, the file still gets its bytes.
        let mut msg = b"Content-Disposition: attachment; filename=l\r\n\r\n".to_vec();
        msg.extend(std::iter::repeat_n(b'z', 300_000));
        msg.extend_from_slice(b"\r\n");
        let mut p = SmtpParser::new(SmtpLimits::default());
        let mut o = Out::default();
        for c in session(&msg).chunks(1000) {
            p.parse(Direction::ToServer, c, 0, &mut o);
            assert!(p.line.capacity() <= 2 * MAX_LINE);
        }
        assert_eq!(o.files.len(), 1);
        assert_eq!(o.files[0].3, 300_002, "the line and its break");
        assert_eq!(o.files[0].2.len(), 100_000);
        assert!(p.anomalies().contains(AppLayerEvent::SmtpMimeLongLine));
        // Raised once, on the message's transaction, when the message ends.
        assert_eq!(
            o.raised,
            vec![(
                0,
                true,
                std::iter::once(AppLayerEvent::SmtpMimeLongLine).collect()
            )]
        );
    }
}
