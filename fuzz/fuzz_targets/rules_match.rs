//! The matcher on arbitrary traffic: a fixed, varied rule set (every modifier, pcre, HTTP buffers) is run over
//! arbitrary data split at arbitrary points; stream alerts must not depend on the split, nothing may panic.
//! Input: the first 8 bytes choose the split points, the rest is the data. Same entry point as the proptests.
#![no_main]

use std::sync::OnceLock;

use flowbundle_rules::RuleSet;
use libfuzzer_sys::fuzz_target;

const RULES: &str = r#"
alert tcp any any -> any any (content:"GET"; depth:3; content:"HTTP/1."; distance:0; sid:1;)
alert tcp any any -> any any (content:"abc"; content:!"abd"; distance:0; within:10; sid:2;)
alert tcp any any -> any any (content:"USER"; nocase; pcre:"/^\s+root\b/R"; sid:3;)
alert tcp any any -> any any (content:"|00 01 02 03|"; offset:4; depth:8; sid:4;)
alert tcp any any -> any any (content:"x"; content:"y"; distance:-1; within:3; content:"z"; distance:0; sid:5;)
alert tcp any any -> any any (content:"key="; isdataat:4,relative; pcre:"/[a-f0-9]{4}$/R"; sid:6;)
alert ip any any -> any any (content:"needle"; fast_pattern; content:"hay"; sid:7;)
alert udp any any -> any any (content:"q"; dsize:<100; isdataat:!2,relative; sid:8;)
alert http any any -> any any (http.uri; content:"/a"; http.method; content:"GET"; sid:9;)
alert http any any -> any any (http.header; content:"Host"; http.cookie; content:"id="; sid:10;)
alert http any any -> any any (file_data; content:"<script"; nocase; pcre:!"/nonce=/"; sid:11;)
alert http any any -> any any (http.host; content:".com"; endswith; bsize:>4; sid:12;)
alert tcp any any -> any any (content:"aaaa"; content:"aaaa"; distance:0; within:8; content:!"b"; distance:0; sid:13;)
"#;

fuzz_target!(|data: &[u8]| {
    static SET: OnceLock<RuleSet> = OnceLock::new();
    let rules = SET.get_or_init(|| {
        flowbundle_rules::testing::parse_checked(RULES.as_bytes()).expect("fixed rules")
    });
    let (head, body) = data.split_at(data.len().min(8));
    let cuts: Vec<usize> = head.iter().map(|&b| usize::from(b)).collect();
    if let Err(e) = flowbundle_rules::testing::match_checked(rules, body, &cuts) {
        panic!("{e}");
    }
});
