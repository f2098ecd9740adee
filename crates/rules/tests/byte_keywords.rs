//! The byte keywords through the matcher: on datagrams, on a TCP stream split anywhere, on an HTTP buffer, and with
//! variables, on bytes laid out as Suricata's payload keyword documentation shows them.

use flowbundle_rules::{
    AlertRecord, Direction, FlowMatchState, HttpBuffer, LoadOptions, PacketCtx, RuleSet, Transport,
    Vars, testing,
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

fn datagram(rs: &RuleSet, payload: &[u8]) -> Vec<u32> {
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let ctx = PacketCtx {
        transport: Transport::Udp,
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
    s.sort();
    s
}

#[test]
fn byte_test_and_jump_on_a_length_prefixed_record() {
    // A record: "REC" then a 2-byte big-endian length, that many bytes, then a type byte.
    let rs = load(
        r#"alert udp any any -> any any (content:"REC"; byte_test:2,>,3,0,relative; sid:1;)
alert udp any any -> any any (content:"REC"; byte_jump:2,0,relative; content:"|07|"; within:1; sid:2;)
alert udp any any -> any any (content:"REC"; byte_extract:2,0,len,relative; byte_test:1,=,len,0,relative; sid:3;)
alert udp any any -> any any (content:"REC"; byte_test:2,!&,0x8000,0,relative; sid:4;)
alert udp any any -> any any (content:"REC"; byte_math:bytes 2,offset 0,oper <<,rvalue 8,result l1,relative; byte_test:2,>,l1,1,relative; sid:5;)"#,
    );
    // Length 4, payload "\x04abc", type 7.
    let rec = b"xxREC\x00\x04\x04abc\x07";
    // byte_math leaves the cursor after "REC": 0x0404 (at +1) > 4 << 8.
    assert_eq!(datagram(&rs, rec), vec![1, 2, 3, 4, 5]);
    // Length 2: not > 3; the jump lands on the type byte; the extracted 2 is not the next byte (0x61);
    // 0x0261 > 0x0200.
    assert_eq!(datagram(&rs, b"REC\x00\x02ab\x07"), vec![2, 4, 5]);
    // Length 3: the jump would land at the end of the datagram, which fails.
    assert_eq!(datagram(&rs, b"REC\x00\x03ab\x07"), vec![4, 5]);
    // High bit set: 0x0461 < 0x800400.
    assert_eq!(datagram(&rs, b"REC\x80\x04abcd\x07"), vec![1]);
}

#[test]
fn byte_keywords_on_a_stream_do_not_depend_on_the_split() {
    let rs = load(
        r#"alert tcp any any -> any any (flow:to_server; content:"LEN="; byte_test:3,>,100,0,relative,string,dec; sid:1;)
alert tcp any any -> any any (flow:to_server; content:"LEN="; byte_jump:3,0,relative,string,dec; content:"END"; within:3; sid:2;)"#,
    );
    let mut data = b"hello LEN=005".to_vec();
    data.extend_from_slice(b"abcdeEND tail");
    assert_eq!(testing::stream_sids(&rs, &data, &[]), vec![2]);
    for cut in 0..data.len() {
        assert_eq!(
            testing::stream_sids(&rs, &data, &[cut]),
            vec![2],
            "cut at {cut}"
        );
    }
    assert_eq!(
        testing::stream_sids(&rs, b"LEN=200 and more bytes", &[7]),
        vec![1]
    );
}

#[test]
fn byte_test_on_an_http_buffer() {
    // ET's form: the Content-Length header tested as a decimal string, the whole buffer (`0`).
    let rs = load(
        r#"alert http any any -> any any (http.content_len; byte_test:0,>,4000,0,string,dec; sid:1;)"#,
    );
    let run = |headers: &[u8]| {
        let mut sc = rs.scanner();
        let mut out: Vec<AlertRecord> = Vec::new();
        let ctx = PacketCtx {
            dir: Direction::ToServer,
            app_proto: Some("http"),
            ..PacketCtx::default()
        };
        rs.scan_http(
            &mut sc,
            &mut FlowMatchState::default(),
            &ctx,
            0,
            HttpBuffer::RequestHeaders,
            headers,
            &mut out,
        );
        out.len()
    };
    assert_eq!(run(b"Content-Length: 4001\r\n"), 1);
    assert_eq!(run(b"Content-Length: 12\r\n"), 0);
    assert_eq!(run(b"Content-Length: x\r\n"), 0);
}

#[test]
fn hostile_byte_keyword_values_are_errors_not_panics() {
    for v in [
        "byte_test:9,=,1,0",
        "byte_test:2,=,1",
        "byte_jump:",
        "byte_jump:2,0,multiplier -1",
        "byte_extract:1,0,a,align 3",
        "byte_math:bytes 1,offset 0,oper ?,rvalue 1,result r",
        "byte_test:2,=,undefined_var,0",
        "byte_test:2,=,99999999999999999999999,0",
    ] {
        let text = format!("alert udp any any -> any any (content:\"a\"; {v}; sid:1;)");
        let (rs, rep) = RuleSet::parse(&text, &Vars::new()).unwrap();
        assert_eq!(rs.len(), 0, "{v}");
        assert_eq!(rep.errors_total, 1, "{v}: {rep:?}");
        assert!(!rep.errors[0].message.contains('\n'));
    }
}

/// `distance` and `within` may name a `byte_extract` variable (the community set's length-prefixed SMB and AJP
/// rules): the region is computed from the value extracted on this match, in both syntaxes.
#[test]
fn distance_and_within_from_variables() {
    let rs = load(
        r#"alert udp any any -> any any (content:"L"; byte_extract:1,0,len,relative; content:"HTTP"; within:len; sid:1;)
alert udp any any -> any any (content:"L",depth 1; byte_extract:1,0,len,relative; content:"|00|",within 1; content:"/",within len,distance 1; sid:2;)
alert udp any any -> any any (content:"L"; byte_extract:1,0,skip,relative; content:"Z"; distance:skip; within:1; sid:3;)"#,
    );
    // len 5: "HTTP" lies within the 5 bytes after the length byte.
    assert_eq!(datagram(&rs, b"L\x05xHTTP"), vec![1]);
    // len 4: it does not.
    assert_eq!(datagram(&rs, b"L\x04xHTTP"), Vec::<u32>::new());
    // sid 2: "/" within `len` bytes after one skipped byte.
    assert_eq!(datagram(&rs, b"L\x03\x00x/"), vec![2]);
    assert_eq!(datagram(&rs, b"L\x01\x00xy/"), Vec::<u32>::new());
    // sid 3: "Z" exactly `skip` bytes on.
    assert_eq!(datagram(&rs, b"L\x02abZ"), vec![3]);
    assert_eq!(datagram(&rs, b"L\x01abZ"), Vec::<u32>::new());
    // The value is taken as Suricata takes it, a 32-bit signed distance: 0x7fffffff lies past the buffer,
    // 0xffffffff is -1 (one byte back), and nothing overflows.
    let rs = load(
        r#"alert udp any any -> any any (content:"L"; byte_extract:4,0,big,relative; content:"Z"; distance:big; sid:4;)
alert udp any any -> any any (content:"L"; byte_extract:8,0,big,relative; content:"Z"; distance:big; within:big; sid:5;)"#,
    );
    assert_eq!(datagram(&rs, b"L\x7f\xff\xff\xffZ"), Vec::<u32>::new());
    assert_eq!(datagram(&rs, b"L\xff\xff\xff\xffZ"), vec![4]);
    assert_eq!(
        datagram(&rs, b"L\x7f\xff\xff\xff\xff\xff\xff\xffZ"),
        Vec::<u32>::new()
    );
}

/// A `byte_extract` after an HTTP-buffer content reads that buffer, relative to the content, and a later content of
/// the buffer takes its `distance`/`within` from the variable (suricata-verify's `UriTestSig28`/`29`/`32`).
#[test]
fn byte_extract_in_an_http_buffer_feeds_distance_and_within() {
    let rs = load(
        r#"alert tcp any any -> any any (uricontent:"this"; byte_extract:1,2,one,string,dec,relative; uricontent:"ring"; distance:one; sid:1;)
alert tcp any any -> any any (uricontent:"this"; byte_extract:1,2,one,string,dec,relative; uricontent:"g_st"; within:one; sid:2;)
alert tcp any any -> any any (uricontent:"this"; byte_extract:1,2,one,string,dec,relative; uricontent:"ring"; distance:6; sid:3;)"#,
    );
    let mut sc = rs.scanner();
    let mut out: Vec<AlertRecord> = Vec::new();
    let ctx = PacketCtx {
        dir: Direction::ToServer,
        app_proto: Some("http"),
        ..PacketCtx::default()
    };
    rs.scan_http(
        &mut sc,
        &mut FlowMatchState::default(),
        &ctx,
        0,
        HttpBuffer::Uri,
        b"/this_b5ig_string_now_in_http",
        &mut out,
    );
    let mut sids: Vec<u32> = out.iter().map(|a| a.sid).collect();
    sids.sort();
    assert_eq!(sids, vec![1, 2]);
}

/// `byte_jump` with a byte count of 0 moves the cursor by `post_offset` alone, back from a match that ends inside or
/// at the end of the payload, and a relative pcre reads on from there (Suricata's handling of a negative jump).
#[test]
fn byte_jump_of_zero_bytes_moves_back_by_post_offset() {
    let rules_text = r#"alert udp any any -> any any (content:"|3a 01 e8 ed 0f|"; byte_jump:0,0,relative,post_offset -7; pcre:"/^\x7c\xe0\x3a\x01\xe8\xed\x0f\x54/R"; sid:1;)
alert udp any any -> any any (content:"|01 e8 ed 0f 54|"; byte_jump:0,0,relative,post_offset -7; pcre:"/^\xe0\x3a\x01\xe8\xed\x0f\x54/R"; sid:3;)
alert udp any any -> any any (content:"|01 e8 ed 0f 54|"; byte_jump:0,0,relative,post_offset -6; pcre:"/^\xe0/R"; sid:4;)"#;
    let rs = load(rules_text);
    let payload = b"NSLO\x0a\x95\x00\x20 padding \x7c\xe0\x3a\x01\xe8\xed\x0f\x54";
    assert_eq!(datagram(&rs, payload), vec![1, 3]);
    let tcp = load(&rules_text.replace("alert udp", "alert tcp"));
    assert_eq!(testing::stream_sids(&tcp, payload, &[]), vec![1, 3]);
    let real = b"\x4e\x53\x4c\x4f\x0a\x95\x00\x20\xb0\x00\x00\x00\x79\xb7\x06\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x19\x47\xd4\xd9\x8d\x14\xdb\x6b\xf1\x0b\x92\x17\xfb\x47\x67\xe2\x58\xb4\x2e\x14\x8a\x1d\x66\x7c\x96\xb4\x54\x28\x7c\xfb\xf5\xb1\x78\x01\x7d\x8b\x21\x0a\xc0\x20\x18\x85\xb7\xc1\xc2\x56\x76\x81\x55\xc7\xc2\x0e\xb3\x2b\x2c\x2d\xad\x2d\xd8\x2c\xde\xc1\x4b\x28\xd8\x0c\x06\x31\x09\x82\xc1\x1b\xf9\x2b\x46\xf1\x83\x8f\xc7\x83\xf7\x24\x45\x43\xe6\x3d\xd0\x93\x73\x2a\xad\xcd\x02\x5e\xa0\xac\x9f\xb1\xb3\x5d\xc1\x1d\x14\x33\x8e\x56\x31\xbd\x39\xf3\xdf\xdf\x49\x7c\xe0\x3a\x01\xe8\xed\x0f\x54";
    assert_eq!(datagram(&rs, real), vec![1, 3]);
    assert_eq!(testing::stream_sids(&tcp, real, &[]), vec![1, 3]);
}
