//! Mail access and transfer: SMTP, POP3, IMAP, and their STARTTLS upgrades, which nDPI names `SMTPS`, `POPS` and
//! `IMAPS` (the same names as the implicit-TLS ports 465/995/993).
//!
//! All three are server-greets-first text protocols, so a detector checks the greeting (`220`, `+OK`, `* OK`) and
//! then the client's commands. The upgrade is visible in cleartext: after the capability exchange (`EHLO`, `CAPA`,
//! `CAPABILITY`) the client either asks for TLS (`STARTTLS` / `STLS`) or goes on in the clear (`MAIL FROM`, `USER`,
//! `LOGIN`, ...). So each protocol has two detectors over the same logic: the plain one is certain at the first
//! command after the capability exchange that is *not* the upgrade, the `S` one at the upgrade. Until then both
//! answer `Unsure`; the decision usually comes with the flow's 4th or 5th payload.
//!
//! Cost: a detector reads the first line of the greeting and walks the client's (short) command lines in the
//! stream prefix; nothing is kept between packets.

pub mod mime;
pub mod smtp;

use crate::scan::{Lit, lines, lit_ci, printable, reply_code, starts_ci};
use crate::{AppProto, Detector, Direction, Limits, Parser, Probe, ProbeCtx, Transport};

/// Which mail protocol a [`MailDetector`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mail {
    Smtp,
    Pop3,
    Imap,
}

/// One of the six mail detectors: `Mail::Smtp` with `tls: false` is `SMTP`, with `tls: true` `SMTPS`, etc.
pub struct MailDetector {
    pub mail: Mail,
    /// Recognise the STARTTLS-upgraded flavour instead of the plain one.
    pub tls: bool,
}

/// What a client command line means for the plain/upgraded decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    /// Greeting or capability query: decides nothing.
    Neutral,
    /// The TLS upgrade.
    Upgrade,
    /// A command of the protocol that continues in the clear.
    Plain,
    /// Not this protocol's command.
    Foreign,
}

fn smtp_cmd(l: &[u8]) -> Cmd {
    const PLAIN: &[&[u8]] = &[
        b"MAIL FROM",
        b"RCPT TO",
        b"AUTH ",
        b"DATA",
        b"QUIT",
        b"RSET",
        b"NOOP",
        b"VRFY",
        b"EXPN",
        b"HELP",
        b"BDAT",
        b"ETRN",
        b"TURN",
    ];
    if starts_ci(l, b"EHLO") || starts_ci(l, b"HELO") {
        Cmd::Neutral
    } else if starts_ci(l, b"STARTTLS") {
        Cmd::Upgrade
    } else if PLAIN.iter().any(|c| starts_ci(l, c)) {
        Cmd::Plain
    } else {
        Cmd::Foreign
    }
}

fn pop3_cmd(l: &[u8]) -> Cmd {
    const PLAIN: &[&[u8]] = &[
        b"USER ", b"PASS ", b"APOP ", b"AUTH", b"STAT", b"LIST", b"RETR", b"DELE", b"UIDL",
        b"TOP ", b"QUIT", b"NOOP", b"RSET", b"XTND",
    ];
    // `AUTH` without a mechanism only lists the mechanisms (RFC 5034), like `CAPA`.
    if starts_ci(l, b"CAPA") || l.eq_ignore_ascii_case(b"AUTH") {
        Cmd::Neutral
    } else if starts_ci(l, b"STLS") {
        Cmd::Upgrade
    } else if PLAIN.iter().any(|c| starts_ci(l, c)) {
        Cmd::Plain
    } else {
        Cmd::Foreign
    }
}

fn imap_cmd(l: &[u8]) -> Cmd {
    // `<tag> SP <command>`: the tag is any atom (letters, digits, dots...).
    let Some(sp) = l.iter().position(|&b| b == b' ') else {
        return Cmd::Foreign;
    };
    let (tag, cmd) = (&l[..sp], &l[sp + 1..]);
    if tag.is_empty()
        || tag.len() > 32
        || !tag.iter().all(|b| {
            b.is_ascii_graphic()
                && !matches!(b, b'(' | b')' | b'{' | b'%' | b'*' | b'"' | b'\\' | b'+')
        })
    {
        return Cmd::Foreign;
    }
    const PLAIN: &[&[u8]] = &[
        b"LOGIN ",
        b"AUTHENTICATE ",
        b"SELECT ",
        b"EXAMINE ",
        b"LIST ",
        b"LSUB ",
        b"LOGOUT",
        b"NOOP",
        b"ENABLE ",
        b"NAMESPACE",
        b"STATUS ",
        b"CREATE ",
        b"FETCH ",
        b"UID ",
        b"IDLE",
        b"APPEND ",
        b"XLIST ",
        b"GETQUOTAROOT ",
    ];
    if starts_ci(cmd, b"CAPABILITY") || starts_ci(cmd, b"ID ") || starts_ci(cmd, b"ID(") {
        Cmd::Neutral
    } else if starts_ci(cmd, b"STARTTLS") {
        Cmd::Upgrade
    } else if PLAIN.iter().any(|c| starts_ci(cmd, c)) {
        Cmd::Plain
    } else {
        Cmd::Foreign
    }
}

/// A TLS record header: content type 20..=23, version 3.0 to 1.3, a plausible length.
pub(crate) fn tls_record(d: &[u8]) -> bool {
    match (d.first(), d.get(1), d.get(2), crate::scan::be16(d, 3)) {
        (Some(20..=23), Some(3), Some(0..=4), Some(len)) => len > 0 && len <= 18 * 1024,
        _ => false,
    }
}

impl MailDetector {
    fn greeting(&self, server: &[u8]) -> Probe {
        match self.mail {
            Mail::Smtp => match reply_code(server) {
                Some(220) => Probe::Unsure,
                Some(_) => Probe::NotForUs,
                None if server.len() < 4 && server.iter().all(u8::is_ascii_digit) => Probe::Unsure,
                None => Probe::NotForUs,
            },
            Mail::Pop3 => match lit_ci(server, b"+OK") {
                Lit::No => Probe::NotForUs,
                _ => Probe::Unsure,
            },
            Mail::Imap => {
                if lit_ci(server, b"* OK") != Lit::No || lit_ci(server, b"* PREAUTH") != Lit::No {
                    Probe::Unsure
                } else {
                    Probe::NotForUs
                }
            }
        }
    }

    fn commands(&self, client: &[u8]) -> Probe {
        let classify = match self.mail {
            Mail::Smtp => smtp_cmd,
            Mail::Pop3 => pop3_cmd,
            Mail::Imap => imap_cmd,
        };
        let mut any = false;
        for l in lines(client) {
            any = true;
            if !printable(l) {
                return Probe::NotForUs;
            }
            match (classify(l), self.tls) {
                (Cmd::Neutral, _) => {}
                (Cmd::Foreign, _) => return Probe::NotForUs,
                (Cmd::Upgrade, true) | (Cmd::Plain, false) => return Probe::Certain,
                (Cmd::Upgrade, false) | (Cmd::Plain, true) => return Probe::NotForUs,
            }
        }
        if !any && (client.len() > 64 || !printable(client)) {
            return Probe::NotForUs;
        }
        Probe::Unsure
    }
}

impl Detector for MailDetector {
    fn proto(&self) -> AppProto {
        match (self.mail, self.tls) {
            (Mail::Smtp, false) => AppProto::Smtp,
            (Mail::Smtp, true) => AppProto::Smtps,
            (Mail::Pop3, false) => AppProto::Pop3,
            (Mail::Pop3, true) => AppProto::Pops,
            (Mail::Imap, false) => AppProto::Imap,
            (Mail::Imap, true) => AppProto::Imaps,
        }
    }
    fn parser(&self, transport: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        // Only plain SMTP carries files that are parsed (Suricata has no file parser for POP3 and IMAP); after
        // `STARTTLS` the mail is encrypted.
        (self.mail == Mail::Smtp && !self.tls && transport == Transport::Tcp).then(|| {
            Box::new(smtp::SmtpParser::new(smtp::SmtpLimits {
                file_cap: limits.smtp_file_cap,
                files: limits.file_options(),
                ..smtp::SmtpLimits::default()
            })) as Box<dyn Parser>
        })
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if self.tls
            && ctx.payload_index == 0
            && self
                .default_ports(Transport::Tcp)
                .iter()
                .any(|&p| ctx.either_port_is(p))
        {
            // Implicit TLS on the protocol's own port: nDPI names the flow after the port (`IMAPS` on 993...).
            return if tls_record(ctx.prefix) {
                Probe::Certain
            } else {
                Probe::NotForUs
            };
        }
        match ctx.dir {
            Direction::ToClient => self.greeting(ctx.prefix),
            // The client never speaks before the server's greeting in these protocols.
            Direction::ToServer if ctx.payload_index == ctx.dir_index => Probe::NotForUs,
            Direction::ToServer => self.commands(ctx.prefix),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn client(d: &[u8]) -> ProbeCtx<'_> {
        let mut c = ctx_tcp(Direction::ToServer, d);
        c.payload_index = 1;
        c.dir_index = 0;
        c
    }

    const SMTP: MailDetector = MailDetector {
        mail: Mail::Smtp,
        tls: false,
    };
    const SMTPS: MailDetector = MailDetector {
        mail: Mail::Smtp,
        tls: true,
    };
    const POP3: MailDetector = MailDetector {
        mail: Mail::Pop3,
        tls: false,
    };
    const POPS: MailDetector = MailDetector {
        mail: Mail::Pop3,
        tls: true,
    };
    const IMAP: MailDetector = MailDetector {
        mail: Mail::Imap,
        tls: false,
    };
    const IMAPS: MailDetector = MailDetector {
        mail: Mail::Imap,
        tls: true,
    };

    #[test]
    fn smtp_plain_and_starttls() {
        // smtp.pcap and smtp-starttls.pcap (nDPI test suite).
        let greet = ctx_tcp(
            Direction::ToClient,
            b"220 xc90.websitewelcome.com ESMTP Exim 4.69 #1 Mon, 05 Oct 2009 01:05:54 -0500 \r\n",
        );
        assert_eq!(SMTP.probe(&greet), Probe::Unsure);
        assert_eq!(SMTP.probe(&client(b"EHLO GP\r\n")), Probe::Unsure);
        assert_eq!(
            SMTP.probe(&client(b"EHLO GP\r\nAUTH LOGIN\r\n")),
            Probe::Certain
        );
        assert_eq!(
            SMTPS.probe(&client(b"EHLO GP\r\nAUTH LOGIN\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SMTPS.probe(&client(b"EHLO [10.0.0.1]\r\nSTARTTLS\r\n")),
            Probe::Certain
        );
        assert_eq!(
            SMTP.probe(&client(b"EHLO [10.0.0.1]\r\nSTARTTLS\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            SMTP.probe(&ctx_tcp(Direction::ToClient, b"SSH-2.0-x\r\n")),
            Probe::NotForUs
        );
        assert_eq!(SMTP.probe(&client(b"USER bob\r\n")), Probe::NotForUs);
    }

    #[test]
    fn pop3_and_imap() {
        assert_eq!(
            POP3.probe(&ctx_tcp(
                Direction::ToClient,
                b"+OK POP server ready H mimap3\r\n"
            )),
            Probe::Unsure
        );
        assert_eq!(
            POP3.probe(&client(b"USER user@example.com\r\n")),
            Probe::Certain
        );
        assert_eq!(POPS.probe(&client(b"CAPA\r\nSTLS\r\n")), Probe::Certain);
        assert_eq!(POP3.probe(&client(b"CAPA\r\nSTLS\r\n")), Probe::NotForUs);
        assert_eq!(
            IMAP.probe(&ctx_tcp(
                Direction::ToClient,
                b"* OK [CAPABILITY IMAP4rev1] ready\r\n"
            )),
            Probe::Unsure
        );
        assert_eq!(
            IMAP.probe(&client(b"a001 LOGIN bob secret\r\n")),
            Probe::Certain
        );
        assert_eq!(
            IMAPS.probe(&client(b"1 CAPABILITY\r\n2 STARTTLS\r\n")),
            Probe::Certain
        );
        assert_eq!(
            IMAP.probe(&client(b"1 CAPABILITY\r\n2 STARTTLS\r\n")),
            Probe::NotForUs
        );
        assert_eq!(
            IMAP.probe(&ctx_tcp(Direction::ToClient, b"+OK hi\r\n")),
            Probe::NotForUs
        );
        // pop3_stls.pcap: a bare AUTH lists mechanisms, the upgrade comes after CAPA.
        assert_eq!(
            POPS.probe(&client(b"AUTH\r\nCAPA\r\nSTLS\r\n")),
            Probe::Certain
        );
    }

    #[test]
    fn implicit_tls_by_port() {
        // First bytes of a ClientHello (imaps.pcap) and of application data (zoom.pcap), server port 993.
        let hello = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc];
        let appdata = [0x17, 0x03, 0x03, 0x00, 0x2a, 0x40, 0x5d];
        for d in [&hello[..], &appdata[..]] {
            let c = crate::testkit::ctx_ports(Transport::Tcp, Direction::ToServer, d, 50506, 993);
            assert_eq!(IMAPS.probe(&c), Probe::Certain);
            assert_eq!(IMAP.probe(&c), Probe::NotForUs);
            let c = crate::testkit::ctx_ports(Transport::Tcp, Direction::ToServer, d, 50506, 443);
            assert_eq!(IMAPS.probe(&c), Probe::NotForUs);
        }
    }
}
