//! Parsing: one test per keyword family, skips with reasons, errors with line numbers.

use flowbundle_rules::rule::TcpInspect;
use flowbundle_rules::{
    Action, AlertTarget, Buffer, FlowDir, FlowState, Item, LoadReport, Proto, Rule, RuleSet, Vars,
};

fn one(text: &str) -> Rule {
    let (rs, report) = RuleSet::parse(text, &Vars::suricata_defaults()).expect("loads");
    assert_eq!(
        report.loaded,
        1,
        "{}\n{:?}",
        report.summary(),
        report.errors
    );
    rs.rules()[0].clone()
}

fn report(text: &str) -> LoadReport {
    RuleSet::parse(text, &Vars::new()).expect("loads").1
}

fn contents(r: &Rule, g: usize) -> Vec<&flowbundle_rules::Content> {
    r.groups[g]
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Content(c) => Some(&**c),
            _ => None,
        })
        .collect()
}

#[test]
fn header_fields() {
    let r = one(
        "drop udp [10.0.0.0/8,!10.1.0.0/16] [1024:,!2000] <> $EXTERNAL_NET $HTTP_PORTS (sid:5;)",
    );
    assert_eq!(r.action, Action::Drop);
    assert_eq!(r.proto, Proto::Udp);
    assert!(r.bidirectional);
    assert!(
        r.src.contains("10.2.0.1".parse().unwrap()) && !r.src.contains("10.1.0.1".parse().unwrap())
    );
    assert!(r.src_ports.contains(1024) && !r.src_ports.contains(2000) && !r.src_ports.contains(80));
    assert!(
        r.dst.contains("8.8.8.8".parse().unwrap())
            && !r.dst.contains("192.168.1.1".parse().unwrap())
    );
    assert!(r.dst_ports.contains(80) && !r.dst_ports.contains(81));
    let r = one("alert http (msg:\"snort3 service rule\"; sid:6;)");
    assert_eq!(r.proto, Proto::App("http"));
    assert!(r.src.is_any() && r.dst_ports.is_any());
    assert_eq!(one("alert ip any any -> any any (sid:1;)").proto, Proto::Ip);
    assert_eq!(
        one("alert icmp any any -> any any (sid:1;)").proto,
        Proto::Icmp
    );
    assert_eq!(
        one("alert ssl any any -> any any (sid:1;)").proto,
        Proto::App("tls")
    );
}

#[test]
fn undefined_variables_skip_the_rule_by_name() {
    let (rs, rep) = RuleSet::parse(
        "alert tcp $MY_NET any -> any any (sid:1;)\n\
         alert tcp any any -> [10.0.0.0/8,!$OTHER] $MY_PORTS (sid:2;)\n\
         alert tcp $HOME_NET any -> $EXTERNAL_NET $HTTP_PORTS (sid:3;)\n",
        &Vars::suricata_defaults(),
    )
    .unwrap();
    assert_eq!(rs.len(), 1);
    assert_eq!(
        rep.skipped_rules
            .iter()
            .map(|s| (s.sid, s.reason.as_str()))
            .collect::<Vec<_>>(),
        [
            (Some(1), "undefined variable $MY_NET"),
            (Some(2), "undefined variable $OTHER")
        ]
    );
    // The loaded rule used three variables (and EXTERNAL_NET uses HOME_NET), all at Suricata's defaults.
    assert_eq!(
        rep.vars_defaulted,
        ["EXTERNAL_NET", "HOME_NET", "HTTP_PORTS"]
    );
    // A variable set by the user is not reported as defaulted.
    let mut vars = Vars::suricata_defaults();
    vars.set("HOME_NET", "10.1.0.0/16");
    let (_, rep) = RuleSet::parse(
        "alert tcp $HOME_NET any -> $EXTERNAL_NET any (sid:3;)",
        &vars,
    )
    .unwrap();
    assert!(
        rep.vars_defaulted == ["EXTERNAL_NET"],
        "{:?}",
        rep.vars_defaulted
    );
    // A cycle is an error naming the chain.
    let mut vars = Vars::new();
    vars.set("A", "$B").set("B", "[10.0.0.0/8,!$A]");
    let (_, rep) = RuleSet::parse("alert tcp $A any -> any any (sid:4;)", &vars).unwrap();
    assert!(
        rep.errors[0]
            .message
            .contains("variable cycle $A -> $B -> $A"),
        "{:?}",
        rep.errors
    );
}

#[test]
fn meta_options() {
    let r = one(
        r#"alert tcp any any -> any any (msg:"a \"b\" \; c"; sid:123; rev:7; gid:3; classtype:attempted-admin; reference:cve,2020-1; metadata:created_at 2020; target:dest_ip;)"#,
    );
    assert_eq!((r.sid, r.rev, r.gid), (123, 7, 3));
    assert_eq!(&*r.msg, "a \"b\" ; c");
    assert_eq!(r.classtype.as_deref(), Some("attempted-admin"));
    assert_eq!(&*r.category, "Attempted Administrator Privilege Gain");
    assert_eq!(r.severity, 1);
    assert_eq!(
        one("alert tcp any any -> any any (priority:4; classtype:trojan-activity; sid:1;)")
            .severity,
        4
    );
    assert_eq!(one("alert tcp any any -> any any (sid:1;)").severity, 3);
}

#[test]
fn content_modifiers_suricata_style() {
    let r = one(
        r#"alert tcp any any -> any any (content:"a|20 41|b"; nocase; offset:1; depth:9; content:!"x"; distance:-2; within:4; content:"long one"; fast_pattern; sid:1;)"#,
    );
    let c = contents(&r, 0);
    assert_eq!(c[0].bytes, b"a Ab");
    assert!(c[0].nocase && c[0].offset == Some(1) && c[0].depth == Some(9));
    assert!(c[1].negated && c[1].distance == Some(-2) && c[1].within == Some(4));
    assert!(c[2].fast_pattern);
    let r = one(r#"alert tcp any any -> any any (content:"GET"; startswith; sid:1;)"#);
    assert_eq!(
        (contents(&r, 0)[0].offset, contents(&r, 0)[0].depth),
        (Some(0), Some(3))
    );
}

#[test]
fn content_modifiers_snort3_inline() {
    let r = one(
        r#"alert tcp any any -> any any ( content:"2|00 00|Drives",depth 16,nocase; content:"|05 00|",depth 2,offset 8; content:"Y",distance 0,within 5,fast_pattern; sid:105; )"#,
    );
    let c = contents(&r, 0);
    assert_eq!(c[0].bytes, b"2\0\0Drives");
    assert!(c[0].nocase && c[0].depth == Some(16));
    assert_eq!((c[1].offset, c[1].depth), (Some(8), Some(2)));
    assert!(c[2].fast_pattern && c[2].distance == Some(0) && c[2].within == Some(5));
}

#[test]
fn flow_keyword() {
    let r = one("alert tcp any any -> any any (flow:established,to_server; sid:1;)");
    assert_eq!(
        (r.flow_dir, r.flow_state),
        (FlowDir::ToServer, FlowState::Established)
    );
    let r = one("alert tcp any any -> any any (flow:from_server,not_established; sid:1;)");
    assert_eq!(
        (r.flow_dir, r.flow_state),
        (FlowDir::ToClient, FlowState::NotEstablished)
    );
    let r = one("alert tcp any any -> any any (flow:stateless; sid:1;)");
    assert_eq!(r.flow_state, FlowState::Any);
    // only_stream: the stream, never datagrams; no_stream: each packet, never the stream.
    let r = one("alert ip any any -> any any (flow:only_stream; content:\"a\"; sid:1;)");
    assert!(r.stream_only && r.tcp_inspect == TcpInspect::Stream);
    let r = one("alert tcp any any -> any any (flow:no_stream,established; content:\"a\"; sid:1;)");
    assert!(!r.stream_only && r.tcp_inspect == TcpInspect::Packet);
    let rep = report(
        "alert udp any any -> any any (flow:only_stream; content:\"a\"; sid:1;)\n\
         alert tcp any any -> any any (flow:only_stream; sid:2;)\n\
         alert tcp any any -> any any (flow:only_stream,no_stream; content:\"a\"; sid:3;)\n\
         alert tcp any any -> any any (flow:only_frag; sid:4;)\n",
    );
    assert_eq!(
        rep.skip_reasons.keys().collect::<Vec<_>>(),
        ["flow:only_frag", "flow:only_stream without tcp payload"]
    );
    assert_eq!(rep.skip_reasons["flow:only_stream without tcp payload"], 2);
    assert!(rep.errors[0].message.contains("only_stream and no_stream"));
}

/// Header keywords are parsed into tests, make a payload rule per packet, and skip with an HTTP buffer.
#[test]
fn header_keywords() {
    use flowbundle_rules::HeaderTest;
    let r = one(
        "alert tcp $EXTERNAL_NET any -> $HOME_NET 22 (flags:S,CE; ttl:<10; window:!1024; content:\"SSH\"; sid:1;)",
    );
    assert_eq!(r.header.len(), 3);
    assert_eq!(r.tcp_inspect, TcpInspect::Packet);
    let r = one("alert icmp any any -> any any (itype:8; icode:0; icmp_id:5; icmp_seq:7; sid:1;)");
    assert!(matches!(r.header[0], HeaderTest::Itype(_)) && r.groups.is_empty());
    let rep = report(
        "alert http any any -> any any (flags:PA; http.uri; content:\"a\"; sid:1;)\n\
         alert tcp any any -> any any (flags:SX; sid:2;)\n\
         alert ip any any -> any any (ip_proto:nope; sid:3;)\n",
    );
    assert_eq!(
        rep.skip_reasons.keys().collect::<Vec<_>>(),
        ["header keyword with an http buffer"]
    );
    assert_eq!(rep.errors_total, 2);
    assert!(rep.errors[0].message.starts_with("flags: unknown flag"));
}

#[test]
fn http_buffers_in_every_form() {
    let buffers =
        |text: &str| -> Vec<Buffer> { one(text).groups.iter().map(|g| g.buffer).collect() };
    // Suricata sticky buffers.
    assert_eq!(
        buffers(
            r#"alert http any any -> any any (http.method; content:"GET"; http.uri; content:"/a"; http.host; content:"h"; sid:1;)"#
        ),
        vec![Buffer::HttpMethod, Buffer::HttpUri, Buffer::HttpHost]
    );
    // Legacy content modifiers apply to the content before them.
    assert_eq!(
        buffers(
            r#"alert tcp any any -> any any (content:"GET"; http_method; content:"/a"; http_uri; content:"c=1"; http_cookie; sid:1;)"#
        ),
        vec![Buffer::HttpMethod, Buffer::HttpUri, Buffer::HttpCookie]
    );
    // Snort 3: sticky, applies to the contents after it.
    assert_eq!(
        buffers(
            r#"alert tcp any any -> any any (flow:to_server; http_uri; content:"/a",nocase; http_header; content:"X"; service:http; sid:1;)"#
        ),
        vec![Buffer::HttpUri, Buffer::HttpRequestHeader]
    );
    // http.header and file_data follow the rule's side.
    assert_eq!(
        buffers(
            r#"alert http any any -> any any (flow:to_client; http.header; content:"Server"; file_data; content:"x"; sid:1;)"#
        ),
        vec![Buffer::HttpResponseHeader, Buffer::HttpResponseBody]
    );
    assert_eq!(
        buffers(
            r#"alert http any any -> any any (flow:to_server; file.data; content:"x"; sid:1;)"#
        ),
        vec![Buffer::HttpRequestFileData]
    );
    // Alone, file.data reads both ways (a request's files, a response's body); beside a request buffer, the
    // request's files.
    assert_eq!(
        buffers(r#"alert http any any -> any any (file.data; content:"x"; sid:1;)"#),
        vec![Buffer::HttpFileData]
    );
    assert_eq!(
        buffers(
            r#"alert http any any -> any any (http.method; content:"PUT"; file.data; content:"x"; sid:1;)"#
        ),
        vec![Buffer::HttpMethod, Buffer::HttpRequestFileData]
    );
    assert_eq!(
        buffers(r#"alert tcp any any -> any any (uricontent:"/cgi-bin"; sid:1;)"#),
        vec![Buffer::HttpUri]
    );
    // pcre buffer flags.
    assert_eq!(
        buffers(r#"alert tcp any any -> any any (pcre:"/a/U"; pcre:"/b/H"; sid:1;)"#),
        vec![Buffer::HttpUri, Buffer::HttpRequestHeader]
    );
}

#[test]
fn pcre_keyword() {
    let r = one(
        r#"alert tcp any any -> any any (content:"USER"; pcre:"/^USER\s+w0rm/ims"; pcre:!"/x/R"; sid:1;)"#,
    );
    let pcres: Vec<_> = r.groups[0]
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Pcre(p, _) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(pcres.len(), 2);
    assert!(!pcres[0].negated && pcres[1].negated && pcres[1].relative);
    assert_eq!(
        report(r#"alert tcp any any -> any any (content:"a"; pcre:"/(?R)/"; sid:1;)"#)
            .skip_reasons
            .keys()
            .next()
            .unwrap(),
        "pcre: recursion"
    );
    // Look-around loads (on the backtracking engine).
    assert_eq!(
        report(r#"alert tcp any any -> any any (content:"a"; pcre:"/(?=a)/"; sid:1;)"#).loaded,
        1
    );
}

#[test]
fn skips_name_the_first_unsupported_keyword() {
    let rep = report(
        r#"alert tcp any any -> any any (content:"a"; detection_filter:track by_src,count 5,seconds 60; tag:session; bypass; sid:1;)
alert tcp any any -> any any (content:"a"; lua:check.lua; sid:2;)
rewrite tcp any any -> any any (content:"a"; sid:3;)
alert ftp-bounce any any -> any any (sid:4;)
alert tcp any any -> any any (content:"a"; flow:only_frag; sid:5;)
alert tcp any any -> any any (content:"a"; classtype:no-such-class; sid:6;)
alert tcp any any -> any any (content:"a"; depth:x_var; sid:7;)
alert tcp any any -> any any (flow:only_stream; content:"a"; endswith; sid:8;)
alert tls any any => any any (content:"a"; sid:9;)
alert imap any any -> any any (file_data; content:"a"; sid:10;)"#,
    );
    assert_eq!(rep.loaded, 0);
    let reasons: Vec<(&str, usize)> = rep
        .skip_reasons
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("action rewrite", 1),
            ("depth from a variable", 1),
            ("direction =>", 1),
            ("endswith on a tcp stream", 1),
            ("file_data on imap: no file parser", 1),
            ("flow:only_frag", 1),
            ("keyword bypass", 1),
            ("keyword lua", 1),
            ("protocol ftp-bounce", 1),
            ("unknown classtype no-such-class", 1),
        ]
    );
    assert_eq!(rep.skipped_rules[0].sid, Some(1));
    assert_eq!(rep.skipped_rules[1].line, 2);
}

#[test]
fn errors_carry_line_numbers() {
    let text = "# comment\n\nalert tcp any any -> any any (content:\"a; sid:1;)\n\
alert tcp any any -> any any (content:\"a\"; depth:notanumber!; sid:2;)\n\
alert tcp any any -> any any (nocase; sid:3;)\n\
alert tcp any any -> any any (content:\"a\"; \\\n  sid:4;)\n\
alert tcp any any -> any any (content:\"a\";)\n\
alert tcp any any -> any any (content:\"abc\"; depth:2; sid:5;)\n\
alert tcp any any -> any any (content:\"|4|\"; sid:6;)\n\
alert tcp any any -> any any (content:\"a\"; sid:4;)\n\
alert tcp any any <- any any (sid:7;)\n\
alert tcp 1.2.3.4/40 any -> any any (sid:8;)\n\
alert tcp any any -> any any (content:\"a\"; offset:99999999999; sid:9;)\n";
    let rep = report(text);
    assert_eq!(
        rep.loaded, 1,
        "only sid 4 (the continued line) loads: {:?}",
        rep.errors
    );
    let lines: Vec<(usize, &str)> = rep
        .errors
        .iter()
        .map(|e| (e.line, e.message.as_str()))
        .collect();
    let expect_lines = [3, 4, 5, 8, 9, 10, 11, 12, 13, 14];
    assert_eq!(
        lines.iter().map(|l| l.0).collect::<Vec<_>>(),
        expect_lines,
        "{lines:#?}"
    );
    assert!(lines[0].1.contains("unterminated"));
    assert!(lines[1].1.contains("invalid number"));
    assert!(lines[2].1.contains("without a preceding content"));
    assert!(lines[3].1.contains("no sid"));
    assert!(lines[4].1.contains("depth 2 shorter"));
    assert!(lines[5].1.contains("odd number of hex digits"));
    assert!(lines[6].1.contains("duplicate sid 1:4"));
    assert!(lines[7].1.contains("direction"));
    assert!(lines[8].1.contains("invalid address"));
    assert!(lines[9].1.contains("out of range"));
}

#[test]
fn strict_mode_fails_with_file_and_line() {
    let opts = flowbundle_rules::LoadOptions {
        strict: true,
        ..Default::default()
    };
    let err = RuleSet::parse_with(
        &[(
            "my.rules",
            b"\nalert tcp any any -> any any (content:\"a\"; tag:session; bypass; sid:1;)\n",
        )],
        &opts,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "my.rules:2: unsupported: keyword bypass");
}

#[test]
fn content_hex_set() {
    let Some(path) = flowbundle_testsupport::data("rules/content-10k.hex") else {
        return;
    };
    let (rs, rep) = RuleSet::from_content_hex(&path).unwrap();
    assert_eq!(rs.len(), 10_000);
    assert_eq!(rep.loaded, 10_000);
    assert_eq!(rs.rules()[0].sid, 1);
    // Every rule is a single content on any IP traffic: the prefilter hit is the match.
    assert!(
        rs.rules()
            .iter()
            .all(|r| r.groups.len() == 1 && r.groups[0].items.len() == 1)
    );
}

#[test]
fn flowbits_keyword() {
    use flowbundle_rules::rule::Flowbit;
    let (rs, rep) = RuleSet::parse(
        "alert tcp any any -> any any (flowbits:set,a&b; flowbits:isset,c|a; flowbits:isnotset,b&c; flowbits:noalert; sid:1;)\n\
         alert tcp any any -> any any (flowbits:toggle,c; flowbits:unset,a; noalert; sid:2;)\n\
         alert tcp any any -> any any (flowbits:set,a,group; sid:3;)\n\
         alert tcp any any -> any any (flowbits:reset; sid:4;)\n\
         alert tcp any any -> any any (flowbits:isset,a|b&c; sid:5;)\n",
        &Vars::new(),
    )
    .unwrap();
    assert_eq!(
        rs.flowbit_names(),
        &["a".to_string(), "b".into(), "c".into()]
    );
    let r = &rs.rules()[0];
    assert_eq!(
        r.flowbits,
        vec![
            Flowbit::Set(0),
            Flowbit::Set(1),
            Flowbit::IsSet {
                ids: vec![2, 0],
                all: false
            },
            Flowbit::IsNotSet {
                ids: vec![1, 2],
                all: true
            },
        ]
    );
    assert!(r.noalert && rs.rules()[1].noalert);
    assert_eq!(
        rs.rules()[1].flowbits,
        vec![Flowbit::Toggle(2), Flowbit::Unset(0)]
    );
    assert_eq!(
        rep.skip_reasons.keys().collect::<Vec<_>>(),
        vec!["flowbits group", "flowbits:reset"]
    );
    assert_eq!(rep.errors[0].line, 5);
}

/// `xbits` as rule options: host bits (`ip_src`, `ip_dst`) share one name space, pair bits have their own, `noalert`
/// marks the rule, `track tx` is skipped by name and malformed values are errors with their line.
#[test]
fn xbits_keyword() {
    use flowbundle_rules::{Xbit, XbitOp, XbitTrack};
    let (rs, rep) = RuleSet::parse(
        "alert tcp any any -> any any (xbits:set,a,track ip_src,expire 60; xbits:isset,a,track ip_dst; sid:1;)\n\
         alert tcp any any -> any any (xbits:toggle,a,track ip_pair; xbits:noalert; sid:2;)\n\
         alert tcp any any -> any any (xbits:set,a,track tx; sid:3;)\n\
         alert tcp any any -> any any (xbits:set,a,track ip_src,expire 0; sid:4;)\n\
         alert tcp any any -> any any (xbits:isnotset,b,track ip_src; xbits:unset,a,track ip_dst; sid:5;)\n",
        &Vars::new(),
    )
    .unwrap();
    let x = |op, id, track, expire| Xbit {
        op,
        id,
        track,
        expire,
    };
    let r = &rs.rules()[0];
    assert_eq!(
        r.xbits,
        vec![
            x(XbitOp::Set, 0, XbitTrack::IpSrc, 60),
            x(XbitOp::IsSet, 0, XbitTrack::IpDst, 30)
        ]
    );
    assert!(!r.noalert && !r.flow_scoped());
    let r = &rs.rules()[1];
    assert_eq!(r.xbits, vec![x(XbitOp::Toggle, 1, XbitTrack::IpPair, 30)]);
    assert!(r.noalert);
    assert_eq!(
        rs.rules()[2].xbits,
        vec![
            x(XbitOp::IsNotSet, 2, XbitTrack::IpSrc, 30),
            x(XbitOp::Unset, 0, XbitTrack::IpDst, 30)
        ]
    );
    assert_eq!(
        rep.skip_reasons.keys().collect::<Vec<_>>(),
        vec!["xbits:track tx"]
    );
    assert_eq!(rep.errors.len(), 1);
    assert_eq!(rep.errors[0].line, 4);
}

/// `ipv4`/`ip4` and `ipv6`/`ip6` as the header's protocol: every packet of that IP version.
#[test]
fn ip_version_protocols() {
    for (p, v) in [("ipv4", 4), ("ip4", 4), ("ipv6", 6), ("ip6", 6)] {
        let r = one(&format!(
            "alert {p} any any -> any any (content:\"a\"; sid:1;)"
        ));
        assert_eq!((r.proto, r.ip_version), (Proto::Ip, Some(v)));
    }
    assert_eq!(one("alert ip any any -> any any (sid:1;)").ip_version, None);
}

/// ET Open's skipped rules per reason (the first unsupported keyword or keyword option of each rule). When the
/// supported subset grows these move: update them with the change that moved them.
const ET_OPEN_SKIPS: &[(&str, usize)] = &[];

/// ET Open, the rule set most Suricata users run, reads without an error (its options end at an unescaped `;` as in
/// Suricata, so a `"` inside a pcre, sid 2029732: `pcre:"/^["']?post/Ri";`, is part of the expression), and the
/// share that loads is pinned with every skip named.
#[test]
fn et_open_loads_with_every_skip_named() {
    let Some(dir) = flowbundle_testsupport::data("rules/et-open") else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rules"))
        .collect();
    files.sort();
    let (rs, rep) = RuleSet::load_files(&files).unwrap();
    println!("{}", rep.summary());
    assert_eq!(rep.errors_total, 0, "{:#?}", rep.errors);
    assert!(rs.rules().iter().any(|r| r.sid == 2029732));
    assert_eq!(rep.rules_read, rep.loaded + rep.skipped + rep.errors_total);
    assert_eq!((rep.rules_read, rep.loaded), (24_827, 24_827));
    println!(
        "ET Open loads {:.1}%",
        100.0 * rep.loaded as f64 / rep.rules_read as f64
    );
    let mut got: Vec<(&str, usize)> = rep
        .skip_reasons
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    let mut want = ET_OPEN_SKIPS.to_vec();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // Thresholds are read as written (sid 2001219: `threshold: type both, track by_src, count 5, seconds 120`).
    let with_threshold = rs.rules().iter().filter(|r| r.threshold.is_some()).count();
    assert!(with_threshold > 1_700, "{with_threshold}");
}

#[test]
fn threshold_keywords() {
    use flowbundle_rules::{Threshold, ThresholdKind, Track};
    let r = one(
        "alert tcp any any -> any any (content:\"a\"; threshold: type limit, track by_src, seconds 60, count 1; sid:1;)",
    );
    assert_eq!(
        r.threshold,
        Some(Threshold {
            kind: ThresholdKind::Limit,
            track: Track::BySrc,
            count: 1,
            seconds: 60,
            unique_on: None,
        })
    );
    let r = one(
        "alert tcp any any -> any any (content:\"a\"; detection_filter:track by_dst,count 5,seconds 10; sid:1;)",
    );
    assert_eq!(
        r.threshold.map(|t| (t.kind, t.track)),
        Some((ThresholdKind::DetectionFilter, Track::ByDst))
    );
    let rep = report(
        "alert tcp any any -> any any (content:\"a\"; threshold:type limit,track by_src,count 1,seconds 1; detection_filter:track by_src,count 1,seconds 1; sid:1;)\n\
         alert tcp any any -> any any (content:\"a\"; threshold:type limit,track by_src,count 1; sid:2;)\n\
         alert tcp any any -> any any (content:\"a\"; threshold:type backoff,track by_flow,count 1,multiplier 10; sid:3;)\n",
    );
    assert_eq!(rep.errors_total, 2, "{:?}", rep.errors);
    assert!(rep.errors[0].message.contains("more than one"));
    assert!(rep.errors[1].message.contains("missing `seconds`"));
    // `type backoff` loads (Suricata 7's backoff: `multiplier` instead of `seconds`).
    assert!(rep.skip_reasons.is_empty(), "{:?}", rep.skip_reasons);
    assert_eq!(rep.loaded, 1);
}

/// `target` names the attacked side for EVE; anything but `src_ip`/`dest_ip` is an error.
#[test]
fn target_keyword() {
    let r = one(r#"alert tcp any any -> any any (content:"a"; target:dest_ip; sid:1;)"#);
    assert_eq!(r.target, Some(AlertTarget::DestIp));
    let r = one(r#"alert tcp any any -> any any (content:"a"; target: src_ip; sid:1;)"#);
    assert_eq!(r.target, Some(AlertTarget::SrcIp));
    let r = one(r#"alert tcp any any -> any any (content:"a"; sid:1;)"#);
    assert_eq!(r.target, None);
    let rep = report(r#"alert tcp any any -> any any (content:"a"; target:both; sid:1;)"#);
    assert_eq!(rep.errors_total, 1);
}
