//! The header sticky buffers (`ipv4.hdr`, `ipv6.hdr`, `tcp.hdr`, `udp.hdr`, `icmpv4.hdr`, `icmpv6.hdr`): how they
//! load (the keyword table, the protocols each fits, per-packet inspection on TCP) and what they match, on headers
//! laid out byte for byte as on the wire.

use flowbundle_rules::{
    AlertRecord, Direction, FlowMatchState, LoadOptions, PacketCtx, PacketHeader, RawHeaders,
    RuleSet, Transport, Vars, keyword,
};

fn parse(text: &str) -> (RuleSet, flowbundle_rules::LoadReport) {
    RuleSet::parse(text, &Vars::suricata_defaults()).expect("rules parse")
}

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

/// An IPv4 header of 20 bytes (or 24 with a router-alert option), protocol `proto`.
fn ipv4(proto: u8, options: bool) -> Vec<u8> {
    let mut h = vec![
        if options { 0x46 } else { 0x45 },
        0,
        0,
        60,
        0x12,
        0x34,
        0x40,
        0,
        64,
        proto,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ];
    if options {
        h.extend_from_slice(&[0x94, 0x04, 0, 0]);
    }
    h
}

/// An IPv6 header followed by a hop-by-hop extension header (8 bytes) whose next header is `proto`.
fn ipv6_hbh(proto: u8) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0, 0, 16, 0, 64];
    h.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    h.extend_from_slice(&[0; 11]);
    h.push(1);
    h.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    h.extend_from_slice(&[0; 11]);
    h.push(2);
    h.extend_from_slice(&[proto, 0, 1, 4, 0, 0, 0, 0]);
    h
}

/// A TCP header from port 40000 to 80 with flags PSH ACK and a 4-byte MSS option (data offset 6).
const TCP_MSS: [u8; 24] = [
    0x9c, 0x40, 0, 80, 0, 0, 0, 1, 0, 0, 0, 2, 0x60, 0x18, 0xff, 0xff, 0, 0, 0, 0, 2, 4, 0x05, 0xb4,
];

/// Runs `rs` on one packet with these headers and payload; returns the sids that alerted, sorted.
fn packet(rs: &RuleSet, transport: Transport, raw: RawHeaders<'_>, payload: &[u8]) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let ctx = PacketCtx {
        transport,
        dir: Direction::ToServer,
        header: Some(PacketHeader::default()),
        raw,
        ..PacketCtx::default()
    };
    rs.scan_packet(
        &mut sc,
        &mut FlowMatchState::default(),
        &ctx,
        payload,
        &mut out,
    );
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort_unstable();
    s.dedup();
    s
}

#[test]
fn header_buffers_are_sticky_buffers_of_the_keyword_table() {
    for name in [
        "ipv4.hdr",
        "ipv6.hdr",
        "tcp.hdr",
        "udp.hdr",
        "icmpv4.hdr",
        "icmpv6.hdr",
    ] {
        let k = keyword::lookup(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(k.kind, keyword::Kind::StickyBuffer, "{name}");
        assert_eq!(k.buffer(), Some(name));
    }
}

#[test]
fn transport_header_buffers_load_only_where_the_protocol_carries_them() {
    let (rs, report) = parse(
        "alert tcp any any -> any any (tcp.hdr; content:\"|50|\"; sid:1;)\n\
         alert ip any any -> any any (tcp.hdr; content:\"|50|\"; sid:2;)\n\
         alert udp any any -> any any (tcp.hdr; content:\"|50|\"; sid:3;)\n\
         alert tcp any any -> any any (udp.hdr; content:\"|00|\"; sid:4;)\n\
         alert tcp any any -> any any (icmpv4.hdr; content:\"|00|\"; sid:5;)\n\
         alert icmp any any -> any any (icmpv6.hdr; content:\"|80|\"; sid:6;)\n\
         alert udp any any -> any any (ipv4.hdr; content:\"|45|\"; sid:7;)\n",
    );
    let loaded: Vec<u32> = rs.rules().iter().map(|r| r.sid).collect();
    assert_eq!(loaded, vec![1, 2, 6, 7]);
    assert_eq!(report.errors.len(), 3, "{:?}", report.errors);
    for e in &report.errors {
        assert!(
            e.message.contains("cannot carry it"),
            "{e:?} should name the mismatch"
        );
    }
    // A header buffer is the packet's: a TCP rule with one inspects packets, not the stream.
    assert!(
        rs.rules()
            .iter()
            .filter(|r| r.proto == flowbundle_rules::Proto::Tcp)
            .all(|r| r.tcp_inspect == flowbundle_rules::rule::TcpInspect::Packet)
    );
    // Hostile input in a file gives the file and line.
    let opts = LoadOptions {
        strict: true,
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    let Err(err) = RuleSet::parse_with(
        &[(
            "bad.rules",
            b"alert tcp any any -> any any (tcp.hdr; content:\"a\"; sid:1;)\n\
              alert udp any any -> any any (tcp.hdr; content:\"a\"; sid:2;)\n"
                .as_slice(),
        )],
        &opts,
    ) else {
        panic!("strict load fails");
    };
    assert!(err.to_string().contains("bad.rules:2"), "{err}");
}

#[test]
fn header_buffers_with_http_buffers_or_only_stream_are_skipped_by_name() {
    let (rs, report) = parse(
        "alert http any any -> any any (http.uri; content:\"/a\"; tcp.hdr; content:\"|00 50|\"; sid:1;)\n\
         alert tcp any any -> any any (flow:only_stream; content:\"a\"; tcp.hdr; content:\"|00 50|\"; sid:2;)\n",
    );
    assert_eq!(rs.len(), 0);
    let reasons: Vec<&str> = report
        .skipped_rules
        .iter()
        .map(|s| s.reason.as_str())
        .collect();
    assert_eq!(
        reasons,
        vec![
            "header buffer with an http buffer",
            "flow:only_stream with a packet keyword"
        ]
    );
}

#[test]
fn tcp_and_ip_headers_match_as_on_the_wire() {
    let rs = load(
        r#"alert tcp any any -> any any (tcp.hdr; content:"|9c 40 00 50|"; startswith; sid:1;)
alert tcp any any -> any any (tcp.hdr; content:"|02 04|"; offset:20; byte_test:2,<,1461,0,relative; sid:2;)
alert tcp any any -> any any (tcp.hdr; bsize:24; sid:3;)
alert tcp any any -> any any (tcp.hdr; byte_test:1,&,0x08,13; pkt_data; content:"GET"; sid:4;)
alert tcp any any -> any any (content:"GET"; tcp.hdr; content:"|60 18|"; offset:12; depth:2; sid:5;)
alert ip any any -> any any (ipv4.hdr; content:"|45|"; startswith; bsize:20; sid:6;)
alert ip any any -> any any (ipv4.hdr; content:"|94 04 00 00|"; offset:20; sid:7;)
alert ip any any -> any any (ipv4.hdr; content:!"|94 04 00 00|"; offset:20; sid:8;)
alert ip any any -> any any (ipv6.hdr; content:"|60|"; sid:9;)
alert ip any any -> any any (udp.hdr; content:"|9c 40|"; sid:10;)
alert tcp any any -> any any (tcp.hdr; content:"|05 b4|"; endswith; sid:11;)
alert tcp any any -> any any (tcp.hdr; content:!"|05 b4|"; sid:12;)
"#,
    );
    let ip = ipv4(6, false);
    let raw = RawHeaders::new(&ip, &TCP_MSS, 6);
    assert_eq!(raw.l4.len(), 24);
    assert_eq!(
        packet(&rs, Transport::Tcp, raw, b"GET / HTTP/1.0\r\n"),
        vec![1, 2, 3, 4, 5, 6, 8, 11]
    );
    // The same rules with the router-alert option in the IP header.
    let ip = ipv4(6, true);
    let raw = RawHeaders::new(&ip, &TCP_MSS, 6);
    assert_eq!(
        packet(&rs, Transport::Tcp, raw, b"POST"),
        vec![1, 2, 3, 7, 11]
    );
    // Stream data and packets without the headers (nothing handed): no header buffer exists, so even the
    // negated chains fail, as a missing buffer does in Suricata.
    assert_eq!(
        packet(&rs, Transport::Tcp, RawHeaders::default(), b"GET"),
        Vec::<u32>::new()
    );
}

#[test]
fn udp_icmp_and_ipv6_headers_are_cut_as_suricata_cuts_them() {
    let rs = load(
        r#"alert udp any any -> any any (udp.hdr; content:"|00 35|"; offset:2; depth:2; bsize:8; sid:1;)
alert ip any any -> any any (ipv6.hdr; content:"|11 00 01 04|"; offset:40; bsize:48; sid:2;)
alert icmp any any -> any any (icmpv4.hdr; bsize:20; sid:3;)
alert icmp any any -> any any (icmpv4.hdr; bsize:8; sid:4;)
alert icmp any any -> any any (icmpv6.hdr; content:"|86 00|"; startswith; bsize:8; sid:5;)
alert ip any any -> any any (ipv4.hdr; content:"|45|"; sid:7;)
"#,
    );
    // UDP in IPv6 behind a hop-by-hop header: the IPv6 buffer holds both headers.
    let ip6 = ipv6_hbh(17);
    let udp = [0xc0, 0x00, 0, 53, 0, 12, 0, 0, b'a', b'b', b'c', b'd'];
    let raw = RawHeaders::new(&ip6, &udp, 17);
    assert_eq!(raw.ip.len(), 48);
    assert_eq!(packet(&rs, Transport::Udp, raw, b"abcd"), vec![1, 2]);
    // ICMPv4 timestamp request: 8 bytes, plus the 12 timestamp bytes.
    let ip = ipv4(1, false);
    let mut ts = vec![13, 0, 0, 0, 0, 1, 0, 1];
    ts.extend_from_slice(&[0; 12]);
    assert_eq!(
        packet(&rs, Transport::Icmp, RawHeaders::new(&ip, &ts, 1), b""),
        vec![3, 7]
    );
    // A timestamp request cut short keeps the 8-byte header; an echo request has 8 bytes whatever follows.
    assert_eq!(
        packet(
            &rs,
            Transport::Icmp,
            RawHeaders::new(&ip, ts.get(..12).unwrap_or(&[]), 1),
            b""
        ),
        vec![4, 7]
    );
    let echo = [8, 0, 0, 0, 0, 1, 0, 1, b'p', b'i', b'n', b'g'];
    assert_eq!(
        packet(
            &rs,
            Transport::Icmp,
            RawHeaders::new(&ip, &echo, 1),
            b"ping"
        ),
        vec![4, 7]
    );
    // Router advertisement with 2 entries of 2 words: 8 + 16 bytes, unless the message is shorter.
    let mut adv = vec![9, 0, 0, 0, 2, 2, 0, 30];
    adv.extend_from_slice(&[0; 8]);
    assert_eq!(
        packet(&rs, Transport::Icmp, RawHeaders::new(&ip, &adv, 1), b""),
        vec![4, 7]
    );
    adv.extend_from_slice(&[0; 8]);
    let raw = RawHeaders::new(&ip, &adv, 1);
    assert_eq!(raw.l4.len(), 24);
    let rs2 = load(
        "alert icmp any any -> any any (icmpv4.hdr; content:\"|09|\"; startswith; bsize:24; sid:1;)\n",
    );
    assert_eq!(packet(&rs2, Transport::Icmp, raw, b""), vec![1]);
    // ICMPv6 router advertisement: 8 bytes; not the ICMPv4 buffer.
    let ra = [134, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let raw = RawHeaders::new(&ip6, &ra, 58);
    assert_eq!(packet(&rs, Transport::Icmp, raw, b""), vec![2, 5]);
    // Hostile: a segment shorter than the header it announces gives no buffer.
    assert_eq!(
        RawHeaders::new(&ip, &TCP_MSS[..22], 6).l4,
        &[] as &[u8],
        "a TCP header cut short"
    );
    assert_eq!(RawHeaders::new(&ip, &[0x11; 7], 17).l4, &[] as &[u8]);
    assert_eq!(RawHeaders::new(&ip, &[8, 0, 0], 1).l4, &[] as &[u8]);
    let mut bad_offset = TCP_MSS;
    bad_offset[12] = 0x30;
    assert_eq!(RawHeaders::new(&ip, &bad_offset, 6).l4, &[] as &[u8]);
}
