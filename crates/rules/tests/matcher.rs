//! Matching behaviour per modifier, per buffer, across chunk boundaries.

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

fn ctx(dir: Direction) -> PacketCtx<'static> {
    let (c, s) = (
        "10.0.0.1".parse().unwrap(),
        "93.184.216.34".parse().unwrap(),
    );
    match dir {
        Direction::ToServer => PacketCtx {
            dir,
            src: c,
            dst: s,
            src_port: 40000,
            dst_port: 80,
            app_proto: Some("http"),
            ..PacketCtx::default()
        },
        Direction::ToClient => PacketCtx {
            dir,
            src: s,
            dst: c,
            src_port: 80,
            dst_port: 40000,
            app_proto: Some("http"),
            ..PacketCtx::default()
        },
    }
}

/// Sids alerted for one direction's stream fed in `chunks`, after finishing the flow.
fn stream(rs: &RuleSet, chunks: &[&[u8]]) -> Vec<u32> {
    stream_records(rs, chunks).iter().map(|a| a.sid).collect()
}

fn stream_records(rs: &RuleSet, chunks: &[&[u8]]) -> Vec<AlertRecord> {
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out = Vec::new();
    let mut off = 0u64;
    let c = ctx(Direction::ToServer);
    for ch in chunks {
        rs.scan_stream(&mut sc, &mut flow, &c, ch, off, &mut out);
        off += ch.len() as u64;
    }
    rs.finish_flow(&mut sc, &mut flow, &mut out);
    out.sort();
    out
}

fn packet(rs: &RuleSet, payload: &[u8]) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = PacketCtx {
        transport: Transport::Udp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    rs.scan_packet(
        &mut sc,
        &mut FlowMatchState::default(),
        &c,
        payload,
        &mut out,
    );
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort();
    s
}

#[test]
fn offset_and_depth_count_from_the_stream_start() {
    let rs = load(
        r#"alert tcp any any -> any any (content:"abc"; offset:2; depth:5; sid:1;)
alert tcp any any -> any any (content:"GET",depth 3; sid:2;)"#,
    );
    assert_eq!(stream(&rs, &[b"xxabcyy"]), vec![1]);
    assert_eq!(stream(&rs, &[b"xabc"]), Vec::<u32>::new());
    assert_eq!(stream(&rs, &[b"xxxxxxabc"]), Vec::<u32>::new());
    assert_eq!(stream(&rs, &[b"GE", b"T /"]), vec![2]);
    assert_eq!(stream(&rs, &[b"xGET /"]), Vec::<u32>::new());
    // `depth` is relative to the stream, not to the packet: a later packet starting with GET does not match.
    assert_eq!(
        stream(&rs, &[b"POST /a\r\n\r\n", b"GET /"]),
        Vec::<u32>::new()
    );
}

#[test]
fn distance_and_within() {
    let rs = load(
        r#"alert tcp any any -> any any (content:"USER"; nocase; content:"root"; distance:1; within:10; sid:1;)
alert tcp any any -> any any (content:"a"; content:"b"; distance:-2; within:3; sid:2;)"#,
    );
    assert_eq!(stream(&rs, &[b"user  root"]), vec![1]);
    assert_eq!(
        stream(&rs, &[b"USERroot"]),
        Vec::<u32>::new(),
        "distance 1 needs a byte between"
    );
    assert_eq!(
        stream(&rs, &[b"USER 1234567root"]),
        Vec::<u32>::new(),
        "beyond within"
    );
    // Backtracking: the first USER is too far, the second one fits.
    assert_eq!(stream(&rs, &[b"USER xxxxxxxxxxxx USER root"]), vec![1]);
    // Negative distance: "b" may start up to two bytes before the end of "a".
    assert_eq!(stream(&rs, &[b"ba"]), vec![2]);
}

#[test]
fn negated_contents_and_nocase() {
    let rs = load(
        r#"alert udp any any -> any any (content:"GET"; content:!"Host"; sid:1;)
alert udp any any -> any any (content:"abc"; content:!"def"; distance:0; within:6; sid:2;)
alert udp any any -> any any (content:"MiXeD"; nocase; sid:3;)
alert udp any any -> any any (content:"MiXeD"; sid:4;)"#,
    );
    assert_eq!(packet(&rs, b"GET / HTTP/1.0\r\n\r\n"), vec![1]);
    assert_eq!(
        packet(&rs, b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"),
        Vec::<u32>::new()
    );
    assert_eq!(packet(&rs, b"abc12def"), Vec::<u32>::new());
    assert_eq!(packet(&rs, b"abc1234def"), vec![2]);
    assert_eq!(packet(&rs, b"mixed"), vec![3]);
    assert_eq!(packet(&rs, b"MiXeD"), vec![3, 4]);
}

#[test]
fn pcre_plain_relative_and_negated() {
    let rs = load(
        r#"alert udp any any -> any any (content:"id="; pcre:"/^\d{3,}/R"; sid:1;)
alert udp any any -> any any (content:"x"; pcre:!"/evil/i"; sid:2;)
alert udp any any -> any any (pcre:"/^hello\s+world$/"; sid:3;)"#,
    );
    assert_eq!(packet(&rs, b"a=1&id=12345"), vec![1]);
    assert_eq!(packet(&rs, b"x id=123"), vec![1, 2]);
    assert_eq!(packet(&rs, b"id=12 x EVIL"), Vec::<u32>::new());
    assert_eq!(packet(&rs, b"hello   world"), vec![3]);
    assert_eq!(packet(&rs, b"hello world!"), Vec::<u32>::new());
}

/// A `pcre` value written in several rules is compiled once and shared: each rule still matches, captures into its
/// variables and negates on its own, the backtracking engine's expressions as the linear engine's.
#[test]
fn a_pcre_written_again_matches_in_every_rule() {
    let rs = load(
        r#"alert udp any any -> any any (pcre:"/^id=(\d+)/, pkt:a"; noalert; sid:1;)
alert udp any any -> any any (content:"z"; pcre:"/^id=(\d+)/, pkt:a"; sid:2;)
alert udp any any -> any any (content:"x"; pktvar:a,"7"; sid:3;)
alert udp any any -> any any (pcre:"/(a)\1b/"; sid:4;)
alert udp any any -> any any (content:"q"; pcre:"/(a)\1b/"; sid:5;)
alert udp any any -> any any (content:"w"; pcre:!"/(a)\1b/"; sid:6;)
alert udp any any -> any any (content:"w"; pcre:!"/(a)\1b/"; content:"v"; sid:7;)"#,
    );
    assert_eq!(packet(&rs, b"id=7 x"), vec![3]);
    assert_eq!(packet(&rs, b"id=8 x"), Vec::<u32>::new());
    assert_eq!(packet(&rs, b"id=7 z"), vec![2]);
    assert_eq!(packet(&rs, b"aab"), vec![4]);
    assert_eq!(packet(&rs, b"aab q"), vec![4, 5]);
    assert_eq!(packet(&rs, b"w v"), vec![6, 7]);
    assert_eq!(packet(&rs, b"aab w v"), vec![4]);
}

#[test]
fn isdataat_and_lengths() {
    let rs = load(
        r#"alert udp any any -> any any (content:"A"; isdataat:3,relative; sid:1;)
alert udp any any -> any any (content:"A"; isdataat:!1,relative; sid:2;)
alert udp any any -> any any (content:"A"; dsize:<4; sid:3;)
alert udp any any -> any any (content:"A"; bsize:2<>5; sid:4;)"#,
    );
    assert_eq!(packet(&rs, b"A123"), vec![1, 4]);
    assert_eq!(packet(&rs, b"xA"), vec![2, 3]);
    assert_eq!(packet(&rs, b"A12"), vec![3, 4]);
}

#[test]
fn straddling_matches_and_pending_negation() {
    let rs = load(
        r#"alert tcp any any -> any any (content:"needle-in-a-haystack"; sid:1;)
alert tcp any any -> any any (content:"abc"; content:!"zzz"; distance:0; within:20; sid:2;)
alert tcp any any -> any any (content:"key="; pcre:"/^[a-f0-9]{8}\b/R"; sid:3;)"#,
    );
    let whole: &[u8] = b"....needle-in-a-haystack....abc.................. key=deadbeef ...";
    let one = stream(&rs, &[whole]);
    assert_eq!(one, vec![1, 2, 3]);
    for split in 1..whole.len() {
        let (a, b) = whole.split_at(split);
        assert_eq!(stream(&rs, &[a, b]), one, "split at {split}");
    }
    let bytes: Vec<&[u8]> = whole.chunks(1).collect();
    assert_eq!(stream(&rs, &bytes), one);
    // The negation vetoes when "zzz" comes within the window, even in a later chunk.
    assert_eq!(stream(&rs, &[b"abc....", b"zzz"]), Vec::<u32>::new());
    // A word boundary right after the 8 hex digits is only known when the next byte arrives.
    assert_eq!(stream(&rs, &[b"key=deadbeef", b"0"]), Vec::<u32>::new());
    assert_eq!(
        stream(&rs, &[b"key=deadbeef"]),
        vec![3],
        "end of stream is a boundary"
    );
}

#[test]
fn stream_alerts_once_per_direction_and_reports_offsets() {
    let rs = load(r#"alert tcp any any -> any any (content:"hit"; sid:7;)"#);
    let recs = stream_records(&rs, &[b"..hit..", b"hit"]);
    assert_eq!(recs.len(), 1);
    assert_eq!((recs[0].offset, recs[0].len), (2, 3));
}

#[test]
fn gaps_restart_matching() {
    let rs = load(r#"alert tcp any any -> any any (content:"abcdef"; sid:1;)"#);
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = ctx(Direction::ToServer);
    rs.scan_stream(&mut sc, &mut flow, &c, b"xxabc", 0, &mut out);
    // Bytes 5..10 never arrive: "abc" + "def" must not be joined across the hole.
    rs.scan_stream(&mut sc, &mut flow, &c, b"def", 10, &mut out);
    assert!(out.is_empty());
    assert_eq!(sc.stats().stream_gaps, 1);
    // A retransmission of bytes already seen is skipped, the new part is scanned.
    rs.scan_stream(&mut sc, &mut flow, &c, b"defabcdef", 10, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].offset, 13);
    assert_eq!(sc.stats().stream_overlap_bytes, 3);
}

#[test]
fn flow_direction_state_and_header() {
    let rs = load(
        r#"alert tcp any any -> any 80 (flow:to_server,established; content:"GET"; sid:1;)
alert tcp any 80 -> any any (flow:to_client; content:"HTTP/1."; sid:2;)
alert tcp $EXTERNAL_NET any -> $HOME_NET any (content:"GET"; sid:3;)
alert tcp any any <> any 80 (content:"HTTP/1."; sid:4;)
alert tcp any any -> any any (flow:not_established; content:"GET"; sid:5;)"#,
    );
    let run = |dir: Direction, established: bool, data: &[u8]| {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        let c = PacketCtx {
            established,
            ..ctx(dir)
        };
        rs.scan_stream(&mut sc, &mut flow, &c, data, 0, &mut out);
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(
        run(Direction::ToServer, true, b"GET / HTTP/1.1\r\n"),
        vec![1, 4]
    );
    assert_eq!(run(Direction::ToServer, false, b"GET /"), vec![5]);
    assert_eq!(
        run(Direction::ToClient, true, b"HTTP/1.1 200 OK\r\n"),
        vec![2, 4]
    );
}

fn http(rs: &RuleSet, parts: &[(HttpBuffer, &[u8])]) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    for (kind, data) in parts {
        let dir = match kind {
            HttpBuffer::StatusCode | HttpBuffer::ResponseHeaders | HttpBuffer::ResponseBody => {
                Direction::ToClient
            }
            _ => Direction::ToServer,
        };
        rs.scan_http(&mut sc, &mut flow, &ctx(dir), 0, *kind, data, &mut out);
    }
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort();
    s
}

/// `absent` as Suricata 8 defines it on a one-field HTTP buffer: the plain form matches a transaction whose header
/// lacks the field and never one that has it; `absent: or_else` matches when the field is absent or else when the
/// items after it match it. With another buffer the rule needs both, in one transaction.
#[test]
fn absent_buffers_match_where_the_header_lacks_them() {
    let rs = load(
        r#"alert http any any -> any any (flow:to_server; http.referer; absent; sid:1;)
alert http any any -> any any (flow:to_server; http.referer; absent: or_else; content:!"example"; sid:2;)
alert http any any -> any any (flow:to_server; http.referer; absent: or_else; content:"example"; sid:3;)
alert http any any -> any any (flow:to_server; http.uri; bsize:1; content:"/"; http.user_agent; absent; sid:4;)
alert http any any -> any any (flow:to_server; http.referer; content:!"example"; sid:5;)
alert http any any -> any any (flow:to_client; http.server; absent; sid:6;)"#,
    );
    let no_referer: &[u8] = b"Host: a\r\nUser-Agent: curl\r\n\r\n";
    let with = |r: &'static [u8]| -> Vec<(HttpBuffer, &'static [u8])> {
        vec![
            (HttpBuffer::Uri, b"/"),
            (HttpBuffer::RequestHeaders, r),
            (HttpBuffer::ResponseHeaders, b"Server: x\r\n\r\n"),
        ]
    };
    assert_eq!(http(&rs, &with(no_referer)), vec![1, 2, 3]);
    assert_eq!(
        http(
            &rs,
            &with(b"Referer: http://example.com/\r\nUser-Agent: c\r\n\r\n")
        ),
        vec![3]
    );
    assert_eq!(
        http(
            &rs,
            &with(b"Referer: http://other/\r\nUser-Agent: c\r\n\r\n")
        ),
        vec![2, 5]
    );
    // No user agent and a one-byte URI (either order); no server in the response.
    assert_eq!(
        http(
            &rs,
            &[
                (HttpBuffer::RequestHeaders, b"Referer: x\r\n\r\n"),
                (HttpBuffer::Uri, b"/"),
                (HttpBuffer::ResponseHeaders, b"Date: y\r\n\r\n"),
            ]
        ),
        vec![2, 4, 5, 6]
    );
    // Buffers whose absence the engine does not learn skip the rule with the reason; `absent` must come first.
    let opts = LoadOptions {
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    let (_, report) = RuleSet::parse_with(
        &[(
            "t",
            b"alert http any any -> any any (http.request_body; absent; sid:1;)\n".as_slice(),
        )],
        &opts,
    )
    .unwrap();
    assert!(
        report
            .skip_reasons
            .keys()
            .any(|r| r.contains("absent on http.request_body")),
        "{report:?}"
    );
    let strict = LoadOptions {
        strict: true,
        ..opts
    };
    for bad in [
        "http.referer; content:\"a\"; absent;",
        "http.referer; absent: maybe;",
    ] {
        let text = format!("alert http any any -> any any ({bad} sid:1;)");
        assert!(
            RuleSet::parse_with(&[("t", text.as_bytes())], &strict).is_err(),
            "{bad}"
        );
    }
}

/// `rpc` on packets: an ONC RPC call to the program (version, procedure unless `*`), read at the payload's start
/// over UDP and after the record mark over TCP, where the rule inspects each packet.
#[test]
fn rpc_calls_match_their_program_over_udp_and_tcp() {
    let rs = load(
        r#"alert udp any any -> any any (rpc:100000,2,*; sid:1;)
alert udp any any -> any any (rpc:100000,3,*; sid:2;)
alert tcp any any -> any any (rpc:100003,3,0; sid:3;)
alert tcp any any -> any any (content:"|00 01 86 a3|"; rpc:100003,*,*; sid:4;)"#,
    );
    let call = |prog: u32, vers: u32, proc_: u32| {
        let mut b = Vec::new();
        for w in [7u32, 0, 2, prog, vers, proc_, 0, 0] {
            b.extend_from_slice(&w.to_be_bytes());
        }
        b
    };
    let mut sc = rs.scanner();
    let mut send = |transport: Transport, payload: &[u8]| {
        let c = PacketCtx {
            transport,
            app_proto: None,
            ..ctx(Direction::ToServer)
        };
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(&mut sc, &mut flow, &c, payload, &mut out);
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(send(Transport::Udp, &call(100000, 2, 4)), vec![1]);
    assert_eq!(send(Transport::Udp, &call(100003, 3, 0)), Vec::<u32>::new());
    let mut tcp = 0x8000_0020u32.to_be_bytes().to_vec();
    tcp.extend_from_slice(&call(100003, 3, 0));
    assert_eq!(send(Transport::Tcp, &tcp), vec![3, 4]);
    // Without the record mark the TCP rules read the wrong words.
    assert_eq!(send(Transport::Tcp, &call(100003, 3, 0)), Vec::<u32>::new());
    // A rule for both transports cannot say where the call starts: skipped with the reason.
    let opts = LoadOptions {
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    let (_, report) = RuleSet::parse_with(
        &[(
            "t",
            b"alert ip any any -> any any (rpc:1,*,*; sid:1;)\n".as_slice(),
        )],
        &opts,
    )
    .unwrap();
    assert!(
        report
            .skip_reasons
            .keys()
            .any(|r| r.contains("rpc on a rule")),
        "{report:?}"
    );
}

#[test]
fn http_buffers_sticky_legacy_and_snort3() {
    let rs = load(
        r#"alert http any any -> any any (http.method; content:"POST"; http.uri; content:"/login"; sid:1;)
alert tcp any any -> any any (content:"/login"; http_uri; content:"POST"; http_method; sid:2;)
alert tcp any any -> any any (flow:to_server; http_uri; content:"/LOGIN",nocase; http_header; content:"Host|3a|"; service:http; sid:3;)
alert http any any -> any any (http.uri; content:"/etc/passwd"; sid:4;)
alert http any any -> any any (http.uri.raw; content:"%2e%2e"; sid:5;)
alert http any any -> any any (http.header; content:"Cookie"; sid:6;)
alert http any any -> any any (http.cookie; content:"session=1"; sid:7;)
alert http any any -> any any (http.host; content:"example.com"; endswith; sid:8;)
alert http any any -> any any (flow:to_client; http.stat_code; content:"404"; file_data; content:"not found"; sid:9;)
alert http any any -> any any (http.user_agent; content:"curl"; startswith; sid:10;)
alert http any any -> any any (http.request_body; content:"user=admin"; sid:11;)"#,
    );
    let req: &[(HttpBuffer, &[u8])] = &[
        (HttpBuffer::Method, b"POST"),
        (HttpBuffer::Uri, b"/a/%2e%2e/login"),
        (HttpBuffer::Host, b"WWW.EXAMPLE.COM:8080"),
        (HttpBuffer::UserAgent, b"curl/8.0"),
        (
            HttpBuffer::RequestHeaders,
            b"Host: www.example.com\r\nCookie: session=1\r\nUser-Agent: curl/8.0\r\n",
        ),
        (HttpBuffer::RequestBody, b"user=admin&pw=x"),
    ];
    assert_eq!(http(&rs, req), vec![1, 2, 3, 5, 7, 8, 10, 11]);
    let req2: &[(HttpBuffer, &[u8])] = &[
        (HttpBuffer::Method, b"GET"),
        (HttpBuffer::Uri, b"/x/../../etc/passwd"),
        (HttpBuffer::StatusCode, b"404"),
        (HttpBuffer::ResponseBody, b"<h1>not found</h1>"),
    ];
    assert_eq!(http(&rs, req2), vec![4, 9]);
}

/// `http.cookie` is the request's `Cookie` and the response's `Set-Cookie` (Suricata registers it both ways; Snort
/// 3's `http_cookie` with `flow:to_client` is the community set's redirect rules).
#[test]
fn http_cookie_is_set_cookie_in_responses() {
    let rs = load(
        r#"alert tcp any any -> any any (flow:to_client,established; http_cookie; content:"SL_"; content:"_0000=",within 8; service:http; sid:1;)
alert http any any -> any any (flow:to_server; http.cookie; content:"SL_"; sid:2;)
alert http any any -> any any (http.cookie; content:"SL_"; sid:3;)"#,
    );
    let resp: &[(HttpBuffer, &[u8])] = &[(
        HttpBuffer::ResponseHeaders,
        b"Content-Type: text/html\r\nSet-Cookie: SL_ab_0000=1; path=/\r\n",
    )];
    assert_eq!(http(&rs, resp), vec![1, 3]);
    let req: &[(HttpBuffer, &[u8])] = &[(
        HttpBuffer::RequestHeaders,
        b"Host: a\r\nCookie: SL_ab_0000=1\r\n",
    )];
    assert_eq!(http(&rs, req), vec![2, 3]);
}

/// `base64_decode` decodes from the buffer start or the previous match; `base64_data` inspects what it decoded, as a
/// buffer of its own (ET Open's and the community set's forms).
#[test]
fn base64_decode_and_base64_data() {
    let rs = load(
        r#"alert udp any any -> any any (content:"data="; base64_decode:relative; base64_data; content:"test"; startswith; sid:1;)
alert udp any any -> any any (base64_decode:bytes 8, offset 2; base64_data; content:"foobar"; sid:2;)
alert udp any any -> any any (content:"x="; base64_decode:offset 0,relative; base64_data; content:"clk="; content:"&bid=",distance 0; sid:3;)
alert http any any -> any any (flow:to_server; http.request_body; content:"<m:Data>"; base64_decode:bytes 300, offset 0, relative; base64_data; content:"<!DOCTYPE"; content:"SYSTEM"; distance:0; sid:4;)"#,
    );
    // "dGVzdA==" is "test", "Zm9vYmFy" is "foobar", "Y2xrPTEmYmlkPTI=" is "clk=1&bid=2".
    assert_eq!(packet(&rs, b"data=dGVzdA=="), vec![1]);
    assert_eq!(packet(&rs, b"xxdata=eHRlc3Q="), Vec::<u32>::new());
    assert_eq!(packet(&rs, b"..Zm9vYmFy"), vec![2]);
    // `bytes 8` from offset 2: the last two characters are not decoded.
    assert_eq!(packet(&rs, b"..Zm9vYmFyCg"), vec![2]);
    assert_eq!(packet(&rs, b"...Zm9vYmFy"), Vec::<u32>::new());
    assert_eq!(packet(&rs, b"x=Y2xrPTEmYmlkPTI="), vec![3]);
    // Decoding stops at the first byte outside the alphabet.
    assert_eq!(packet(&rs, b"x=Y2xrPTE*YmlkPTI="), Vec::<u32>::new());
    let body = b"<m:RouteComplaint <m:Data>PCFET0NUWVBFIHJvb3QgU1lTVEVNICJ4Ij4=</m:Data>";
    assert_eq!(http(&rs, &[(HttpBuffer::RequestBody, body)]), vec![4]);
}

/// `ssl_state` and `ssl_version` read the TLS (or SSLv2) records that begin a TCP packet's payload; such a rule
/// inspects packets, not the stream (the community set's SSLv2 and self-signed-certificate rules).
#[test]
fn ssl_state_and_version_on_tcp_packets() {
    let rs = load(
        r#"alert tcp any any -> any any (flow:to_server; ssl_version:sslv2; ssl_state:client_hello; content:"|01 00 02|",depth 3,offset 2; byte_test:2,>,32,9; sid:1;)
alert tcp any any -> any any (ssl_state:server_hello; content:"|0E|MyCompany Ltd"; sid:2;)
alert tcp any any -> any any (ssl_state:!client_hello; ssl_version:tls1.2; sid:3;)"#,
    );
    let run = |dir: Direction, payload: &[u8]| {
        let mut sc = rs.scanner();
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(
            &mut sc,
            &mut FlowMatchState::default(),
            &ctx(dir),
            payload,
            &mut out,
        );
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    // SSLv2 ClientHello with a 64-byte challenge length.
    let v2 = b"\x80\x4c\x01\x00\x02\x00\x33\x00\x00\x00\x40rest";
    assert_eq!(run(Direction::ToServer, v2), vec![1]);
    // The same bytes in a TLS 1.2 ClientHello record: not SSLv2.
    let v3 = b"\x16\x03\x03\x00\x08\x01\x00\x00\x04\x03\x03\x01\x00\x02";
    assert_eq!(run(Direction::ToServer, v3), Vec::<u32>::new());
    // A ServerHello record then the certificate in the same packet.
    let mut sh = b"\x16\x03\x03\x00\x06\x02\x00\x00\x02\x03\x03".to_vec();
    sh.extend_from_slice(b"\x16\x03\x03\x00\x13\x0b\x00\x00\x0f\x55\x04\x0a\x0eMyCompany Ltd");
    assert_eq!(run(Direction::ToClient, &sh), vec![2, 3]);
    // The certificate continued in a later segment shows no handshake state.
    assert_eq!(
        run(Direction::ToClient, b"\x55\x04\x0a\x0eMyCompany Ltd"),
        Vec::<u32>::new()
    );
    // None of them inspects the stream.
    assert!(stream(&rs, &[&sh]).is_empty());
    // A rule of state conditions alone (sid 3) alerts once per flow direction, as a TLS transaction would; the
    // rule with content (sid 2) on every packet that matches.
    let mut flow = FlowMatchState::default();
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    for dir in [
        Direction::ToClient,
        Direction::ToClient,
        Direction::ToServer,
    ] {
        rs.scan_packet(&mut sc, &mut flow, &ctx(dir), &sh, &mut out);
    }
    let mut sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    sids.sort();
    assert_eq!(sids, vec![2, 2, 2, 3, 3]);
}

#[test]
fn header_only_rules_fire_per_packet() {
    let rs = load(r#"alert udp any any -> any 53 (msg:"dns"; sid:1;)"#);
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = PacketCtx {
        transport: Transport::Udp,
        dst_port: 53,
        ..PacketCtx::default()
    };
    rs.scan_packet(
        &mut sc,
        &mut FlowMatchState::default(),
        &c,
        b"anything",
        &mut out,
    );
    rs.scan_packet(&mut sc, &mut FlowMatchState::default(), &c, b"", &mut out);
    let c2 = PacketCtx { dst_port: 54, ..c };
    rs.scan_packet(&mut sc, &mut FlowMatchState::default(), &c2, b"", &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(sc.hit_counts(), &[2]);
    let mut totals = Vec::new();
    sc.add_hit_counts(&mut totals);
    sc.add_hit_counts(&mut totals);
    assert_eq!(totals, vec![4]);
    let table = rs.rule_hits(&totals);
    assert_eq!((table[0].0.sid, table[0].1), (1, 4));
}

#[test]
fn alert_fields_come_from_the_rule() {
    let rs = load(
        r#"drop tcp any any -> any any (msg:"Test \"quoted\" msg"; content:"x"; classtype:trojan-activity; sid:9; rev:3; gid:1;)
alert tcp any any -> any any (msg:"p"; content:"y"; classtype:misc-activity; priority:1; sid:10;)"#,
    );
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut seen = Vec::new();
    let mut sink = |a: &flowbundle_rules::Alert<'_>| {
        seen.push((
            a.sid(),
            a.rev(),
            a.msg().to_string(),
            a.category().to_string(),
            a.severity(),
            a.action(),
        ));
    };
    rs.scan_stream(
        &mut sc,
        &mut flow,
        &ctx(Direction::ToServer),
        b"xy",
        0,
        &mut sink,
    );
    seen.sort();
    assert_eq!(
        seen,
        vec![
            (
                9,
                3,
                "Test \"quoted\" msg".into(),
                "A Network Trojan was detected".into(),
                1,
                "drop"
            ),
            (10, 0, "p".into(), "Misc activity".into(), 1, "alert"),
        ]
    );
}

#[test]
fn tcp_packet_rules_and_app_layer_protocol() {
    let rs = load(
        r#"alert tcp-pkt any any -> any any (content:"abc"; sid:1;)
alert tcp any any -> any any (content:"abc"; dsize:<10; sid:2;)
alert tcp-stream any any -> any any (content:"abc"; sid:3;)
alert tcp any any -> any any (app-layer-protocol:http; content:"abc"; sid:4;)
alert tcp any any -> any any (app-layer-protocol:!http; content:"abc"; sid:5;)"#,
    );
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = ctx(Direction::ToServer);
    // Per packet: only the packet-only rules, and dsize applies to this packet's payload.
    rs.scan_packet(
        &mut sc,
        &mut FlowMatchState::default(),
        &c,
        b"xxabc",
        &mut out,
    );
    rs.scan_packet(
        &mut sc,
        &mut FlowMatchState::default(),
        &c,
        b"xxabc and more",
        &mut out,
    );
    let sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    assert_eq!(sids, vec![1, 2, 1]);
    assert_eq!(stream(&rs, &[b"xxab", b"c"]), vec![3, 4]);
}

/// A TCP payload chain that needs its buffer's end (`isdataat:!`, `bsize`, `endswith`) or has no positive content
/// cannot run on the stream (it has no end while inspected): it inspects each TCP packet's payload instead.
#[test]
fn tcp_rules_needing_the_buffer_end_inspect_packets() {
    let rs = load(
        r#"alert tcp any any -> any any (content:"abc"; isdataat:!1,relative; sid:1;)
alert tcp any any -> any any (content:!"zzz"; pcre:"/^xx/"; sid:2;)
alert tcp any any -> any any (content:"abc"; endswith; sid:3;)
alert tcp any any -> any any (bsize:5; content:"xx"; sid:4;)
alert ip any any -> any any (content:"abc"; isdataat:!1,relative; sid:5;)"#,
    );
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = ctx(Direction::ToServer);
    let mut flow = FlowMatchState::default();
    rs.scan_packet(&mut sc, &mut flow, &c, b"xxabc", &mut out);
    let mut sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2, 3, 4, 5]);
    out.clear();
    rs.scan_packet(&mut sc, &mut flow, &c, b"yxabcd and more", &mut out);
    assert!(out.is_empty(), "{out:?}");
    // None of them inspects the stream.
    assert!(stream(&rs, &[b"xxab", b"c"]).is_empty());

    // Mixed with an HTTP buffer (the community set's whole-request length checks): the payload part per packet,
    // the URI per transaction.
    let rs = load(
        r#"alert tcp any any -> any any (flow:to_server; isdataat:9; isdataat:!10; http_raw_uri; bufferlen:1; pkt_data; content:"GET / ",fast_pattern; sid:6;)"#,
    );
    for (request, want) in [(&b"GET / HTTP"[..], vec![6]), (b"GET / HTTP/1.1", vec![])] {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(&mut sc, &mut flow, &c, request, &mut out);
        rs.scan_http(&mut sc, &mut flow, &c, 0, HttpBuffer::Uri, b"/", &mut out);
        let sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
        assert_eq!(sids, want);
    }
}

/// Several `app-layer-protocol` keywords all apply (suricata-verify `detect-app-layer-protocol-01`: `!http` and
/// `!tls`), and none matches while the protocol is unknown, negated or not (Suricata's packet match returns 0 then).
#[test]
fn app_layer_protocol_conditions_all_apply_and_wait_for_detection() {
    let rs = load(
        r#"alert tcp any any -> any any (app-layer-protocol:!http; app-layer-protocol:!tls; content:"abc"; sid:1;)
alert tcp any any -> any any (app-layer-protocol:failed; content:"abc"; sid:2;)"#,
    );
    let run = |app: Option<&str>| {
        let mut sc = rs.scanner();
        let mut out: Vec<AlertRecord> = Vec::new();
        let c = PacketCtx {
            app_proto: app,
            ..ctx(Direction::ToServer)
        };
        rs.scan_stream(
            &mut sc,
            &mut FlowMatchState::default(),
            &c,
            b"xxabc",
            0,
            &mut out,
        );
        out.iter().map(|a| a.sid).collect::<Vec<u32>>()
    };
    assert_eq!(run(None), Vec::<u32>::new());
    assert_eq!(run(Some("http")), Vec::<u32>::new());
    assert_eq!(run(Some("tls")), Vec::<u32>::new());
    assert_eq!(run(Some("ssh")), vec![1]);
    assert_eq!(run(Some("failed")), vec![1, 2]);
}

/// A rule with `app-layer-protocol` and nothing else (Suricata's PD-only type) matches once per direction, on the
/// first packet with payload once the protocol is known; other header-only rules match every packet
/// (suricata-verify `app-layer-protocol-prefilter`).
#[test]
fn pd_only_rule_matches_once_per_direction_on_payload() {
    let rs = load(
        r#"alert tcp any any -> any any (app-layer-protocol:tls; sid:1;)
alert tcp any any -> any any (app-layer-protocol:tls; flow:to_server; sid:2;)"#,
    );
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let unknown = ctx(Direction::ToServer);
    let ts = PacketCtx {
        app_proto: Some("tls"),
        ..ctx(Direction::ToServer)
    };
    let tc = PacketCtx {
        app_proto: Some("tls"),
        ..ctx(Direction::ToClient)
    };
    rs.scan_packet(&mut sc, &mut flow, &unknown, b"", &mut out); // SYN
    rs.scan_packet(&mut sc, &mut flow, &ts, b"hello", &mut out); // ClientHello: detection done to server
    rs.scan_packet(&mut sc, &mut flow, &tc, b"", &mut out); // server ACK, no data
    rs.scan_packet(&mut sc, &mut flow, &ts, b"more", &mut out);
    rs.scan_packet(&mut sc, &mut flow, &ts, b"", &mut out); // FIN
    let sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    assert_eq!(sids, vec![1, 2, 2, 2]);
    rs.scan_packet(&mut sc, &mut flow, &tc, b"ServerHello", &mut out);
    assert_eq!(out.last().map(|a| a.sid), Some(1));
    assert_eq!(out.len(), 5);
}

#[test]
fn flowbits_set_check_and_noalert() {
    let rs = load(
        r#"alert tcp any any -> any any (flow:to_server; content:"LOGIN"; flowbits:set,logged_in; flowbits:noalert; sid:1;)
alert tcp any any -> any any (flow:to_client; content:"secret"; flowbits:isset,logged_in; sid:2;)
alert tcp any any -> any any (flow:to_client; content:"secret"; flowbits:isnotset,logged_in; sid:3;)
alert tcp any any -> any any (content:"x"; flowbits:isset,a|logged_in; sid:4;)
alert tcp any any -> any any (content:"x"; flowbits:isset,a&logged_in; sid:5;)
alert http any any -> any any (http.uri; content:"/dl"; flowbits:set,dl; noalert; sid:6;)
alert http any any -> any any (file_data; content:"MZ"; flowbits:isset,dl; flowbits:unset,dl; sid:7;)"#,
    );
    assert_eq!(
        rs.flowbit_names(),
        &["logged_in".to_string(), "a".into(), "dl".into()]
    );
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let cs = ctx(Direction::ToServer);
    let cc = ctx(Direction::ToClient);
    // Before the login the server's "secret" matches only the isnotset rule.
    rs.scan_stream(&mut sc, &mut flow, &cc, b"secret banner ", 0, &mut out);
    rs.scan_stream(&mut sc, &mut flow, &cs, b"LOGIN bob\r\n", 0, &mut out);
    rs.scan_stream(&mut sc, &mut flow, &cs, b"x", 11, &mut out);
    let mut flow2 = FlowMatchState::default();
    rs.scan_stream(&mut sc, &mut flow2, &cs, b"LOGIN", 0, &mut out);
    rs.scan_stream(&mut sc, &mut flow2, &cc, b"the secret", 0, &mut out);
    let sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    assert_eq!(sids, vec![3, 4, 2]);
    // The noalert setter matched (hit counted) without alerting.
    assert_eq!(sc.hit_counts()[0], 2);
    // Within one chunk the setter is evaluated first, wherever its pattern lies.
    let mut flow3 = FlowMatchState::default();
    let mut out3: Vec<AlertRecord> = Vec::new();
    rs.scan_stream(&mut sc, &mut flow3, &cs, b"x LOGIN", 0, &mut out3);
    assert_eq!(out3.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![4]);
    // HTTP: the request sets, the response checks and unsets.
    let mut flow4 = FlowMatchState::default();
    let mut out4: Vec<AlertRecord> = Vec::new();
    rs.scan_http(
        &mut sc,
        &mut flow4,
        &cs,
        0,
        HttpBuffer::Uri,
        b"/dl/a.exe",
        &mut out4,
    );
    rs.scan_http(
        &mut sc,
        &mut flow4,
        &cc,
        0,
        HttpBuffer::ResponseBody,
        b"MZ\x90\x00",
        &mut out4,
    );
    rs.scan_http(
        &mut sc,
        &mut flow4,
        &cc,
        1,
        HttpBuffer::ResponseBody,
        b"MZ\x90\x00",
        &mut out4,
    );
    assert_eq!(out4.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![7]);
}

#[test]
fn flow_state_is_small_until_data() {
    assert_eq!(std::mem::size_of::<FlowMatchState>(), 32);
    let rs = load(r#"alert tcp any any -> any any (content:"abc"; sid:1;)"#);
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    assert_eq!(flow.memory(), 0);
    // A UDP packet and an empty stream chunk allocate nothing.
    let udp = PacketCtx {
        transport: Transport::Udp,
        ..ctx(Direction::ToServer)
    };
    rs.scan_packet(&mut sc, &mut flow, &udp, b"abc", &mut out);
    rs.scan_stream(
        &mut sc,
        &mut flow,
        &ctx(Direction::ToServer),
        b"",
        0,
        &mut out,
    );
    assert_eq!(flow.memory(), 0);
    rs.scan_stream(
        &mut sc,
        &mut flow,
        &ctx(Direction::ToServer),
        b"xabc",
        0,
        &mut out,
    );
    assert!(
        flow.memory() > 0 && flow.memory() < 512,
        "{}",
        flow.memory()
    );
}

#[test]
fn drop_flag_is_kept_with_the_flowbits_and_leaves_them_working() {
    use flowbundle_rules::Action;
    assert!(Action::Drop.drops() && Action::Reject.drops() && Action::Sdrop.drops());
    assert!(!Action::Alert.drops() && !Action::Log.drops());
    let rs = load(
        r#"alert tcp any any -> any any (flow:to_server; content:"LOGIN"; flowbits:set,logged_in; sid:1;)
alert tcp any any -> any any (content:"x"; flowbits:isset,logged_in; sid:2;)"#,
    );
    let mut sc = rs.scanner();
    let cs = ctx(Direction::ToServer);
    // Dropped before any flowbit: the flag allocates the bit set, which a later `set` grows to its size.
    let mut flow = FlowMatchState::default();
    assert!(!flow.dropped());
    flow.set_dropped();
    assert!(flow.dropped());
    let mut out: Vec<AlertRecord> = Vec::new();
    rs.scan_stream(&mut sc, &mut flow, &cs, b"LOGIN x", 0, &mut out);
    assert_eq!(out.iter().map(|a| a.sid).collect::<Vec<_>>(), vec![1, 2]);
    assert!(flow.dropped(), "setting a flowbit keeps the drop");
    // The state stays four words: the flag lives behind the flowbits' box.
    assert_eq!(std::mem::size_of::<FlowMatchState>(), 32);
}

#[test]
fn repeat_hits_of_fired_patterns_go_quiet_per_direction() {
    // sid 1 fires on the first "zzzz"; sid 2 shares that fast pattern but needs "late" after it, which only the last
    // chunk brings: the pattern must not go quiet while sid 2 can still match.
    let rs = load(
        r#"alert tcp any any -> any any (content:"zzzz"; sid:1;)
alert tcp any any -> any any (content:"zzzz"; content:"late"; distance:0; sid:2;)
alert tcp any any -> any any (content:"other"; sid:3;)"#,
    );
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let up = ctx(Direction::ToServer);
    let mut off = 0u64;
    for ch in [&b"zzzzzzzz"[..], b"..zzzz..", b"zzzzzzzzzzzz", b"zz late"] {
        rs.scan_stream(&mut sc, &mut flow, &up, ch, off, &mut out);
        off += ch.len() as u64;
    }
    let sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    assert_eq!(sids, vec![1, 2]);
    assert_eq!(
        sc.stats().quiet_hits,
        0,
        "sid 2 had not fired: nothing may be quiet"
    );
    // Both rules fired: further occurrences are dropped as found, and still alert nothing.
    for ch in [&b"zzzzzzzzzz"[..], b"zzzzzzzz"] {
        rs.scan_stream(&mut sc, &mut flow, &up, ch, off, &mut out);
        off += ch.len() as u64;
    }
    assert_eq!(out.len(), 2);
    assert!(sc.stats().quiet_hits >= 10, "{:?}", sc.stats());
    // The other direction has its own set: its first occurrence alerts both rules again.
    let down = ctx(Direction::ToClient);
    rs.scan_stream(&mut sc, &mut flow, &down, b"zzzz late other", 0, &mut out);
    let mut sids: Vec<u32> = out.iter().skip(2).map(|a| a.sid).collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2, 3]);
    assert_eq!(out.iter().skip(2).filter(|a| a.dir == 1).count(), 3);
}

#[test]
fn quiet_set_is_bounded_and_overflow_only_costs_speed() {
    // More busy patterns than a direction's quiet set holds: each rule still alerts once, the rest is counted.
    let n = flowbundle_rules::MAX_QUIET + 4;
    let text: String = (0..n)
        .map(|i| {
            format!(
                "alert tcp any any -> any any (content:\"pat{i:03}x\"; sid:{};)\n",
                i + 1
            )
        })
        .collect();
    let rs = load(&text);
    let chunk: String = (0..n).map(|i| format!("pat{i:03}x ")).collect();
    let chunks: Vec<&[u8]> = vec![chunk.as_bytes(); 4];
    let recs = stream_records(&rs, &chunks);
    assert_eq!(recs.len(), n);
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = ctx(Direction::ToServer);
    for (k, ch) in chunks.iter().enumerate() {
        rs.scan_stream(&mut sc, &mut flow, &c, ch, (k * ch.len()) as u64, &mut out);
    }
    assert_eq!(out.len(), n);
    let st = sc.stats();
    assert_eq!(st.quiet_hits, (flowbundle_rules::MAX_QUIET * 2) as u64);
    assert_eq!(st.quiet_full, 4 * 3);
    assert!(flow.memory() < 4096, "{}", flow.memory());
}

/// `pass` loads, and each rule's action scope follows Suricata's rule types: IP-only, protocol-detection-only and
/// bare application-protocol rules act on the flow; header keywords, `dsize`, `tcp-pkt`, flowbit conditions,
/// `flow:established` and content make a packet rule (whose payload matches act on the packet).
#[test]
fn pass_loads_and_action_scope_follows_the_rule_type() {
    use flowbundle_rules::Action;
    let rs = load(
        r#"pass ip 192.168.1.1 80 -> any any (sid:1;)
drop ip 10.0.0.1 any -> any any (sid:2;)
drop http any any -> any any (sid:3;)
drop tcp any any -> any any (app-layer-protocol:tls; sid:4;)
drop tcp any any -> any any (dsize:0; sid:5;)
drop tcp any any -> any any (flags:S; sid:6;)
drop tcp-pkt any any -> any any (content:"a"; sid:7;)
drop udp any any -> any any (content:"a"; sid:8;)
drop ip any any -> any any (flowbits:isset,x; sid:9;)
drop ip any any -> any any (flow:to_server; sid:10;)
drop http any any -> any any (flow:established; sid:11;)
drop ip any any -> any any (flowbits:set,x; sid:12;)"#,
    );
    let scoped: Vec<(u32, bool)> = rs
        .rules()
        .iter()
        .map(|r| (r.sid, r.flow_scoped()))
        .collect();
    assert_eq!(
        scoped,
        [
            (1, true),
            (2, true),
            (3, true),
            (4, true),
            (5, false),
            (6, false),
            (7, false),
            (8, false),
            (9, false),
            (10, false),
            (11, false),
            (12, true)
        ]
    );
    assert_eq!(rs.rules()[0].action, Action::Pass);
    assert!(Action::Pass.passes() && !Action::Pass.drops() && !Action::Drop.passes());
    let mut flow = FlowMatchState::default();
    assert!(!flow.stopped());
    flow.set_passed();
    assert!(flow.passed() && flow.stopped() && !flow.dropped());
}

#[test]
fn unstreamed_tcp_payload_meets_the_stream_rules_per_packet() {
    let rs = load(
        r#"alert tcp any any -> any any (content:"Hi all"; depth:6; sid:1;)
alert tcp any any -> any any (content:"Hi all"; flow:only_stream; sid:2;)
alert tcp any any -> any any (content:"Hi all"; dsize:>5; sid:3;)
alert tcp any any -> any any (flags:S; sid:4;)"#,
    );
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let c = PacketCtx {
        transport: Transport::Tcp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    let sids = |out: &Vec<AlertRecord>| {
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    // A streamed TCP packet meets the packet-only rules alone: the stream rules see its bytes in the stream.
    let mut out = Vec::new();
    rs.scan_packet(&mut sc, &mut flow, &c, b"Hi all!\r\n", &mut out);
    assert_eq!(sids(&out), vec![3]);
    // Outside any stream, the stream rules inspect each packet on its own (positions count from its first byte),
    // alerting once per packet; a rule for the stream alone does not match.
    let mut out = Vec::new();
    for _ in 0..2 {
        rs.scan_unstreamed_packet(&mut sc, &mut flow, &c, b"Hi all!\r\n", &mut out);
    }
    rs.scan_unstreamed_packet(&mut sc, &mut flow, &c, b"xHi all!\r\n", &mut out);
    assert_eq!(sids(&out), vec![1, 1, 3, 3, 3]);
    // A datagram is unaffected: `scan_unstreamed_packet` on UDP is `scan_packet`.
    let u = PacketCtx {
        transport: Transport::Udp,
        ..c
    };
    let mut out = Vec::new();
    rs.scan_unstreamed_packet(&mut sc, &mut flow, &u, b"Hi all!\r\n", &mut out);
    let mut direct = Vec::new();
    rs.scan_packet(&mut sc, &mut flow, &u, b"Hi all!\r\n", &mut direct);
    assert_eq!(sids(&out), sids(&direct));
}

#[test]
fn sctp_rules_match_sctp_packets_only() {
    let rs = load(
        r#"alert sctp any 7 -> any 7 (sid:1;)
alert sctp any any -> any any (content:"echo"; sid:2;)"#,
    );
    let mut sc = rs.scanner();
    let run = |sc: &mut flowbundle_rules::Scanner, transport, port| {
        let c = PacketCtx {
            transport,
            src_port: port,
            dst_port: port,
            app_proto: None,
            ..ctx(Direction::ToServer)
        };
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(sc, &mut FlowMatchState::default(), &c, b"echo", &mut out);
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(run(&mut sc, Transport::Other(132), 7), vec![1, 2]);
    assert_eq!(run(&mut sc, Transport::Other(132), 8), vec![2]);
    assert_eq!(run(&mut sc, Transport::Udp, 7), Vec::<u32>::new());
    assert_eq!(run(&mut sc, Transport::Other(47), 7), Vec::<u32>::new());
}

#[test]
fn ip_only_rules_are_checked_on_the_first_packet_of_each_direction() {
    let rs = load(
        r#"alert tcp any any -> any any (sid:1;)
alert tcp any any -> any 80 (sid:2;)
alert tcp any any -> any any (flags:S; sid:3;)
alert tcp any any -> any any (flowbits:set,seen; sid:4;)
alert tcp any any -> any any (flowbits:isset,seen; sid:5;)"#,
    );
    for r in rs.rules() {
        assert_eq!(r.ip_only(), matches!(r.sid, 1 | 4), "sid {}", r.sid);
    }
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let header = flowbundle_rules::PacketHeader {
        tcp: Some(flowbundle_rules::TcpHeader {
            flags: 0x02,
            ..Default::default()
        }),
        ..Default::default()
    };
    for repeat in [false, true, true] {
        let c = PacketCtx {
            transport: Transport::Tcp,
            header: Some(header),
            repeat_in_dir: repeat,
            ..ctx(Direction::ToServer)
        };
        rs.scan_packet(&mut sc, &mut flow, &c, b"", &mut out);
    }
    let mut sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    sids.sort();
    // The IP-only rules (1, 4) once; the port rule, the header rule and the flowbit reader on every packet.
    assert_eq!(sids, vec![1, 2, 2, 2, 3, 3, 3, 4, 5, 5, 5]);
}

/// `flowint` as Suricata defines it: per-flow integers set, added to and subtracted from after a match, compared and
/// tested before it; setters go before readers within one packet; an unset integer fails comparisons, `+` starts
/// it at the value and `-` leaves it unset; another integer on the right reads as 0 while unset.
#[test]
fn flowint_counts_per_flow() {
    let rs = load(
        r#"alert udp any any -> any any (content:"req"; flowint:reqs,+,1; noalert; sid:1;)
alert udp any any -> any any (content:"req"; flowint:reqs,>=,3; sid:2;)
alert udp any any -> any any (content:"req"; flowint:reqs,==,1; sid:3;)
alert udp any any -> any any (content:"req"; flowint:never,isset; sid:4;)
alert udp any any -> any any (content:"req"; flowint:never,notset; flowint:gone,-,5; sid:5;)
alert udp any any -> any any (content:"req"; flowint:gone,isset; sid:6;)
alert udp any any -> any any (content:"limit"; flowint:cap,=,2; noalert; sid:7;)
alert udp any any -> any any (content:"req"; flowint:reqs,>,cap; sid:8;)
alert udp any any -> any any (content:"req"; flowint:reqs,!=,unset_var; flowint:reqs,<=,4; sid:9;)
alert udp any any -> any any (content:"reset"; flowint:reqs,=,0; noalert; sid:10;)"#,
    );
    let mut sc = rs.scanner();
    let c = PacketCtx {
        transport: Transport::Udp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    let mut flow = FlowMatchState::default();
    let mut send = |flow: &mut FlowMatchState, payload: &[u8]| {
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(&mut sc, flow, &c, payload, &mut out);
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    // No cap yet: `reqs > cap` compares with 0.
    assert_eq!(send(&mut flow, b"req"), vec![3, 5, 8, 9]);
    assert_eq!(send(&mut flow, b"limit"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, b"req"), vec![5, 9]);
    assert_eq!(send(&mut flow, b"req"), vec![2, 5, 8, 9]);
    assert_eq!(send(&mut flow, b"req"), vec![2, 5, 8, 9]);
    assert_eq!(send(&mut flow, b"req"), vec![2, 5, 8]);
    assert_eq!(send(&mut flow, b"reset"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, b"req"), vec![3, 5, 9]);
    // Another flow starts from nothing.
    let mut other = FlowMatchState::default();
    assert_eq!(send(&mut other, b"req"), vec![3, 5, 8, 9]);
}

/// Flow variables as Suricata defines them: a `pcre` capture (named group `flow_NAME` or a `flow:NAME` list entry)
/// is stored in the flow when its rule matches, replacing the value; `flowvar:NAME,"content"` holds when the value
/// contains the content. A capture of a rule that does not match as a whole is not stored. Setters go before readers
/// within one packet (the readers have a condition).
#[test]
fn flowvars_capture_and_match_per_flow() {
    let rs = load(
        r#"alert udp any any -> any any (content:"user="; pcre:"/user=(?P<flow_user>[a-z]+)/"; noalert; sid:1;)
alert udp any any -> any any (content:"cmd"; flowvar:user,"adm"; sid:2;)
alert udp any any -> any any (content:"cmd"; flowvar:user,"|67 75|est"; sid:3;)
alert udp any any -> any any (content:"agent="; pcre:"/agent=(\w+)\/(\d+)/, flow:agent, flow:version"; content:"yes"; noalert; sid:4;)
alert udp any any -> any any (content:"cmd"; flowvar:version,"42"; sid:5;)
alert udp any any -> any any (content:"cmd"; flowvar:agent,"curl"; sid:6;)"#,
    );
    let mut sc = rs.scanner();
    let c = PacketCtx {
        transport: Transport::Udp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    let mut flow = FlowMatchState::default();
    let mut send = |flow: &mut FlowMatchState, payload: &[u8]| {
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(&mut sc, flow, &c, payload, &mut out);
        let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
        s.sort();
        s
    };
    assert_eq!(send(&mut flow, b"cmd"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, b"user=admin"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, b"cmd"), vec![2]);
    // The same packet: the capture is stored before the readers run.
    assert_eq!(send(&mut flow, b"user=guest cmd"), vec![3]);
    // Rule 4 does not match as a whole (no "yes"): nothing is stored.
    assert_eq!(send(&mut flow, b"agent=curl/42"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, b"cmd"), vec![3]);
    assert_eq!(send(&mut flow, b"agent=curl/42 yes"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, b"cmd"), vec![3, 5, 6]);
    // Another flow has none.
    let mut other = FlowMatchState::default();
    assert_eq!(send(&mut other, b"cmd"), Vec::<u32>::new());
}

/// Packet variables last for the packet they were captured on: a later rule on the same packet sees them, the next
/// packet (a new input position, [`Scanner::begin_packet`]) starts without.
#[test]
fn pktvars_last_one_packet() {
    let rs = load(
        r#"alert udp any any -> any any (content:"uid="; pcre:"/uid=(\d+)/, pkt:uid"; noalert; sid:1;)
alert udp any any -> any any (content:"x"; pktvar:uid,"7"; sid:2;)"#,
    );
    let mut sc = rs.scanner();
    let c = PacketCtx {
        transport: Transport::Udp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    let mut flow = FlowMatchState::default();
    let mut send = |flow: &mut FlowMatchState, packet: u64, payload: &[u8]| {
        sc.begin_packet(Some(packet));
        let mut out: Vec<AlertRecord> = Vec::new();
        rs.scan_packet(&mut sc, flow, &c, payload, &mut out);
        out.iter().map(|a| a.sid).collect::<Vec<u32>>()
    };
    assert_eq!(send(&mut flow, 1, b"uid=7 x"), vec![2]);
    assert_eq!(send(&mut flow, 1, b"x"), vec![2]);
    assert_eq!(send(&mut flow, 2, b"x"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, 3, b"uid=1000 x"), Vec::<u32>::new());
    assert_eq!(send(&mut flow, 4, b"uid=17 x"), vec![2]);
}

#[test]
fn flowvar_syntax() {
    let opts = LoadOptions {
        strict: true,
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    let loads = |opt: &str| {
        let text = format!("alert udp any any -> any any (content:\"x\"; {opt} sid:1;)");
        RuleSet::parse_with(&[("t", text.as_bytes())], &opts).map(|_| ())
    };
    for ok in [
        r#"flowvar:a,"x";"#,
        r#"flowvar: a , "|00 01|x" ;"#,
        r#"pktvar:a_b.c,"x";"#,
        r#"flowvar:a,x;"#,
        r#"pcre:"/(?P<flow_a>x)/";"#,
        r#"pcre:"/(?P<pkt_a>x)(?P<alert_b>y)(?P<other>z)/";"#,
        r#"pcre:"/(x)(y)/i, flow:a, pkt:b";"#,
        r#"pcre:"/(x)\1(?P<flow_a>y)/";"#,
    ] {
        assert!(loads(ok).is_ok(), "{ok}: {:?}", loads(ok).err());
    }
    for bad in [
        r#"flowvar:a;"#,
        r#"flowvar:,"x";"#,
        r#"flowvar:a,!"x";"#,
        r#"flowvar:a,"x",nocase;"#,
        r#"pcre:"/(x)/, flow:a, flow:b";"#,
        r#"pcre:"/(x)/, host:a";"#,
        r#"pcre:!"/(?P<flow_a>x)/";"#,
        r#"pcre:"/(a)(b)(c)(d)(e)(f)(g)(h)(i)/, flow:a,flow:b,flow:c,flow:d,flow:e,flow:f,flow:g,flow:h,flow:i";"#,
    ] {
        assert!(loads(bad).is_err(), "{bad}");
    }
    // Suricata's key/value captures (packet scope only) are refused with their reason.
    let err = loads(r#"pcre:"/(\w+)=(\w+)/, pkt:key, pkt:value";"#).unwrap_err();
    assert!(err.to_string().contains("key/value"), "{err}");
    // In the flow scope `key` and `value` are plain names, as Suricata reads them.
    let ok = r#"pcre:"/(\w+)=(\w+)/, flow:key, flow:value";"#;
    assert!(loads(ok).is_ok(), "{ok}: {:?}", loads(ok).err());
}

#[test]
fn flowint_syntax() {
    let opts = LoadOptions {
        strict: true,
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    let loads = |opt: &str| {
        let text = format!("alert udp any any -> any any (content:\"x\"; {opt} sid:1;)");
        RuleSet::parse_with(&[("t", text.as_bytes())], &opts).is_ok()
    };
    for ok in [
        "flowint:a,=,1;",
        "flowint: a.b/c_d , + , 4294967295 ;",
        "flowint:a,-,other;",
        "flowint:a,isset;",
        "flowint:a,notset;",
        "flowint:a,isnotset;",
        "flowint:a,<=,b;",
    ] {
        assert!(loads(ok), "{ok}");
    }
    for bad in [
        "flowint:1a,=,1;",
        "flowint:a,+;",
        "flowint:a,**,1;",
        "flowint:a,=,4294967296;",
        "flowint:a,=,-1;",
        "flowint:;",
        "flowint;",
    ] {
        assert!(!loads(bad), "{bad}");
    }
}

/// The single-packet rules' patterns ride in the stream's scan: a TCP packet whose payload was, whole, the last
/// stream chunk takes their occurrences from that scan instead of scanning again. What alerts must not change:
/// occurrences that straddle the chunk's start are not the packet's, a payload that is not the chunk (another
/// slice, even with the same bytes) is scanned, and the ungrouped set (every table its own pass) agrees.
#[test]
fn packet_rules_riding_in_the_stream_scan_alert_as_a_packet_scan_does() {
    let text = r#"alert tcp any any -> any any (content:"GET"; sid:1;)
alert tcp-pkt any any -> any any (content:"abcd"; sid:2;)
alert tcp any any -> any any (content:"wxyz"; dsize:<100; sid:3;)
alert tcp-pkt any any -> any any (content:"|00 00 00 00 00 00 00 00 01|"; sid:4;)
alert tcp-pkt any any -> any any (content:"qq"; sid:5;)"#;
    let grouped = load(text);
    let opts = LoadOptions {
        strict: true,
        vars: Vars::suricata_defaults(),
        rule_groups: false,
        ..LoadOptions::default()
    };
    let (plain, _) = RuleSet::parse_with(&[("t", text.as_bytes())], &opts).expect("rules load");
    let mut zeros = vec![0u8; 300];
    zeros.push(1);
    zeros.extend_from_slice(b"abcd qq");
    let chunks: Vec<Vec<u8>> = vec![
        b"GET /abcd HTTP/1.1 wxyz".to_vec(),
        b"xxab".to_vec(),
        b"cd yyy wx".to_vec(),
        b"yz qq q".to_vec(),
        zeros,
        b"abcdwxyzqq".to_vec(),
    ];
    // Each packet's payload is the chunk itself (riding), a copy of it (same bytes elsewhere: scanned), or, for
    // the last, another payload than the chunk (scanned).
    let run = |rs: &RuleSet, how: u8| -> (Vec<(usize, u32)>, u64) {
        let mut sc = rs.scanner();
        let mut flow = FlowMatchState::default();
        let c = ctx(Direction::ToServer);
        let mut off = 0u64;
        let mut alerts = Vec::new();
        for (i, ch) in chunks.iter().enumerate() {
            let mut out: Vec<AlertRecord> = Vec::new();
            rs.scan_stream(&mut sc, &mut flow, &c, ch, off, &mut out);
            off += ch.len() as u64;
            out.clear();
            let copy = ch.clone();
            let other = b"abcd".to_vec();
            let payload: &[u8] = match how {
                0 => ch,
                1 => &copy,
                _ if i == chunks.len() - 1 => &other,
                _ => ch,
            };
            rs.scan_streamed_packet(&mut sc, &mut flow, &c, payload, &mut out);
            alerts.extend(out.iter().map(|a| (i, a.sid)));
        }
        (alerts, sc.stats().packets_ridden)
    };
    // The oracle: each payload scanned on its own by the packet rules.
    let oracle = |last_other: bool| -> Vec<(usize, u32)> {
        let mut sc = plain.scanner();
        let mut flow = FlowMatchState::default();
        let c = ctx(Direction::ToServer);
        let mut alerts = Vec::new();
        for (i, ch) in chunks.iter().enumerate() {
            let other = b"abcd".to_vec();
            let payload: &[u8] = if last_other && i == chunks.len() - 1 {
                &other
            } else {
                ch
            };
            let mut out: Vec<AlertRecord> = Vec::new();
            plain.scan_packet(&mut sc, &mut flow, &c, payload, &mut out);
            alerts.extend(out.iter().map(|a| (i, a.sid)));
        }
        alerts
    };
    assert_eq!(
        oracle(false),
        vec![
            (0, 2),
            (0, 3),
            (3, 5),
            (4, 4),
            (4, 2),
            (4, 5),
            (5, 2),
            (5, 3),
            (5, 5)
        ]
    );
    for how in 0..3 {
        let want = oracle(how == 2);
        // Grouped, the packets whose payload is the chunk itself ride (all six, or the first five when the last
        // payload is another one); a copy never does, nor does the ungrouped set, which has no riders.
        let ridden = [6, 0, 5][usize::from(how)];
        assert_eq!(
            run(&grouped, how),
            (want.clone(), ridden),
            "grouped, payload kind {how}"
        );
        assert_eq!(run(&plain, how), (want, 0), "ungrouped, payload kind {how}");
    }
}

/// The parsers hand a response's file (`file.name`) to the rules before its body, which ends the transaction
/// (`Buffer::ends_transaction`: the body is never kept for lazily checked groups). Either group may lead: a rule
/// led by `file.name` checks the body as it arrives; one led by the body checks the kept file name.
#[test]
fn a_response_file_and_its_body_match_whichever_leads() {
    let rs = load(
        r#"alert http any any -> any any (flow:to_client; http.response_body; content:"MZ"; file.name; content:"setup-installer.exe"; sid:1;)
alert http any any -> any any (flow:to_client; http.response_body; content:"This program cannot be run"; file.name; content:".exe"; sid:2;)"#,
    );
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let c = ctx(Direction::ToClient);
    let name = b"/download/setup-installer.exe";
    rs.scan_app(&mut sc, &mut flow, &c, 0, Buffer::FileName, name, &mut out);
    let body = b"MZ\x90\x00 This program cannot be run in DOS mode";
    rs.scan_http(
        &mut sc,
        &mut flow,
        &c,
        0,
        HttpBuffer::ResponseBody,
        body,
        &mut out,
    );
    let mut sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2]);
    let ends: Vec<Buffer> = Buffer::ALL
        .into_iter()
        .filter(|b| b.ends_transaction())
        .collect();
    assert_eq!(ends, [Buffer::HttpResponseBody]);
    assert!(
        ends.iter().all(|b| !b.multi_instance()),
        "a buffer that comes many times ends nothing"
    );
}

/// What an alert's EVE record writes of the variables (Suricata 8's `alert.context` and top-level `metadata`): the
/// rule's own `alert_*` captures travel with its match, and no other alert carries them; the flow's flowbits,
/// integers and variables and the packet's variables are read once the packet is done (`packet_metadata`), the
/// same for every alert of it; nothing is built for a flow and a packet without any.
#[test]
fn alerts_carry_their_variables() {
    use flowbundle_rules::flowvar::AlertVars;
    let rs = load(
        r#"alert udp any any -> any any (content:"ua="; pcre:"/ua=(?P<alert_ua>[a-z]+)\/(?P<flow_ver>\d+)/"; flowbits:set,seen; flowint:n,+,1; sid:1;)
alert udp any any -> any any (content:"uid="; pcre:"/uid=(\d+) (\w+)/, pkt:uid, alert:who"; sid:2;)
alert udp any any -> any any (content:"plain"; sid:3;)"#,
    );
    let mut sc = rs.scanner();
    let c = PacketCtx {
        transport: Transport::Udp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    let mut flow = FlowMatchState::default();
    type Fired = Vec<(u32, Vec<(String, Vec<u8>)>)>;
    let send = |sc: &mut flowbundle_rules::Scanner,
                flow: &mut FlowMatchState,
                packet: u64,
                payload: &[u8]|
     -> (Fired, Option<AlertVars>) {
        sc.begin_packet(Some(packet));
        let mut out: Fired = Vec::new();
        let mut sink = |a: &flowbundle_rules::Alert<'_>| {
            out.push((a.sid(), a.context.map(|c| c.owned()).unwrap_or_default()))
        };
        rs.scan_packet(sc, flow, &c, payload, &mut sink);
        out.sort_by_key(|a| a.0);
        (out, rs.packet_metadata(Some(flow), sc))
    };
    // A flow with no variable: nothing is built.
    assert_eq!(
        send(&mut sc, &mut flow, 1, b"plain"),
        (vec![(3, vec![])], None)
    );
    let (fired, meta) = send(&mut sc, &mut flow, 2, b"ua=curl/8");
    assert_eq!(fired, [(1, vec![("ua".to_string(), b"curl".to_vec())])]);
    let meta = meta.expect("the flow's variables");
    assert!(meta.context.is_empty());
    assert_eq!(meta.flowvars, [("ver".to_string(), b"8".to_vec())]);
    assert_eq!(meta.flowbits, ["seen"]);
    assert_eq!(meta.flowints, [("n".to_string(), 1)]);
    assert!(meta.pktvars.is_empty());
    // The next packet: its variable and rule 2's alert variable, which rule 3's alert does not carry; the flow's
    // stay.
    let (fired, meta) = send(&mut sc, &mut flow, 3, b"uid=7 root plain");
    assert_eq!(
        fired,
        [
            (2, vec![("who".to_string(), b"root".to_vec())]),
            (3, vec![])
        ]
    );
    let meta = meta.expect("the flow's and the packet's variables");
    assert_eq!(meta.pktvars, [("uid".to_string(), b"7".to_vec())]);
    assert_eq!(meta.flowbits, ["seen"]);
    assert_eq!(meta.flowvars, [("ver".to_string(), b"8".to_vec())]);
    // A packet without a flow writes its own variables only; the next packet starts with none.
    assert_eq!(
        rs.packet_metadata(None, &sc).map(|m| m.pktvars),
        Some(vec![("uid".to_string(), b"7".to_vec())])
    );
    let (_, meta) = send(&mut sc, &mut flow, 4, b"nothing");
    assert!(meta.is_some_and(|m| m.pktvars.is_empty() && m.flowbits == ["seen"]));
}

/// What `entropy` keywords measure stays on the flow under the buffer's name (Suricata's `metadata.entropy`), whether
/// or not the rule matched, the last measure of a name winning; a flow record reads it with the flow's other
/// variables (`flow_metadata`); a packet that leaves its measures unkept does not hand them to the next packet.
#[test]
fn entropy_measures_stay_on_the_flow() {
    let rs = load(
        r#"alert udp any any -> any any (entropy: value > 7; sid:1;)
alert udp any any -> any any (entropy: offset 4, value < 8; sid:2;)"#,
    );
    let mut sc = rs.scanner();
    let c = PacketCtx {
        transport: Transport::Udp,
        app_proto: None,
        ..ctx(Direction::ToServer)
    };
    let mut flow = FlowMatchState::default();
    assert!(rs.flow_metadata(&flow).is_none(), "nothing measured yet");
    let mut fired = Vec::new();
    sc.begin_packet(Some(1));
    rs.scan_packet(
        &mut sc,
        &mut flow,
        &c,
        b"aaaabbbb",
        &mut |a: &flowbundle_rules::Alert<'_>| fired.push(a.sid()),
    );
    // Rule 1 measured 1 bit per byte and failed; rule 2 measured the 4 bytes after the offset (0 bits) and
    // matched: its measure, the last one of the packet, is what the flow keeps.
    assert_eq!(fired, [2]);
    assert!(
        rs.flow_metadata(&flow).is_none(),
        "kept once the packet is done"
    );
    rs.keep_measured(Some(&mut flow), &mut sc);
    let meta = rs.flow_metadata(&flow).expect("the flow's measure");
    assert_eq!(meta.entropy, [("content".to_string(), 0.0)]);
    assert!(meta.flowbits.is_empty() && meta.flowvars.is_empty() && meta.pktvars.is_empty());
    // A packet whose measures are not kept (another flow's, say): the next packet starts without them.
    sc.begin_packet(Some(2));
    rs.scan_packet(
        &mut sc,
        &mut flow,
        &c,
        b"abcd",
        &mut |_: &flowbundle_rules::Alert<'_>| {},
    );
    sc.begin_packet(Some(3));
    rs.keep_measured(Some(&mut flow), &mut sc);
    assert_eq!(
        rs.flow_metadata(&flow).map(|m| m.entropy),
        Some(vec![("content".to_string(), 0.0)])
    );
    // The next measure replaces it.
    rs.scan_packet(
        &mut sc,
        &mut flow,
        &c,
        b"abcdefgh",
        &mut |_: &flowbundle_rules::Alert<'_>| {},
    );
    rs.keep_measured(Some(&mut flow), &mut sc);
    assert_eq!(
        rs.flow_metadata(&flow).map(|m| m.entropy),
        Some(vec![("content".to_string(), 2.0)])
    );
}

#[test]
fn entropy_names_are_suricatas_buffer_names() {
    use flowbundle_rules::flowvar::entropy_name;
    assert_eq!(entropy_name("payload"), "content");
    assert_eq!(entropy_name("file.data (http)"), "file_data");
    assert_eq!(entropy_name("http.response_body"), "file_data");
    assert_eq!(entropy_name("http.request_body"), "http_client_body");
    assert_eq!(entropy_name("http.header (request)"), "http_header");
    assert_eq!(entropy_name("tls.sni"), "tls.sni");
}
