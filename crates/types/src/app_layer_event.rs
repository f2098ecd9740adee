//! Application-layer anomalies: what a protocol parser found wrong in a transaction, named as Suricata's
//! `app-layer-event` keyword (`dns.z_flag_set`) and its EVE `anomaly` records (`app_proto: dns`,
//! `event: z_flag_set`) name them.
//!
//! A parser reports them per message, with the transaction and direction they belong to; the rules'
//! `app-layer-event:<proto>.<name>` keyword tests them. One bit per event in an [`AppLayerEvents`] set.
//!
//! Only the events a parser raises are listed: a rule naming another of Suricata's application-layer events is
//! skipped with its name rather than loaded to never fire.

use crate::{AppProto, EventKind, EventSet};

macro_rules! app_layer_events {
    ($($(#[$m:meta])* $v:ident = ($p:ident, $s:literal),)+) => {
        /// One application-layer anomaly. See the module documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum AppLayerEvent { $($(#[$m])* $v,)+ }

        impl AppLayerEvent {
            /// Every event, in declaration order.
            pub const ALL: &'static [AppLayerEvent] = &[$(AppLayerEvent::$v,)+];
            /// Number of events.
            pub const COUNT: usize = Self::ALL.len();

            /// The protocol whose parser raises it.
            pub fn proto(self) -> AppProto {
                match self { $(AppLayerEvent::$v => AppProto::$p,)+ }
            }

            /// Suricata's name of the event within its protocol (`z_flag_set`), as EVE `anomaly.event` writes it
            /// (HTTP's in capitals, as libhtp names them: `REQUEST_LINE_MISSING_PROTOCOL`).
            pub fn event(self) -> &'static str {
                match self { $(AppLayerEvent::$v => $s,)+ }
            }
        }
    };
}

app_layer_events! {
    /// DNS: a message that passed the header checks but whose body did not decode (set on the flow's latest
    /// transaction, as Suricata does).
    DnsMalformedData = (Dns, "malformed_data"),
    /// DNS: a response (QR set) sent to the server (set on the flow's latest transaction).
    DnsNotARequest = (Dns, "not_a_request"),
    /// DNS: a query (QR clear) sent to the client.
    DnsNotAResponse = (Dns, "not_a_response"),
    /// DNS: the reserved Z bit is set.
    DnsZFlagSet = (Dns, "z_flag_set"),
    /// DNS: an opcode above 6 (unassigned).
    DnsInvalidOpcode = (Dns, "invalid_opcode"),
    /// FTP: a command line longer than Suricata's default `max-line-length` (4096 bytes).
    FtpRequestCommandTooLong = (Ftp, "request_command_too_long"),
    /// FTP: a reply line longer than 4096 bytes.
    FtpResponseCommandTooLong = (Ftp, "response_command_too_long"),
    /// Kerberos: a reply (AS-REP, TGS-REP) whose encryption type is weak or deprecated (anything but AES and
    /// Camellia), as Suricata judges it.
    Krb5WeakEncryption = (Kerberos, "weak_encryption"),
    /// HTTP: a request line without a protocol (`GET /`) that is not an HTTP/0.9 request (header lines follow).
    HttpRequestLineMissingProtocol = (Http, "REQUEST_LINE_MISSING_PROTOCOL"),
    /// HTTP: a request's `Transfer-Encoding` that does not say `chunked`, or says it in a request older than
    /// HTTP/1.1 (or without a readable protocol), as libhtp flags it.
    HttpInvalidTransferEncodingValueInRequest = (Http, "INVALID_TRANSFER_ENCODING_VALUE_IN_REQUEST"),
    /// SMTP (MIME): a message line longer than 998 bytes (RFC 5322's limit).
    SmtpMimeLongLine = (Smtp, "MIME_LONG_LINE"),
    /// SMTP (MIME): a base64 line longer than 76 bytes (RFC 2045's limit).
    SmtpMimeLongEncLine = (Smtp, "MIME_LONG_ENC_LINE"),
    /// SMTP (MIME): a header name longer than the decoder keeps.
    SmtpMimeLongHeaderName = (Smtp, "MIME_LONG_HEADER_NAME"),
    /// SMTP (MIME): a header value longer than the configured depth (the rest was cut).
    SmtpMimeLongHeaderValue = (Smtp, "MIME_LONG_HEADER_VALUE"),
    /// SMTP (MIME): a multipart boundary longer than the decoder keeps.
    SmtpMimeLongBoundary = (Smtp, "MIME_LONG_BOUNDARY"),
    /// SMTP (MIME): an attachment's file name longer than the decoder keeps (cut).
    SmtpMimeLongFilename = (Smtp, "MIME_LONG_FILENAME"),
    /// SMTP (MIME): bytes outside the base64 alphabet in a base64 part (skipped).
    SmtpMimeInvalidBase64 = (Smtp, "MIME_INVALID_BASE64"),
    /// SMTP (MIME): a `=` not followed by two hex digits or the end of the line in a quoted-printable part.
    SmtpMimeInvalidQp = (Smtp, "MIME_INVALID_QP"),
    /// SMTP (MIME): a header line without a colon, a multipart without a boundary, nesting too deep, or a message
    /// that ended inside a multipart.
    SmtpMimeMalformedMsg = (Smtp, "MIME_MALFORMED_MSG"),
}

impl AppLayerEvent {
    /// The keyword's spelling, `<proto>.<event>` with Suricata's protocol name, in lower case
    /// (`dns.z_flag_set`, `http.request_line_missing_protocol`).
    pub fn name(self) -> String {
        format!(
            "{}.{}",
            self.proto().suricata_name().unwrap_or(self.proto().name()),
            self.event().to_ascii_lowercase()
        )
    }

    /// The event `app-layer-event` names as `<proto>.<event>` (case-insensitive), if a parser raises it.
    pub fn from_name(name: &str) -> Option<AppLayerEvent> {
        let (proto, event) = name.split_once('.')?;
        Self::ALL.iter().copied().find(|e| {
            e.event().eq_ignore_ascii_case(event)
                && e.proto()
                    .suricata_name()
                    .is_some_and(|p| p.eq_ignore_ascii_case(proto))
        })
    }
}

impl core::fmt::Display for AppLayerEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.name())
    }
}

const _: () = assert!(AppLayerEvent::COUNT <= 64);

impl EventKind for AppLayerEvent {
    const ALL: &'static [AppLayerEvent] = AppLayerEvent::ALL;
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

/// A set of [`AppLayerEvent`]s (see [`EventSet`]).
pub type AppLayerEvents = EventSet<AppLayerEvent>;

impl EventSet<AppLayerEvent> {
    /// The set as the rules inspect it: one byte per event of [`AppLayerEvent::ALL`], 1 where the event is set (the
    /// `app-layer-event` keyword tests the byte at the event's index).
    pub fn flags(self) -> [u8; AppLayerEvent::COUNT] {
        let mut out = [0u8; AppLayerEvent::COUNT];
        for (i, e) in AppLayerEvent::ALL.iter().enumerate() {
            out[i] = u8::from(self.contains(*e));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_again() {
        for (i, e) in AppLayerEvent::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
            assert_eq!(AppLayerEvent::from_name(&e.name()), Some(*e));
            assert!(
                AppLayerEvent::ALL[..i].iter().all(|o| o.name() != e.name()),
                "{e} twice"
            );
        }
        assert_eq!(
            AppLayerEvent::from_name("DNS.Z_FLAG_SET"),
            Some(AppLayerEvent::DnsZFlagSet)
        );
        assert_eq!(AppLayerEvent::DnsZFlagSet.name(), "dns.z_flag_set");
        assert_eq!(AppLayerEvent::from_name("dns.no_such_event"), None);
        assert_eq!(AppLayerEvent::from_name("tls.z_flag_set"), None);
        assert_eq!(AppLayerEvent::from_name("z_flag_set"), None);
    }

    #[test]
    fn set_and_flags_agree() {
        let s: AppLayerEvents = [AppLayerEvent::DnsZFlagSet, AppLayerEvent::DnsInvalidOpcode]
            .into_iter()
            .collect();
        assert!(
            s.contains(AppLayerEvent::DnsZFlagSet) && !s.contains(AppLayerEvent::DnsNotAResponse)
        );
        let f = s.flags();
        for e in AppLayerEvent::ALL {
            assert_eq!(f[e.index()] == 1, s.contains(*e));
        }
        assert_eq!(s.iter().count(), 2);
        assert!(AppLayerEvents::EMPTY.is_empty() && !s.is_empty());
    }
}
