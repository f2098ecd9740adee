//! Rule keywords of the application-layer parsers through the engine: crafted conversations (IPv4 without a link
//! header, checksums zero) go through the serial path with a rule set, and the test reads which rules alerted.

use std::sync::Arc;

use flowbundle_ingest::{LinkType, PacketRecord};
use flowbundle_rules::{RuleSet, Vars};

use crate::{Engine, EngineConfig, EventKind, Prestage};

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH_ACK: u8 = 0x18;
const SYN_ACK: u8 = 0x12;
const FIN_ACK: u8 = 0x11;

/// An IPv4 TCP segment between the client `10.0.0.1:40000` and the server `10.0.0.2:port`, in the direction
/// `from_client` says.
fn segment(from_client: bool, port: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let ((src, sport), (dst, dport)) = if from_client {
        ((1, 40000u16), (2, port))
    } else {
        ((2, port), (1, 40000))
    };
    let total = (40 + payload.len()) as u16;
    let mut b = vec![0x45, 0];
    b.extend_from_slice(&total.to_be_bytes());
    b.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0]);
    b.extend_from_slice(&[10, 0, 0, src, 10, 0, 0, dst]);
    b.extend_from_slice(&sport.to_be_bytes());
    b.extend_from_slice(&dport.to_be_bytes());
    b.extend_from_slice(&seq.to_be_bytes());
    b.extend_from_slice(&ack.to_be_bytes());
    b.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    b.extend_from_slice(payload);
    b
}

/// A whole TCP connection from `10.0.0.1:40000` to `10.0.0.2:port`: the handshake, each `(from_client, bytes)`
/// in order (each acknowledged by the other side), then both FINs.
pub(crate) fn conversation(port: u16, turns: &[(bool, &[u8])]) -> Vec<Vec<u8>> {
    let (mut c, mut s) = (1000u32, 5000u32);
    let mut out = vec![
        segment(true, port, c, 0, SYN, b""),
        segment(false, port, s, c + 1, SYN_ACK, b""),
    ];
    c += 1;
    s += 1;
    out.push(segment(true, port, c, s, ACK, b""));
    for &(from_client, data) in turns {
        let n = data.len() as u32;
        if from_client {
            out.push(segment(true, port, c, s, PSH_ACK, data));
            c += n;
            out.push(segment(false, port, s, c, ACK, b""));
        } else {
            out.push(segment(false, port, s, c, PSH_ACK, data));
            s += n;
            out.push(segment(true, port, c, s, ACK, b""));
        }
    }
    out.push(segment(true, port, c, s, FIN_ACK, b""));
    out.push(segment(false, port, s, c + 1, FIN_ACK, b""));
    out.push(segment(true, port, c + 1, s + 1, ACK, b""));
    out
}

/// The signature ids of the alerts `rules` raise on `packets` (one second apart), sorted; every rule must load.
pub(crate) fn sids(rules: &str, packets: &[Vec<u8>]) -> Vec<u32> {
    let mut v: Vec<u32> = alert_events(rules, packets)
        .iter()
        .map(|a| a.signature_id)
        .collect();
    v.sort_unstable();
    v
}

/// One SMTP session: a mail with two recipients, a quoted display name holding a comma in `Cc`, two `Received`
/// headers.
fn smtp_session() -> Vec<Vec<u8>> {
    let message: &[u8] = b"Received: from a.example (a.example [10.0.0.9]) by mx1.example\r\n\
Received: from mx1.example by mx2.example\r\n\
From: Alice <alice@example.org>\r\n\
To: bob@example.com, carol@example.com\r\n\
Cc: \"Doe, Jane\" <jane@example.net>\r\n\
Subject: quarterly report\r\n\
Date: Fri, 21 Apr 2023 05:10:36 +0000\r\n\
Message-ID: <id-42@example.org>\r\n\
X-Mailer: TestMailer 1.0\r\n\
\r\n\
Hello, see http://www.example.com/report?q=1 and <http://files.example.net/a.zip>.\r\n.\r\n";
    conversation(
        25,
        &[
            (false, b"220 mx.example.com ESMTP\r\n"),
            (true, b"EHLO client.example.org\r\n"),
            (false, b"250 mx.example.com\r\n"),
            (true, b"MAIL FROM:<alice@example.org> SIZE=100\r\n"),
            (false, b"250 OK\r\n"),
            (true, b"RCPT TO:<bob@example.com>\r\n"),
            (false, b"250 OK\r\n"),
            (true, b"RCPT TO:<carol@example.com>\r\n"),
            (false, b"250 OK\r\n"),
            (true, b"DATA\r\n"),
            (false, b"354 go ahead\r\n"),
            (true, message),
            (false, b"250 queued\r\n"),
            (true, b"QUIT\r\n"),
            (false, b"221 bye\r\n"),
        ],
    )
}

#[test]
fn smtp_envelope_buffers_match_the_session_and_its_mail() {
    let rules = r#"alert smtp any any -> any any (smtp.helo; content:"client.example.org"; bsize:18; sid:1;)
alert smtp any any -> any any (smtp.helo; content:"other.example"; sid:2;)
alert smtp any any -> any any (smtp.mail_from; content:"<alice@example.org>"; startswith; endswith; sid:3;)
alert smtp any any -> any any (smtp.mail_from; content:"SIZE"; sid:4;)
alert smtp any any -> any any (smtp.rcpt_to; content:"<carol@example.com>"; startswith; endswith; sid:5;)
alert smtp any any -> any any (smtp.rcpt_to; content:"bob"; content:"carol"; distance:0; sid:6;)
alert smtp any any -> any any (smtp.helo; content:"client"; smtp.mail_from; content:"alice"; sid:7;)
alert smtp any any -> any any (smtp.rcpt_to; content:!"bob"; sid:8;)
"#;
    // 6: the recipients are separate buffers, so "bob" and "carol" are never in one. 8: carol's buffer lacks "bob".
    assert_eq!(sids(rules, &smtp_session()), vec![1, 3, 5, 7, 8]);
}

#[test]
fn email_header_buffers_match_the_messages_fields() {
    let rules = r#"alert smtp any any -> any any (email.from; content:"Alice <alice@example.org>"; bsize:25; sid:1;)
alert smtp any any -> any any (email.subject; content:"quarterly"; startswith; sid:2;)
alert smtp any any -> any any (email.subject; content:"annual"; sid:3;)
alert smtp any any -> any any (email.to; content:"carol@example.com"; startswith; endswith; sid:4;)
alert smtp any any -> any any (email.to; content:"bob@example.com, carol"; sid:5;)
alert smtp any any -> any any (email.cc; content:"\"Doe, Jane\" <jane@example.net>"; startswith; endswith; sid:6;)
alert smtp any any -> any any (email.date; content:"Fri, 21 Apr 2023 05:10:36 +0000"; bsize:31; sid:7;)
alert smtp any any -> any any (email.message_id; content:"<id-42@example.org>"; startswith; endswith; sid:8;)
alert smtp any any -> any any (email.x_mailer; content:"TestMailer"; sid:9;)
alert smtp any any -> any any (email.received; content:"by mx2.example"; endswith; sid:10;)
alert smtp any any -> any any (email.received; content:"a.example"; content:"mx2"; distance:0; sid:11;)
alert smtp any any -> any any (email.subject; content:!"quarterly"; sid:12;)
alert smtp any any -> any any (email.x_mailer; content:"testmailer"; nocase; email.from; content:"alice"; sid:13;)
"#;
    // 5: the addresses of `To` are one buffer each; 11: two `Received` headers, two buffers; 12: negated.
    assert_eq!(
        sids(rules, &smtp_session()),
        vec![1, 2, 4, 6, 7, 8, 9, 10, 13]
    );
}

/// `email.url`: each URL of the message's text, without its scheme, one buffer each.
#[test]
fn email_url_holds_each_url_of_the_message() {
    let rules = r#"alert smtp any any -> any any (email.url; content:"www.example.com/report?q=1"; startswith; endswith; sid:1;)
alert smtp any any -> any any (email.url; content:"files.example.net/a.zip"; bsize:23; sid:2;)
alert smtp any any -> any any (email.url; content:"http://"; sid:3;)
alert smtp any any -> any any (email.url; content:"report"; content:"a.zip"; distance:0; sid:4;)
alert smtp any any -> any any (email.url; content:"report"; email.url; content:"a.zip"; sid:5;)
alert smtp any any -> any any (email.url; content:".net"; email.subject; content:"quarterly"; sid:6;)
"#;
    // 3: the scheme is not kept; 4: two URLs, two buffers; 5: one instance each.
    assert_eq!(sids(rules, &smtp_session()), vec![1, 2, 5, 6]);
}

#[test]
fn smtp_keywords_are_sticky_buffers_of_smtp_in_the_keyword_table() {
    for name in [
        "smtp.helo",
        "smtp.mail_from",
        "smtp.rcpt_to",
        "email.from",
        "email.subject",
        "email.to",
        "email.cc",
        "email.date",
        "email.message_id",
        "email.x_mailer",
        "email.received",
        "email.url",
    ] {
        let k = flowbundle_rules::keyword::lookup(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(k.buffer(), Some(name));
    }
}

/// `sameip`: a packet whose source and destination address are equal (a LAND attack's SYN) matches; the others of
/// the flow do not.
#[test]
fn sameip_matches_a_packet_to_its_own_address() {
    let mut land = segment(true, 139, 7, 0, SYN, b"");
    land[16..20].copy_from_slice(&[10, 0, 0, 1]);
    let rules = "alert tcp any any -> any any (sameip; sid:1;)\n\
                 alert tcp any any -> any any (sameip; flags:S; sid:2;)\n\
                 alert tcp any any -> any any (sameip; flags:A; sid:3;)";
    assert_eq!(sids(rules, &[land]), vec![1, 2]);
    assert_eq!(
        sids(
            rules,
            &conversation(80, &[(true, b"GET / HTTP/1.0\r\n\r\n")])
        ),
        Vec::<u32>::new()
    );
}

/// An FTP session in passive mode whose last command is never answered: the `ftp.*` keywords per transaction.
fn ftp_session() -> Vec<Vec<u8>> {
    conversation(
        21,
        &[
            (false, b"220 (vsFTPd 3.0.3)\r\n"),
            (true, b"USER anonymous\r\n"),
            (false, b"331 Please specify the password.\r\n"),
            (true, b"PASS guest\r\n"),
            (false, b"230-Welcome\r\n230 Login successful.\r\n"),
            (true, b"PASV\r\n"),
            (
                false,
                b"227 Entering Passive Mode (90,130,70,73,100,85).\r\n",
            ),
            (true, b"RETR docs/report.pdf\r\n"),
            (
                false,
                b"150 Opening BINARY mode data connection.\r\n226 Transfer complete.\r\n",
            ),
            (true, b"STAT\r\n"),
        ],
    )
}

/// An alert on an FTP transaction's buffer carries the transaction as it stood when the rule matched (EVE `ftp`, as
/// Suricata writes it beside the alert): the command alone when its command matched, with its replies when a reply
/// did; an alert on the payload carries none.
#[test]
fn ftp_alerts_carry_their_transaction() {
    let rules = r#"alert ftp any any -> any any (ftp.command; content:"RETR"; sid:1;)
alert ftp any any -> any any (ftp.completion_code; content:"226"; sid:2;)
alert tcp any any -> any 21 (content:"PASV"; sid:3;)"#;
    let (set, _) = RuleSet::parse(rules, &Vars::default()).expect("rules parse");
    let mut e = Engine::with_shared(EngineConfig::default(), None, Some(Arc::new(set)));
    let mut ctx = e.new_ctx();
    let mut pre = Prestage::new(e.config());
    for (i, p) in ftp_session().iter().enumerate() {
        let rec = PacketRecord {
            ts_ns: (i as u64 + 1) * 1_000_000_000,
            orig_len: p.len() as u32,
            interface: 0,
            link_type: LinkType::RAW,
            data: p,
        };
        e.process_serial(&mut ctx, &mut pre, i as u64, &rec);
    }
    let mut ftp: Vec<(u32, Option<crate::event::FtpEvent>)> = e
        .finish([ctx])
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Alert(a) => Some((
                a.signature_id,
                a.tx.as_deref().and_then(|t| match t {
                    flowbundle_protocols::AppEvent::Ftp(f) => Some(f.clone()),
                    _ => None,
                }),
            )),
            _ => None,
        })
        .collect();
    ftp.sort_by_key(|f| f.0);
    let [(1, Some(cmd)), (2, Some(done)), (3, None)] = ftp.as_slice() else {
        panic!("{ftp:?}")
    };
    assert_eq!(
        (cmd.command.as_deref(), cmd.command_data.as_deref()),
        (Some("RETR"), Some("docs/report.pdf"))
    );
    assert!(cmd.reply.is_empty() && cmd.reply_received == "no");
    assert_eq!(done.command.as_deref(), Some("RETR"));
    assert_eq!(done.completion_code, ["150", "226"]);
    assert_eq!(done.reply_received, "yes");
}

#[test]
fn ftp_keywords_match_each_transaction() {
    let rules = r#"alert ftp any any -> any any (ftp.command; content:"PASV"; sid:1;)
alert ftp any any -> any any (ftp.command; content:"RETR"; ftp.command_data; content:"report.pdf"; endswith; sid:2;)
alert ftp any any -> any any (ftp.command; content:"USER"; ftp.command_data; content:"guest"; sid:3;)
alert ftp any any -> any any (ftp.reply; content:"Login successful."; bsize:17; sid:4;)
alert ftp any any -> any any (ftp.reply; content:"Welcome"; content:"Login"; distance:0; sid:5;)
alert ftp any any -> any any (ftp.completion_code; content:"150"; ftp.reply; content:"Transfer complete"; sid:6;)
alert ftp any any -> any any (ftp.dynamic_port:25685; ftp.mode:passive; sid:7;)
alert ftp any any -> any any (ftp.dynamic_port:>30000; sid:8;)
alert ftp any any -> any any (ftp.mode:active; sid:9;)
alert ftp any any -> any any (ftp.reply_received:no; ftp.command; content:"STAT"; sid:10;)
alert ftp any any -> any any (ftp.reply_received:no; ftp.command; content:"RETR"; sid:11;)
alert ftp any any -> any any (flow:to_server; ftp.dynamic_port:25685; sid:12;)
alert ftp any any -> any any (ftp.completion_code; content:"220"; sid:13;)
"#;
    // 3: USER's argument is anonymous, PASS's guest (two transactions); 5: the two lines of the 230 reply are two
    // buffers; 8: no transaction's port is above 30000 (25685; 0 for the others); 9: PASV is passive;
    // 11: RETR was answered; 13: the greeting is a transaction of its own (its code is inspected).
    assert_eq!(sids(rules, &ftp_session()), vec![1, 2, 4, 6, 7, 10, 12, 13]);
}

#[test]
fn ftp_keyword_values_are_checked_as_suricata_checks_them() {
    for bad in [
        "ftp.mode: xactive",
        "ftp.mode: suricata",
        "ftp.reply_received: yes yes",
        "ftp.reply_received: maybe",
        "ftp.dynamic_port: 70000",
    ] {
        let rule = format!("alert ftp any any -> any any ({bad}; sid:1;)");
        let loaded = RuleSet::parse(&rule, &Vars::default()).map_or(0, |(_, r)| r.loaded);
        assert_eq!(loaded, 0, "{bad}");
    }
    for good in [
        "ftp.mode:active",
        "ftp.reply_received: on",
        "ftp.reply_received: 0",
        "ftp.dynamic_port: 59913-59915",
        "ftp.dynamic_port: >=59926",
    ] {
        let rule = format!("alert ftp any any -> any any ({good}; sid:1;)");
        let (_, report) = RuleSet::parse(&rule, &Vars::default()).expect(good);
        assert_eq!(report.loaded, 1, "{good}");
    }
}
/// `http.request_header` / `http.response_header`: one buffer per header as `Name: value` (no line end), a
/// repeated header once with its values joined by `, `; a rule alerts once per transaction however many headers
/// match; each side's keyword reads its side only.
#[test]
fn http_header_multi_buffers_hold_one_header_each() {
    let packets = conversation(
        80,
        &[
            (
                true,
                b"GET /ws HTTP/1.1\r\nHost: example.com\r\nKey: abc\r\nX-A: 1\r\nx-a: 2\r\n\r\n",
            ),
            (
                false,
                b"HTTP/1.1 200 OK\r\nServer: test\r\nContent-Length: 0\r\n\r\n",
            ),
        ],
    );
    let rules = r#"alert http any any -> any any (http.request_header; content:"Key|3a 20|abc"; startswith; bsize:8; sid:1;)
alert http any any -> any any (http.request_header; content:"abc|0d 0a|"; sid:2;)
alert http any any -> any any (http.request_header; content:"X-A|3a 20|1, 2"; bsize:9; sid:3;)
alert http any any -> any any (http.request_header; content:"|3a 20|"; sid:4;)
alert http any any -> any any (http.response_header; content:"Server|3a 20|test"; bsize:12; sid:5;)
alert http any any -> any any (http.request_header; content:"Server"; sid:6;)
alert http any any -> any any (http.method; content:"GET"; http.request_header; content:"Host|3a 20|example.com"; sid:7;)"#;
    assert_eq!(sids(rules, &packets), vec![1, 3, 4, 5, 7]);
}

/// `file.data` on HTTP as Suricata inspects it: to the server each file of the request (a multipart form's parts
/// that carry a file name, a `PUT` body), one buffer each; to the client the response body; with no side named,
/// both. A rule alerts once per transaction however many files match.
#[test]
fn http_file_data_reads_each_request_file_and_the_response_body() {
    let form = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"; filename=\"titi.txt\"\r\n\
Content-Type: text/plain\r\n\r\nTiti a vu un gros minet.\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"b\"; filename=\"toto.txt\"\r\n\r\n\
toto est dans un bateau\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"c\"\r\n\r\nplain field\r\n--XyZ--\r\n";
    let post = format!(
        "POST /upload HTTP/1.1\r\nHost: example.com\r\n\
Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    let page = "<html>response page</html>";
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{page}",
        page.len()
    );
    let put = "PUT /data.bin HTTP/1.1\r\nHost: example.com\r\nContent-Length: 8\r\n\r\nput body";
    let done = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
    let packets = conversation(
        80,
        &[
            (true, post.as_bytes()),
            (false, reply.as_bytes()),
            (true, put.as_bytes()),
            (false, done.as_bytes()),
        ],
    );
    let rules = r#"alert http any any -> any any (file.data; content:"Titi"; file.data; content:"bateau"; sid:1;)
alert http any any -> any any (file.data; content:"bateau"; content:"minet"; sid:2;)
alert http any any -> any any (flow:to_server; file.data; content:"form-data"; sid:3;)
alert http any any -> any any (flow:to_client; file.data; content:"Titi"; sid:4;)
alert http any any -> any any (file.data; content:"response page"; sid:5;)
alert http any any -> any any (http.method; content:"POST"; file.data; content:"response page"; sid:6;)
alert http any any -> any any (flow:to_server; file.data; content:"t"; sid:7;)
alert http any any -> any any (http.request_body; content:"form-data"; sid:8;)
alert http any any -> any any (flow:to_server; file.data; content:"plain field"; sid:9;)
alert http any any -> any any (http.method; content:"PUT"; file.data; content:"put body"; bsize:8; sid:10;)
alert http any any -> any any (file.data; content:"toto"; file.name; content:"toto.txt"; sid:11;)"#;
    // 1: two files, one each; 2: no one file holds both; 3, 9: a form's framing and its fields without a file name
    // are not files; 4: the response body is not the request's; 6: a request-side rule reads the request's files;
    // 7: both files and the PUT body match, once per transaction (two).
    assert_eq!(sids(rules, &packets), vec![1, 5, 7, 7, 8, 10, 11]);
}

/// Sets the IPv4 header and TCP checksums of a raw IPv4 TCP packet to their right values.
fn with_checksums(mut p: Vec<u8>) -> Vec<u8> {
    use flowbundle_decode::wire::checksum::{checksum, finish, pseudo_header, sum};
    let ihl = usize::from(p[0] & 0x0f) * 4;
    p[10..12].fill(0);
    let c = checksum(&p[..ihl]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    let src = std::net::IpAddr::from([p[12], p[13], p[14], p[15]]);
    let dst = std::net::IpAddr::from([p[16], p[17], p[18], p[19]]);
    p[ihl + 16..ihl + 18].fill(0);
    let len = (p.len() - ihl) as u32;
    let c = finish(pseudo_header(src, dst, 6, len) + sum(&p[ihl..]));
    p[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
    p
}

/// The checksum keywords, `tcp.wscale` and `l3_proto` on real packets: a SYN with right checksums, one with both
/// checksums zero (wrong), and a SYN with right checksums carrying the window scale option (shift 7).
#[test]
fn checksum_wscale_and_l3_proto_keywords_on_packets() {
    let good = with_checksums(segment(true, 80, 1, 0, SYN, b""));
    let bad = segment(true, 81, 1, 0, SYN, b"");
    let mut opt = segment(true, 82, 1, 0, SYN, b"");
    // Data offset 6 words: the window scale option (kind 3, length 3, shift 7) and an end-of-list byte.
    opt[32] = 0x60;
    opt.extend_from_slice(&[3, 3, 7, 0]);
    opt[2..4].copy_from_slice(&44u16.to_be_bytes());
    let opt = with_checksums(opt);
    let rules = "alert tcp any any -> any any (tcpv4-csum:valid; sid:1;)\n\
                 alert tcp any any -> any any (tcpv4-csum:invalid; sid:2;)\n\
                 alert ip any any -> any any (ipv4-csum:valid; sid:3;)\n\
                 alert ip any any -> any any (ipv4-csum:invalid; sid:4;)\n\
                 alert tcp any any -> any any (tcpv6-csum:valid; sid:5;)\n\
                 alert tcp any any -> any any (l3_proto:ipv4; flags:S; sid:6;)\n\
                 alert tcp any any -> any any (tcp.wscale:7; sid:7;)\n\
                 alert tcp any any -> any any (tcp.wscale:!7; sid:8;)\n\
                 alert tcp any any -> any any (l3_proto:ipv6; sid:9;)\n\
                 alert udp any any -> any any (udpv4-csum:invalid; sid:10;)";
    assert_eq!(
        sids(rules, &[good, bad, opt]),
        vec![1, 1, 2, 3, 3, 4, 6, 6, 6, 7]
    );
}

/// A malformed value is a load error naming the keyword; an unknown keyword value is not silently accepted.
#[test]
fn checksum_and_l3_proto_values_are_checked_at_load() {
    for (rule, name) in [
        (
            "alert tcp any any -> any any (tcpv4-csum:maybe; sid:1;)",
            "tcpv4-csum",
        ),
        (
            "alert ip any any -> any any (l3_proto:ipx; sid:1;)",
            "l3_proto",
        ),
        (
            "alert tcp any any -> any any (tcp.wscale:300; sid:1;)",
            "tcp.wscale",
        ),
    ] {
        let (_, report) = RuleSet::parse(rule, &Vars::default()).expect("parses");
        assert_eq!((report.loaded, report.errors_total), (0, 1), "{rule}");
        assert!(
            report.errors[0].message.contains(name),
            "{:?}",
            report.errors
        );
    }
}

/// `hostbits`: a bit set on the packet's source host (the default direction) is seen by a later packet of another
/// flow from that host with `src`, not with `dst`; before it is set, nothing is.
#[test]
fn hostbits_set_on_one_flow_are_seen_on_another() {
    let rules = "alert tcp any any -> any 80 (flags:S; hostbits:set,seen; hostbits:noalert; sid:1;)\n\
                 alert tcp any any -> any 81 (flags:S; hostbits:isset,seen,src; sid:2;)\n\
                 alert tcp any any -> any 81 (flags:S; hostbits:isset,seen,dst; sid:3;)\n\
                 alert tcp any any -> any 81 (flags:S; hostbits:isnotset,seen,dst; sid:4;)";
    let packets = [
        segment(true, 81, 1, 0, SYN, b""),
        segment(true, 80, 1, 0, SYN, b""),
        segment(true, 81, 1, 0, SYN, b""),
    ];
    let (set, report) = RuleSet::parse(rules, &Vars::default()).expect("rules parse");
    assert_eq!((report.loaded, report.errors_total), (4, 0));
    let set = Arc::new(set);
    let mut e = Engine::with_shared(EngineConfig::default(), None, Some(set.clone()));
    let mut ctx = e.new_ctx();
    let mut pre = Prestage::new(e.config());
    for (i, p) in packets.iter().enumerate() {
        let rec = PacketRecord {
            ts_ns: (i as u64 + 1) * 1_000_000_000,
            orig_len: p.len() as u32,
            interface: 0,
            link_type: LinkType::RAW,
            data: p,
        };
        e.process_serial(&mut ctx, &mut pre, i as u64, &rec);
    }
    let mut events = e.finish([ctx]).events;
    // Host bits cross flows: they are checked and set where alerts meet in input order.
    crate::AlertFilter::new(&set)
        .expect("the rules have hostbits")
        .retain(&mut events);
    let mut v: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Alert(a) => Some(a.signature_id),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    assert_eq!(v, vec![2, 4, 4]);
}

/// An IPv4 UDP datagram from `10.0.0.1:5060` to `10.0.0.2:5060` (or back, `from_client` false).
fn datagram(from_client: bool, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = if from_client { (1, 2) } else { (2, 1) };
    let mut b = vec![0x45, 0];
    b.extend_from_slice(&(28 + payload.len() as u16).to_be_bytes());
    b.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0]);
    b.extend_from_slice(&[10, 0, 0, src, 10, 0, 0, dst]);
    b.extend_from_slice(&5060u16.to_be_bytes());
    b.extend_from_slice(&5060u16.to_be_bytes());
    b.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(payload);
    b
}

/// A SIP INVITE carrying a session description (suricata-verify's sip-sdp body), in compact and long header
/// forms, and its `200 OK` with the same description.
fn sip_call() -> Vec<Vec<u8>> {
    let sdp: &[u8] = b"v=0\r\n\
o=SIPPS 105015165 105015162 IN IP4 192.168.1.2\r\n\
s=SIP call\r\n\
i=Session Description Protocol\r\n\
u=https://www.sdp.proto\r\n\
e=j.doe@example.com (Jane Doe)\r\n\
p=+1 617 555-6011 (Jane Doe)\r\n\
c=IN IP4 192.168.1.2\r\n\
b=AS:64\r\n\
t=3034423619 3042462419\r\n\
r=604800 3600 0 90000\r\n\
z=2882844526 -1h 2898848070 0\r\n\
k=prompt\r\n\
a=sendrecv\r\n\
m=audio 30000 RTP/AVP 0 8 97 2 3\r\n\
i=media info\r\n\
c=IN IP4 192.168.1.2\r\n\
k=prompt\r\n\
a=rtpmap:0 pcmu/8000\r\n";
    let mut invite = format!(
        "INVITE sip:bob@example.com SIP/2.0\r\n\
v: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n\
f: \"alice\" <sip:alice@example.org>;tag=1\r\n\
t: <sip:bob@example.com>\r\n\
To: <sip:robert@example.com>\r\n\
User-Agent: TestPhone 1.0\r\n\
c: application/sdp\r\n\
l: {}\r\n\r\n",
        sdp.len()
    )
    .into_bytes();
    invite.extend_from_slice(sdp);
    let mut ok = format!(
        "SIP/2.0 200 OK\r\n\
Via: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1\r\n\
From: \"alice\" <sip:alice@example.org>;tag=1\r\n\
To: <sip:bob@example.com>;tag=2\r\n\
Content-Type: application/sdp\r\n\
Content-Length: {}\r\n\r\n",
        sdp.len()
    )
    .into_bytes();
    ok.extend_from_slice(sdp);
    vec![datagram(true, &invite), datagram(false, &ok)]
}

#[test]
fn sip_line_buffers_read_requests_to_the_server_and_responses_to_the_client() {
    let rules = r#"alert sip any any -> any any (sip.method; content:"INVITE"; bsize:6; sid:1;)
alert sip any any -> any any (sip.uri; content:"sip:bob@example.com"; startswith; endswith; sid:2;)
alert sip any any -> any any (sip.request_line; content:"INVITE sip:bob@example.com SIP/2.0"; bsize:34; sid:3;)
alert sip any any -> any any (sip.stat_code; content:"200"; bsize:3; sid:4;)
alert sip any any -> any any (sip.stat_msg; content:"OK"; bsize:2; sid:5;)
alert sip any any -> any any (sip.response_line; content:"SIP/2.0 200 OK"; bsize:14; sid:6;)
alert sip any any -> any any (flow:to_server; sip.protocol; content:"SIP/2.0"; bsize:7; sid:7;)
alert sip any any -> any any (flow:to_client; sip.protocol; content:"SIP/2.0"; sid:8;)
alert sip any any -> any any (sip.stat_code; content:"INVITE"; sid:10;)
alert sip any any -> any any (sip.method; content:"OK"; sid:11;)
"#;
    assert_eq!(sids(rules, &sip_call()), vec![1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn sip_header_buffers_expand_compact_names_and_hold_one_value_each() {
    let rules = r#"alert sip any any -> any any (flow:to_server; sip.from; content:"alice"; sid:1;)
alert sip any any -> any any (flow:to_server; sip.to; content:"<sip:robert@example.com>"; startswith; endswith; sid:2;)
alert sip any any -> any any (flow:to_server; sip.to; content:"bob"; content:"robert"; distance:0; sid:3;)
alert sip any any -> any any (flow:to_server; sip.via; content:"SIP/2.0/UDP"; startswith; sid:4;)
alert sip any any -> any any (flow:to_server; sip.user_agent; content:"TestPhone"; sid:5;)
alert sip any any -> any any (flow:to_client; sip.user_agent; content:"TestPhone"; sid:6;)
alert sip any any -> any any (flow:to_server; sip.content_type; content:"application/sdp"; bsize:15; sid:7;)
alert sip any any -> any any (flow:to_client; sip.content_length; content:"418"; bsize:3; sid:8;)
alert sip any any -> any any (flow:to_client; sip.to; content:"tag=2"; endswith; sid:9;)
alert sip any any -> any any (sip.to; content:!"bob"; sid:10;)
"#;
    // 3: the two `To` values are separate buffers; 6: the response has no User-Agent; 10: robert's lacks "bob".
    assert_eq!(sids(rules, &sip_call()), vec![1, 2, 4, 5, 7, 8, 9, 10]);
}

#[test]
fn sdp_buffers_read_the_session_description_of_either_direction() {
    let rules = r#"alert sip any any -> any any (flow:to_server; sdp.origin; content:"SIPPS 105015165 105015162 IN IP4 192.168.1.2"; sdp.session_name; content:"SIP call"; sdp.session_info; content:"Session Description Protocol"; sid:1;)
alert sip any any -> any any (flow:to_client; sdp.uri; content:"https://www.sdp.proto"; sdp.email; content:"j.doe@example.com (Jane Doe)"; sdp.phone_number; content:"+1 617 555-6011"; sid:2;)
alert sip any any -> any any (sdp.connection_data; content:"IN IP4 192.168.1.2"; bsize:18; sdp.bandwidth; content:"AS:64"; sid:3;)
alert sip any any -> any any (flow:to_server; sdp.time; content:"3034423619 3042462419"; sdp.repeat_time; content:"604800 3600 0 90000"; sdp.timezone; content:"-1h"; sid:4;)
alert sip any any -> any any (flow:to_server; sdp.encryption_key; content:"prompt"; sdp.attribute; content:"sendrecv"; bsize:8; sid:5;)
alert sip any any -> any any (flow:to_server; sdp.media.media; content:"audio 30000 RTP/AVP"; startswith; sdp.media.encryption_key; content:"prompt"; sdp.media.connection_data; content:"192.168.1.2"; sdp.media.media_info; content:"media info"; sid:6;)
alert sip any any -> any any (sdp.attribute; content:"rtpmap"; sid:7;)
alert sip any any -> any any (sdp.session_name; content:"other"; sid:8;)
"#;
    // 3: once per message (the request's and the response's descriptions); 7: the media's attributes are not the
    // session's.
    assert_eq!(sids(rules, &sip_call()), vec![1, 2, 3, 3, 4, 5, 6]);
}

#[test]
fn sip_over_tcp_reads_messages_whatever_their_segments() {
    let register: &[u8] = b"REGISTER sip:sip.cybercity.dk SIP/2.0\r\nFrom: <sip:a@b>\r\nContent-Length: 4\r\n\r\nbody\
OPTIONS sip:sip.cybercity.dk SIP/2.0\r\nContent-Length: 0\r\n\r\n";
    let reply: &[u8] = b"SIP/2.0 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
    let (a, b) = register.split_at(30);
    let packets = conversation(5060, &[(true, a), (true, b), (false, reply)]);
    let rules = r#"alert sip any any -> any any (sip.method; content:"REGISTER"; sid:1;)
alert sip any any -> any any (sip.method; content:"OPTIONS"; sid:2;)
alert sip any any -> any any (sip.uri; content:"sip:sip.cybercity.dk"; bsize:20; sid:3;)
alert sip any any -> any any (sip.stat_msg; content:"Unauthorized"; sid:4;)
alert sip any any -> any any (sip.content_length; content:"4"; bsize:1; sid:5;)
"#;
    // 3: both requests' URIs, one alert per transaction.
    assert_eq!(sids(rules, &packets), vec![1, 2, 3, 3, 4, 5]);
}

/// Each SIP row of the buffer table (`sip.*`, `sdp.*`) is a sticky buffer of the keyword table under its name.
#[test]
fn sip_keywords_are_sticky_buffers_of_sip_in_the_keyword_table() {
    let sip = flowbundle_rules::Buffer::ALL
        .into_iter()
        .filter(|b| b.app_proto() == Some("sip"));
    for b in sip {
        let name = b.name();
        let k = flowbundle_rules::keyword::lookup(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(k.buffer(), Some(name));
    }
}

/// Every row of the buffer table that belongs to SIP (`sip.*`, `sdp.*`) reads its field of a message that has them
/// all: the SIP buffers a message feeds are the table's, and a row added there without its field here fails.
#[test]
fn every_sip_buffer_reads_its_field() {
    let sip: Vec<flowbundle_rules::Buffer> = flowbundle_rules::Buffer::ALL
        .into_iter()
        .filter(|b| b.app_proto() == Some("sip"))
        .collect();
    assert!(sip.len() >= 30, "{sip:?}");
    // A few rules a run: a packet raises at most `packet-alert-max` (15) alerts.
    let mut missing: Vec<&str> = Vec::new();
    for chunk in sip.chunks(5) {
        let rules: String = chunk
            .iter()
            .enumerate()
            .map(|(i, b)| {
                format!(
                    "alert sip any any -> any any ({}; pcre:\"/./s\"; sid:{};)\n",
                    b.name(),
                    i + 1
                )
            })
            .collect();
        let fired = sids(&rules, &sip_call());
        missing.extend(
            chunk
                .iter()
                .enumerate()
                .filter(|(i, _)| !fired.contains(&(*i as u32 + 1)))
                .map(|(_, b)| b.name()),
        );
    }
    assert!(missing.is_empty(), "no value for {missing:?}");
}

/// The alerts `rules` raise on `packets` (one second apart), in the order the engine reports them; every rule must
/// load.
fn alert_events(rules: &str, packets: &[Vec<u8>]) -> Vec<crate::AlertEvent> {
    events(rules, packets)
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Alert(a) => Some(*a),
            _ => None,
        })
        .collect()
}

/// Every event `rules` raise on `packets` (one second apart), flow records included; every rule must load.
fn events(rules: &str, packets: &[Vec<u8>]) -> Vec<crate::Event> {
    let (set, report) = RuleSet::parse(rules, &Vars::default()).expect("rules parse");
    assert_eq!(report.skipped, 0, "{:?}", report.skipped_rules);
    let mut e = Engine::with_shared(EngineConfig::default(), None, Some(Arc::new(set)));
    let mut ctx = e.new_ctx();
    let mut pre = Prestage::new(e.config());
    for (i, p) in packets.iter().enumerate() {
        let rec = PacketRecord {
            ts_ns: (i as u64 + 1) * 1_000_000_000,
            orig_len: p.len() as u32,
            interface: 0,
            link_type: LinkType::RAW,
            data: p,
        };
        e.process_serial(&mut ctx, &mut pre, i as u64, &rec);
    }
    e.finish([ctx]).events
}

/// An alert on an HTTP transaction's buffer carries the transaction as it stood when the rule matched (EVE `http`
/// beside the alert, and its `tx_id`, as Suricata writes them): the request line alone when the line arrived before
/// the rest of the head, the whole request with its headers, the response's fields once the response came; an alert
/// on the payload carries neither.
#[test]
fn http_alerts_carry_their_transaction() {
    let rules = r#"alert http any any -> any any (http.method; content:"GET"; sid:1;)
alert http any any -> any any (http.user_agent; content:"curl"; sid:2;)
alert http any any -> any any (http.stat_code; content:"404"; sid:3;)
alert tcp any any -> any 80 (content:"Accept"; sid:4;)
alert http any any -> any any (http.uri; content:"/second"; sid:5;)"#;
    let packets = conversation(
        80,
        &[
            // The request line alone, then the rest of the head.
            (true, b"GET /first HTTP/1.1\r\n"),
            (true, b"Host: example.com\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n\r\n"),
            (
                false,
                b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 3\r\n\r\nno\n",
            ),
            (true, b"GET /second HTTP/1.1\r\nHost: example.com\r\n\r\n"),
        ],
    );
    let mut alerts = alert_events(rules, &packets);
    alerts.sort_by_key(|a| (a.signature_id, a.tx_id));
    let http = |a: &crate::AlertEvent| match a.tx.as_deref() {
        Some(flowbundle_protocols::AppEvent::Http(h)) => Some(h.clone()),
        _ => None,
    };
    let got: Vec<(u32, Option<u64>)> = alerts.iter().map(|a| (a.signature_id, a.tx_id)).collect();
    assert_eq!(
        got,
        [
            (1, Some(0)),
            (1, Some(1)),
            (2, Some(0)),
            (3, Some(0)),
            (4, None),
            (5, Some(1))
        ]
    );
    // sid 1 on the first request: its line was all the transaction had.
    let line = http(&alerts[0]).expect("an http object");
    assert_eq!(line.url.as_deref(), Some("/first"));
    assert_eq!(line.http_method.as_deref(), Some("GET"));
    assert_eq!(line.protocol.as_deref(), Some("HTTP/1.1"));
    assert_eq!((line.hostname.as_deref(), line.status), (None, None));
    // sid 2: the whole request, no response yet.
    let request = http(&alerts[2]).expect("an http object");
    assert_eq!(request.hostname.as_deref(), Some("example.com"));
    assert_eq!(request.http_user_agent.as_deref(), Some("curl/8.0"));
    assert_eq!(request.status, None);
    // sid 3: the response's fields too, its media type without parameters.
    let response = http(&alerts[3]).expect("an http object");
    assert_eq!(response.status, Some(404));
    assert_eq!(response.http_content_type.as_deref(), Some("text/html"));
    assert_eq!(response.url.as_deref(), Some("/first"));
    // sid 4 matched the payload: no transaction.
    assert!(alerts[4].tx.is_none());
    // sid 5 and the second sid 1: the second transaction.
    assert_eq!(
        http(&alerts[5]).and_then(|h| h.url).as_deref(),
        Some("/second")
    );
    assert_eq!(http(&alerts[1]).map(|h| h.tx_id), Some(1));
}

/// What an alert's EVE record writes of the flow's and the packet's variables (the top-level `metadata`) is read
/// once every rule has run on the packet, as Suricata's loggers read it: rules on one packet that set and read
/// flowbits, a flow integer and a packet variable, on the payload, the stream and an HTTP buffer, give every alert
/// of the packet the same variables, whichever order the rules are loaded (and so run) in; an alert's own capture
/// (`alert.context`) stays its own.
#[test]
fn alert_metadata_is_the_packets_whatever_order_the_rules_ran_in() {
    let rules = [
        r#"alert tcp any any -> any 80 (flow:to_server; content:"GET"; flowbits:set,get; sid:1;)"#,
        r#"alert tcp any any -> any 80 (flow:to_server; content:"curl"; flowbits:isnotset,ua; flowbits:set,ua; pcre:"/curl.(?P<pkt_ver>\d+)/"; sid:2;)"#,
        r#"alert http any any -> any any (http.user_agent; content:"curl"; flowint:uas,+,1; pcre:"/^(?P<alert_tool>[a-z]+)/"; sid:3;)"#,
    ];
    let packets = conversation(
        80,
        &[
            (
                true,
                b"GET /x HTTP/1.1\r\nHost: a\r\nUser-Agent: curl/8\r\n\r\n",
            ),
            (false, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        ],
    );
    type Written = (
        u32,
        Vec<(String, Vec<u8>)>,
        Vec<String>,
        Vec<(String, u32)>,
        Vec<(String, Vec<u8>)>,
    );
    let run = |order: [usize; 3]| -> Vec<Written> {
        let text: Vec<&str> = order.iter().map(|&i| rules[i]).collect();
        let mut got: Vec<Written> = alert_events(&text.join("\n"), &packets)
            .into_iter()
            .map(|a| {
                let v = a.vars.expect("the alert's variables");
                // The flowbits in the order their names were met at load, which the order of the file decides.
                let mut bits = v.flowbits;
                bits.sort();
                assert!(v.flowvars.is_empty());
                (a.signature_id, v.context, bits, v.flowints, v.pktvars)
            })
            .collect();
        got.sort();
        got
    };
    let meta = |sid: u32, context: &[(&str, &str)]| -> Written {
        (
            sid,
            context
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
            vec!["get".to_string(), "ua".to_string()],
            vec![("uas".to_string(), 1)],
            vec![("ver".to_string(), b"8".to_vec())],
        )
    };
    let want = vec![meta(1, &[]), meta(2, &[]), meta(3, &[("tool", "curl")])];
    assert_eq!(run([0, 1, 2]), want);
    assert_eq!(run([2, 1, 0]), want);
    assert_eq!(run([1, 2, 0]), want);
}

/// A flow record writes the flow's variables as its end left them (Suricata's `metadata` and `traffic` on
/// `event_type: flow`), and what an `entropy` keyword measured stays on the flow under the buffer's name whether or
/// not its rule matched (`metadata.entropy.file_data`), on the flow record and on the alerts and transaction
/// records the packet that measured it raised.
#[test]
fn flow_records_carry_the_flows_variables_and_measured_entropy() {
    let rules = [
        r#"alert http any any -> any any (http.user_agent; content:"curl"; flowbits:set,traffic/id/curl; flowbits:set,seen; flowint:uas,+,1; sid:1;)"#,
        r#"alert http any any -> any any (file.data; entropy: value > 7; sid:2;)"#,
        r#"alert http any any -> any any (file.data; content:"abab"; sid:3;)"#,
    ]
    .join("\n");
    let packets = conversation(
        80,
        &[
            (
                true,
                b"GET /x HTTP/1.1\r\nHost: a\r\nUser-Agent: curl/8\r\n\r\n",
            ),
            (
                false,
                b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nabababab",
            ),
        ],
    );
    let events = events(&rules, &packets);
    let flows: Vec<&crate::event::FlowRecord> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Flow(r) => Some(&**r),
            _ => None,
        })
        .collect();
    assert_eq!(flows.len(), 1);
    let v = flows[0].vars.as_deref().expect("the flow's variables");
    assert_eq!(v.flowbits, ["traffic/id/curl", "seen"]);
    assert_eq!(v.flowints, [("uas".to_string(), 1)]);
    // "abababab": one bit per byte, measured by sid 2, which did not match.
    assert_eq!(v.entropy, [("file_data".to_string(), 1.0)]);
    assert!(v.context.is_empty() && v.pktvars.is_empty() && v.flowvars.is_empty());
    let alerts: Vec<(u32, Vec<(String, f64)>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Alert(a) => Some((
                a.signature_id,
                a.vars
                    .as_deref()
                    .map(|v| v.entropy.clone())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect();
    // The body's alert is read once the packet's rules have all run: the measure is there.
    assert_eq!(
        alerts,
        [(1, vec![]), (3, vec![("file_data".to_string(), 1.0)])]
    );
    // The HTTP transaction's record, logged by the response's packet, writes the variables as that packet's
    // detection left them, as Suricata's transaction loggers do.
    let http: Vec<&crate::event::AppRecord> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::App(r) if r.event_type() == "http" => Some(&**r),
            _ => None,
        })
        .collect();
    assert_eq!(http.len(), 1);
    let hv = http[0].vars.as_deref().expect("the record's variables");
    assert_eq!(hv.flowbits, v.flowbits);
    assert_eq!(hv.entropy, [("file_data".to_string(), 1.0)]);
    // A flow no rule set anything on writes none.
    let plain = events_without_vars(&packets);
    assert!(plain.iter().all(|r| r.vars.is_none()));
}

fn events_without_vars(packets: &[Vec<u8>]) -> Vec<crate::event::FlowRecord> {
    events(
        r#"alert http any any -> any any (http.user_agent; content:"wget"; sid:9;)"#,
        packets,
    )
    .into_iter()
    .filter_map(|e| match e.kind {
        EventKind::Flow(r) => Some(*r),
        _ => None,
    })
    .collect()
}
