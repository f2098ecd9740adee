//! Sticky buffers of the application-layer parsers (DNS, TLS, SSH, the HTTP buffers derived from lines and
//! headers), transforms and `urilen`, on buffers written as Suricata's keyword documentation shows them.

use flowbundle_rules::{
    AlertRecord, Buffer, Direction, FlowMatchState, HttpBuffer, LoadOptions, PacketCtx, RuleSet,
    Transport, Vars,
};

fn load(text: &str) -> RuleSet {
    let opts = LoadOptions {
        strict: true,
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    match RuleSet::parse_with(&[("t", text.as_bytes())], &opts) {
        Ok((rs, _)) => rs,
        Err(e) => panic!("rules do not load: {e}"),
    }
}

fn ctx(dir: Direction, transport: Transport, app: &'static str) -> PacketCtx<'static> {
    PacketCtx {
        dir,
        transport,
        app_proto: Some(app),
        ..PacketCtx::default()
    }
}

/// Sids alerted by handing `parts` to the rules as one transaction.
fn app(rs: &RuleSet, parts: &[(Buffer, Direction, &[u8])]) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    for &(b, dir, data) in parts {
        let transport = if b == Buffer::DnsQuery {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        let c = PacketCtx {
            dst_port: 53,
            ..ctx(dir, transport, b.app_proto().unwrap_or("failed"))
        };
        rs.scan_app(&mut sc, &mut flow, &c, 0, b, data, &mut out);
    }
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort();
    s
}

fn http(rs: &RuleSet, parts: &[(HttpBuffer, &[u8])]) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    for &(kind, data) in parts {
        let dir = if kind.is_request() {
            Direction::ToServer
        } else {
            Direction::ToClient
        };
        let c = ctx(dir, Transport::Tcp, "http");
        rs.scan_http(&mut sc, &mut flow, &c, 0, kind, data, &mut out);
    }
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort();
    s
}

const TS: Direction = Direction::ToServer;
const TC: Direction = Direction::ToClient;

#[test]
fn dns_query_with_legacy_name_and_dotprefix() {
    // Suricata's documentation: `dns.query; dotprefix; content:".microsoft.com"; endswith;` matches the domain
    // and its subdomains, not `nomicrosoft.com`.
    let rs = load(
        r#"alert dns any any -> any any (dns.query; content:"google"; nocase; sid:1;)
alert udp any any -> any 53 (dns_query; content:"google.com"; endswith; sid:2;)
alert dns any any -> any any (dns.query; dotprefix; content:".microsoft.com"; endswith; sid:3;)
alert dns any any -> any any (dns.query; to_uppercase; content:"GOOGLE"; bsize:10; sid:4;)"#,
    );
    assert_eq!(
        app(&rs, &[(Buffer::DnsQuery, TS, b"google.com")]),
        vec![1, 2, 4]
    );
    assert_eq!(
        app(&rs, &[(Buffer::DnsQuery, TS, b"www.microsoft.com")]),
        vec![3]
    );
    assert_eq!(
        app(&rs, &[(Buffer::DnsQuery, TS, b"microsoft.com")]),
        vec![3]
    );
    assert_eq!(
        app(&rs, &[(Buffer::DnsQuery, TS, b"nomicrosoft.com")]),
        Vec::<u32>::new()
    );
}

#[test]
fn tls_sni_ja3_and_ssh_buffers() {
    let rs = load(
        r#"alert tls any any -> any any (flow:to_server; tls.sni; content:"evil.example"; isdataat:!1,relative; sid:1;)
alert tls any any -> any any (tls_sni; content:"evil"; startswith; sid:2;)
alert tls any any -> any any (ja3.hash; content:"e7d705a3286e19ea42f587b344ee6865"; sid:3;)
alert tls any any -> any any (ja3_hash; content:"e7d705a3286e19ea42f587b344ee6865"; tls.sni; content:"evil"; sid:4;)
alert tls any any -> any any (flow:to_client; ja3s.hash; content:"aaaa"; sid:5;)
alert tls any any -> any any (ja3.string; content:"771,"; startswith; sid:6;)
alert ssh any any -> any any (ssh.proto; content:"2.0"; bsize:3; sid:7;)
alert ssh any any -> any any (flow:to_client; ssh.software; content:"OpenSSH"; sid:8;)"#,
    );
    let hello: &[(Buffer, Direction, &[u8])] = &[
        (Buffer::TlsSni, TS, b"evil.example"),
        (Buffer::Ja3Hash, TS, b"e7d705a3286e19ea42f587b344ee6865"),
        (Buffer::Ja3String, TS, b"771,4865-4866,0-23,29,0"),
        (Buffer::Ja3sHash, TC, b"bbbb"),
    ];
    assert_eq!(app(&rs, hello), vec![1, 2, 3, 4, 6]);
    // The SNI must end where the content does (isdataat:!1,relative).
    assert_eq!(
        app(&rs, &[(Buffer::TlsSni, TS, b"evil.example.org")]),
        vec![2]
    );
    assert_eq!(app(&rs, &[(Buffer::Ja3sHash, TC, b"aaaa")]), vec![5]);
    // A to_client rule does not see the client's banner.
    let ssh: &[(Buffer, Direction, &[u8])] = &[
        (Buffer::SshProto, TS, b"2.0"),
        (Buffer::SshSoftware, TS, b"OpenSSH_9.6"),
    ];
    assert_eq!(app(&rs, ssh), vec![7]);
    assert_eq!(
        app(&rs, &[(Buffer::SshSoftware, TC, b"OpenSSH_9.6")]),
        vec![8]
    );
}

#[test]
fn http_lines_and_single_header_buffers() {
    let rs = load(
        r#"alert http any any -> any any (http.request_line; content:"GET /index.html HTTP/1.1"; bsize:24; sid:1;)
alert http any any -> any any (flow:to_server; http.protocol; content:"HTTP/1.1"; sid:2;)
alert http any any -> any any (http.response_line; content:"HTTP/1.1 404 Not Found"; sid:3;)
alert http any any -> any any (http.stat_msg; content:"Not Found"; bsize:9; sid:4;)
alert http any any -> any any (flow:to_server; http.header_names; content:"|0d 0a|Host|0d 0a|"; content:"|0d 0a 0d 0a|"; endswith; sid:5;)
alert http any any -> any any (http.content_type; content:"text/html"; startswith; sid:6;)
alert http any any -> any any (http.accept; content:"*/*"; bsize:3; sid:7;)
alert http any any -> any any (http.referer; content:"example.org"; sid:8;)
alert http any any -> any any (http.server; content:"nginx"; sid:9;)
alert http any any -> any any (http.location; content:"/next"; sid:10;)
alert http any any -> any any (http.content_len; content:"12"; bsize:2; sid:11;)
alert http any any -> any any (http.connection; to_lowercase; content:"keep-alive"; sid:12;)
alert http any any -> any any (http.uri; urilen:11; sid:13;)
alert http any any -> any any (urilen:>100,raw; sid:14;)
alert http any any -> any any (http.accept_lang; content:"en"; sid:15;)
alert http any any -> any any (http.accept_enc; content:"gzip"; sid:16;)
alert http any any -> any any (flow:to_server; http.start; content:"GET /index.html HTTP/1.1|0d 0a|Host|3a| a|0d 0a|"; startswith; content:"|0d 0a 0d 0a|"; endswith; sid:17;)
alert http any any -> any any (flow:to_client; http_start; content:"HTTP/1.1 404"; startswith; sid:18;)"#,
    );
    let tx: &[(HttpBuffer, &[u8])] = &[
        (HttpBuffer::RequestLine, b"GET /index.html HTTP/1.1"),
        (
            HttpBuffer::RequestHead,
            b"GET /index.html HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n",
        ),
        (HttpBuffer::ResponseHead, b"HTTP/1.1 404 Not Found\r\n\r\n"),
        (HttpBuffer::Method, b"GET"),
        (HttpBuffer::Uri, b"/index.html"),
        (
            HttpBuffer::RequestHeaders,
            b"Host: a\r\nAccept: */*\r\nReferer: http://example.org/\r\nConnection: Keep-Alive\r\nAccept-Language: en\r\nAccept-Encoding: gzip\r\n",
        ),
        (HttpBuffer::ResponseLine, b"HTTP/1.1 404 Not Found"),
        (HttpBuffer::StatusCode, b"404"),
        (
            HttpBuffer::ResponseHeaders,
            b"Server: nginx\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 12\r\nLocation: /next\r\n",
        ),
    ];
    assert_eq!(
        http(&rs, tx),
        vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18]
    );
    let long_uri = [b'a'; 120];
    assert_eq!(http(&rs, &[(HttpBuffer::Uri, &long_uri)]), vec![14]);
}

#[test]
fn app_buffer_rules_that_cannot_hold_are_skipped_with_a_reason() {
    let (_, rep) = RuleSet::parse(
        r#"alert http any any -> any any (dns.query; content:"a"; sid:1;)
alert tls any any -> any any (tls.sni; content:"a"; http.uri; content:"b"; sid:2;)
alert tcp any any -> any any (content:"x"; dotprefix; sid:3;)
alert dns any any -> any any (dns.query; dotprefix:1; content:"a"; sid:4;)
alert http any any -> any any (urilen:abc; sid:5;)
alert http any any -> any any (urilen:5,sideways; sid:6;)"#,
        &Vars::new(),
    )
    .unwrap();
    assert_eq!(rep.loaded, 0);
    let reasons: Vec<&str> = rep.skip_reasons.keys().map(String::as_str).collect();
    assert_eq!(
        reasons,
        [
            "dns buffer on a non-dns protocol",
            "dotprefix on the payload",
            "http.uri with tls buffers"
        ]
    );
    assert_eq!(rep.errors_total, 3, "{:?}", rep.errors);
    for e in &rep.errors {
        assert!(!e.message.contains('\n'), "{}", e.message);
    }
}

#[test]
fn payload_and_http_buffers_in_one_rule_match_in_either_order() {
    // Each buffer is checked where it is inspected (the stream, the transaction); the rule matches the
    // transaction once both have, whichever came first.
    let rs = load(
        r#"alert http any any -> any any (flow:to_server; http.uri; content:"/gate.php"; pkt_data; content:"X-Bot|3a| 1"; sid:1;)
alert http any any -> any any (flow:to_server; http.uri; content:"/gate.php"; pkt_data; content:"X-Bot|3a| 2"; sid:2;)"#,
    );
    let request: &[u8] = b"POST /gate.php HTTP/1.1\r\nX-Bot: 1\r\n\r\n";
    let c = ctx(TS, Transport::Tcp, "http");
    let run = |http_first: bool| {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        for step in [http_first, !http_first] {
            if step {
                rs.scan_http(
                    &mut sc,
                    &mut flow,
                    &c,
                    0,
                    HttpBuffer::Uri,
                    b"/gate.php",
                    &mut out,
                );
            } else {
                rs.scan_stream(&mut sc, &mut flow, &c, request, 0, &mut out);
            }
        }
        rs.finish_flow(&mut sc, &mut flow, &mut out);
        out.iter().map(|a| (a.sid, a.tx_id)).collect::<Vec<_>>()
    };
    assert_eq!(run(true), vec![(1, Some(0))]);
    assert_eq!(run(false), vec![(1, Some(0))]);
    // The http part alone, or the payload alone, is not a match.
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    rs.scan_stream(&mut sc, &mut flow, &c, request, 0, &mut out);
    rs.finish_flow(&mut sc, &mut flow, &mut out);
    assert!(out.is_empty());
    let mut flow = FlowMatchState::default();
    rs.scan_http(
        &mut sc,
        &mut flow,
        &c,
        0,
        HttpBuffer::Uri,
        b"/gate.php",
        &mut out,
    );
    assert!(out.is_empty());
}

#[test]
fn file_data_on_smtp_inspects_the_attachments() {
    // Suricata's `file.data` on SMTP: the decoded attachment, to the server. ET Open writes `alert smtp`, Snort 3's
    // community rules `alert tcp ... service:smtp`.
    let rs = load(
        r#"alert smtp any any -> any any (msg:"file_data smtp"; flow:to_server; file_data; content:"if was"; sid:1;)
alert tcp any any -> any 25 (msg:"snort"; flow:to_server; file_data; content:"PK|03 04|"; depth:4; service:smtp; sid:2;)
alert http any any -> any any (file_data; content:"if was"; sid:3;)
alert tcp any any -> any any (file_data; content:"if was"; sid:4;)"#,
    );
    let groups: Vec<Buffer> = rs
        .rules()
        .iter()
        .flat_map(|r| r.groups.iter().map(|g| g.buffer))
        .collect();
    assert_eq!(
        groups,
        vec![
            Buffer::SmtpFileData,
            Buffer::SmtpFileData,
            Buffer::HttpFileData,
            Buffer::HttpFileData
        ]
    );
    let mut c = ctx(TS, Transport::Tcp, "smtp");
    c.dst_port = 25;
    let sids = |data: &[u8]| {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_app(
            &mut sc,
            &mut flow,
            &c,
            0,
            Buffer::SmtpFileData,
            data,
            &mut out,
        );
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(sids(b"if was! My of"), vec![1]);
    assert_eq!(sids(b"PK\x03\x04 if was"), vec![1, 2]);
    assert_eq!(sids(b"nothing"), Vec::<u32>::new());
}

#[test]
fn file_data_on_ftp_data_inspects_the_transferred_file_either_way() {
    // `alert ftp-data` (Suricata) and Snort 3's `service:ftp-data` / `service:ftp` on `alert tcp`: the data
    // connection's file, to the server (STOR) or to the client (RETR).
    let rs = load(
        r#"alert ftp-data any any -> any any (msg:"stor"; flow:to_server; file.data; content:"MZ"; depth:2; sid:1;)
alert tcp $EXTERNAL_NET any -> $HOME_NET any (msg:"snort"; flow:to_client,established; file_data; content:"|EF BB BF 50 4B 03 04|",depth 7; service:ftp-data,imap,pop3; sid:2;)
alert tcp any any -> any any (msg:"ftp"; flow:to_server; file_data; content:"Passwords"; service:ftp; sid:3;)
alert ftp-data any any -> any any (msg:"any dir"; file.data; content:"MZ"; depth:2; sid:4;)"#,
    );
    for r in rs.rules() {
        assert!(
            r.groups.iter().all(|g| g.buffer == Buffer::FtpDataFileData),
            "sid {}",
            r.sid
        );
    }
    let sids = |dir: Direction, data: &[u8]| {
        let mut c = ctx(dir, Transport::Tcp, "ftp-data");
        c.established = true;
        // An outside server sends the file to a client at home (to_client), or the client uploads it.
        let (home, outside) = ("10.0.0.1".parse().unwrap(), "203.0.113.5".parse().unwrap());
        (c.src, c.dst) = match dir {
            Direction::ToClient => (outside, home),
            Direction::ToServer => (home, outside),
        };
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_app(
            &mut sc,
            &mut flow,
            &c,
            0,
            Buffer::FtpDataFileData,
            data,
            &mut out,
        );
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(sids(TS, b"MZ\x90\x00Passwords"), vec![1, 3, 4]);
    assert_eq!(sids(Direction::ToClient, b"MZ\x90\x00"), vec![4]);
    assert_eq!(
        sids(Direction::ToClient, b"\xEF\xBB\xBFPK\x03\x04..."),
        vec![2]
    );
    // Another protocol's flow: nothing.
    let mut c = ctx(TS, Transport::Tcp, "http");
    c.dst_port = 80;
    let mut out: Vec<AlertRecord> = Vec::new();
    rs.scan_app(
        &mut rs.scanner(),
        &mut FlowMatchState::default(),
        &c,
        0,
        Buffer::FtpDataFileData,
        b"MZ",
        &mut out,
    );
    assert!(out.is_empty());
}

/// Suricata's multiple buffer matching (its documentation's example): each selection of a multi-instance buffer
/// (`dns.query`, `dns.answers.rrname`, ...) is an instance of its own, so `dns.query; content:"example";
/// dns.query; content:".com";` alerts on one transaction asking for `example.net` and `something.com`, in either
/// order, while the contents of one selection must match within one name. A buffer with one value per
/// transaction (`tls.sni`) selected twice is one list, its contents matching that value.
#[test]
fn multi_instance_buffers_match_each_selection_on_its_own_value() {
    let rs = load(
        r#"alert dns any any -> any any (dns.query; content:"example"; dns.query; content:".com"; sid:1;)
alert dns any any -> any any (dns.query; content:"example"; content:".com"; sid:2;)
alert dns any any -> any any (dns.answers.rrname; content:"a.example"; dns.answers.rrname; content:"b.example"; sid:3;)
alert dns any any -> any any (dns.answers.rrname; content:"a.example"; content:"b.example"; sid:4;)
alert tls any any -> any any (tls.sni; content:"www."; tls.sni; content:".org"; sid:5;)"#,
    );
    let q = |name: &'static [u8]| (Buffer::DnsQuery, TS, name);
    assert_eq!(app(&rs, &[q(b"example.net"), q(b"something.com")]), [1]);
    assert_eq!(app(&rs, &[q(b"something.com"), q(b"example.net")]), [1]);
    assert_eq!(app(&rs, &[q(b"example.com")]), [1, 2]);
    assert_eq!(app(&rs, &[q(b"example.net")]), Vec::<u32>::new());
    let each = |names: &[&[u8]]| {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        let c = PacketCtx {
            src_port: 53,
            ..ctx(TC, Transport::Udp, "dns")
        };
        let parts = names.iter().copied();
        rs.scan_app_each(
            &mut sc,
            &mut flow,
            &c,
            0,
            Buffer::DnsAnswersRrname,
            parts,
            &mut out,
        );
        out.iter().map(|a| a.sid).collect::<Vec<_>>()
    };
    assert_eq!(each(&[b"a.example", b"c.example", b"b.example"]), [3]);
    assert_eq!(each(&[b"b.example", b"a.example"]), [3]);
    assert_eq!(each(&[b"a.example"]), Vec::<u32>::new());
    let sni = |name: &'static [u8]| (Buffer::TlsSni, TS, name);
    assert_eq!(app(&rs, &[sni(b"www.example.org")]), [5]);
    assert_eq!(app(&rs, &[sni(b"www.example.com")]), Vec::<u32>::new());
}

/// The buffers Suricata 8 made multi-instance besides the DNS names (`krb5.cname`, `krb5.sname`, `ftp.reply`,
/// `ftp.completion_code`, `http.request_header`, `http.response_header`): two selections of one may match two
/// values of a transaction (a client name's two components, a reply's two lines, two header fields), while the
/// contents of one selection match within one value.
#[test]
fn suricata_8_multi_instance_buffers_match_each_selection_on_its_own_value() {
    let rs = load(
        r#"alert krb5 any any -> any any (krb5.cname; content:"alice"; krb5.cname; content:"admin"; sid:1;)
alert krb5 any any -> any any (krb5.cname; content:"alice"; content:"admin"; sid:2;)
alert krb5 any any -> any any (krb5.sname; content:"krbtgt"; krb5.sname; content:"EXAMPLE.ORG"; sid:3;)
alert ftp any any -> any any (ftp.reply; content:"Opening BINARY"; ftp.reply; content:"Transfer complete"; sid:4;)
alert ftp any any -> any any (ftp.reply; content:"Opening BINARY"; content:"Transfer complete"; sid:5;)
alert ftp any any -> any any (ftp.completion_code; content:"150"; ftp.completion_code; content:"226"; sid:6;)
alert http any any -> any any (http.request_header; content:"Host: a.example"; http.request_header; content:"Accept: */*"; sid:7;)
alert http any any -> any any (http.request_header; content:"Host: a.example"; content:"Accept"; sid:8;)
alert http any any -> any any (http.response_header; content:"Server: x"; http.response_header; content:"Via: y"; sid:9;)"#,
    );
    let each = |b: Buffer, dir: Direction, parts: &[&[u8]]| {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        let c = ctx(dir, Transport::Tcp, b.app_proto().unwrap_or("failed"));
        rs.scan_app_each(
            &mut sc,
            &mut flow,
            &c,
            0,
            b,
            parts.iter().copied(),
            &mut out,
        );
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(each(Buffer::Krb5Cname, TC, &[b"alice", b"admin"]), [1]);
    assert_eq!(each(Buffer::Krb5Cname, TC, &[b"admin", b"alice"]), [1]);
    assert_eq!(each(Buffer::Krb5Cname, TC, &[b"alice/admin"]), [1, 2]);
    assert_eq!(each(Buffer::Krb5Cname, TC, &[b"alice"]), Vec::<u32>::new());
    assert_eq!(
        each(Buffer::Krb5Sname, TC, &[b"krbtgt", b"EXAMPLE.ORG"]),
        [3]
    );
    let reply: [&[u8]; 2] = [
        b"Opening BINARY mode data connection for temp.txt (1164 bytes).",
        b"Transfer complete.",
    ];
    assert_eq!(each(Buffer::FtpReply, TC, &reply), [4]);
    assert_eq!(each(Buffer::FtpReply, TC, &reply[..1]), Vec::<u32>::new());
    assert_eq!(each(Buffer::FtpCompletionCode, TC, &[b"150", b"226"]), [6]);
    assert_eq!(
        each(Buffer::FtpCompletionCode, TC, &[b"226"]),
        Vec::<u32>::new()
    );
    let request: [&[u8]; 3] = [b"Host: a.example", b"User-Agent: t", b"Accept: */*"];
    assert_eq!(each(Buffer::HttpRequestHeaderLine, TS, &request), [7]);
    assert_eq!(
        each(Buffer::HttpRequestHeaderLine, TS, &request[..2]),
        Vec::<u32>::new()
    );
    assert_eq!(
        each(
            Buffer::HttpResponseHeaderLine,
            TC,
            &[b"Via: y", b"Server: x"]
        ),
        [9]
    );
}
