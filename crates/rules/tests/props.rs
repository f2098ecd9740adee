//! Property tests: the prefilter against aho-corasick, stream matching against one-chunk matching and against a
//! brute-force oracle, and the parser against arbitrary input.

mod common;

use common::prefilter::{oracle_hits, prefilter_hits};
use flowbundle_rules::prefilter::PatternSet;
use flowbundle_rules::testing::{match_checked, parse_checked, stream_sids};
use flowbundle_rules::{RuleSet, Vars};
use proptest::prelude::*;

fn small_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"abcAB \x00\xff".to_vec()), 1..=max)
}

/// One content: bytes, nocase, negated, and a position kind.
#[derive(Clone, Debug)]
struct C {
    bytes: Vec<u8>,
    nocase: bool,
    negated: bool,
    /// 0: none, 1: offset/depth, 2: distance/within, 3: distance only.
    pos: u8,
    a: i32,
    b: u32,
}

fn content() -> impl Strategy<Value = C> {
    (
        small_bytes(3),
        any::<bool>(),
        any::<bool>(),
        0u8..4,
        -3i32..6,
        0u32..8,
    )
        .prop_map(|(bytes, nocase, negated, pos, a, b)| C {
            bytes,
            nocase,
            negated,
            pos,
            a,
            b,
        })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x} ")).collect()
}

/// A stream rule built from contents; the first one is positive (a stream rule needs one to prefilter on).
fn rule_text(sid: u32, cs: &[C]) -> String {
    let mut s = format!("alert tcp any any -> any any (sid:{sid};");
    for (i, c) in cs.iter().enumerate() {
        let neg = c.negated && i > 0;
        s.push_str(&format!(
            " content:{}\"|{}|\";",
            if neg { "!" } else { "" },
            hex(&c.bytes)
        ));
        if c.nocase {
            s.push_str(" nocase;");
        }
        let len = c.bytes.len() as u32;
        match c.pos {
            1 => s.push_str(&format!(" offset:{}; depth:{};", c.a.max(0), len + c.b)),
            2 => s.push_str(&format!(" distance:{}; within:{};", c.a, len + c.b)),
            3 => s.push_str(&format!(" distance:{};", c.a)),
            _ => {}
        }
    }
    s.push(')');
    s
}

/// Brute force: does the chain match the whole stream? Tries every position of every content.
fn oracle(cs: &[C], data: &[u8]) -> bool {
    fn eq(a: &[u8], b: &[u8], nocase: bool) -> bool {
        if nocase {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    }
    fn region(c: &C, cursor: Option<i64>, n: i64) -> (i64, i64) {
        let len = c.bytes.len() as i64;
        match c.pos {
            1 => (
                i64::from(c.a.max(0)),
                i64::from(c.a.max(0)) + len + i64::from(c.b),
            ),
            2 | 3 => {
                let cur = cursor.unwrap_or(0);
                let s = (cur + i64::from(c.a)).max(0);
                let e = if c.pos == 2 {
                    cur + i64::from(c.a) + len + i64::from(c.b)
                } else {
                    n
                };
                (s, e)
            }
            _ => (0, n),
        }
    }
    fn go(cs: &[C], i: usize, cursor: Option<i64>, data: &[u8]) -> bool {
        let Some(c) = cs.get(i) else { return true };
        let n = data.len() as i64;
        let len = c.bytes.len() as i64;
        let (rs, re) = region(c, cursor, n);
        let re = re.min(n);
        let occurs = |p: i64| eq(&data[p as usize..(p + len) as usize], &c.bytes, c.nocase);
        let neg = c.negated && i > 0;
        if neg {
            let found = (rs..=re - len).any(|p| p >= 0 && occurs(p));
            return !found && go(cs, i + 1, cursor, data);
        }
        (rs..=re - len).any(|p| p >= 0 && occurs(p) && go(cs, i + 1, Some(p + len), data))
    }
    go(cs, 0, None, data)
}

proptest! {
    // 300 cases by default; `PROPTEST_CASES=20000` for a longer run.
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    ))]

    #[test]
    fn prefilter_equals_aho_corasick_at_any_split(
        pats in prop::collection::vec((small_bytes(9), any::<bool>()), 1..20),
        hay in prop::collection::vec(prop::sample::select(b"abcAB \x00\xff".to_vec()), 0..200),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let ps = PatternSet::new(&pats);
        prop_assert_eq!(prefilter_hits(&ps, &hay, &cuts), oracle_hits(&pats, &hay));
    }

    /// The fuzz target's entry point (`fuzz_targets/rules_prefilter.rs`): longer patterns (up to 20 bytes, so
    /// both check words and the byte-wise compare run) over longer data (so whole 64-position vector blocks run).
    #[test]
    fn prefilter_checked_against_brute_force(
        pats in prop::collection::vec((small_bytes(20), any::<bool>()), 1..16),
        hay in prop::collection::vec(prop::sample::select(b"abAB\x00".to_vec()), 0..600),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let r = flowbundle_rules::testing::prefilter_checked(&pats, &hay, &cuts);
        prop_assert!(r.is_ok(), "{:?}", r);
    }

    #[test]
    fn stream_alerts_do_not_depend_on_chunking_and_equal_the_oracle(
        rules in prop::collection::vec(prop::collection::vec(content(), 1..4), 1..6),
        data in prop::collection::vec(prop::sample::select(b"abcAB \x00\xff".to_vec()), 0..120),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let text: String = rules.iter().enumerate().map(|(i, cs)| rule_text(i as u32 + 1, cs) + "\n").collect();
        let (rs, report) = RuleSet::parse(&text, &Vars::new()).unwrap();
        let whole = stream_sids(&rs, &data, &[]);
        prop_assert_eq!(match_checked(&rs, &data, &cuts), Ok(()));
        let loaded: Vec<u32> = rs.rules().iter().map(|r| r.sid).collect();
        let expected: Vec<u32> = rules
            .iter()
            .enumerate()
            .filter(|(i, cs)| loaded.contains(&(*i as u32 + 1)) && oracle(cs, &data))
            .map(|(i, _)| i as u32 + 1)
            .collect();
        prop_assert_eq!(whole, expected, "rules:\n{}report: {:?}", text, report.errors);
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        prop_assert!(parse_checked(&bytes).is_ok());
    }

    #[test]
    fn parser_never_panics_on_mutated_rules(
        base in prop::sample::select(vec![
            r#"alert tcp $HOME_NET any -> [1.2.3.0/24,!1.2.3.4] 80:90 (msg:"x\"y"; flow:to_server,established; content:"a|00 01|b",depth 4,nocase; pcre:"/^a(b|c)+\x00/ims"; http_uri; content:"/x"; sid:1; rev:2;)"#,
            r#"alert http any any -> any any (http.uri; content:"/a"; distance:0; within:10; isdataat:!2,relative; bsize:<100; sid:2;)"#,
            r#"alert udp any any -> any 53 (content:"|01 00|"; offset:2; depth:2; dsize:>10; content:!"x"; sid:3;)"#,
        ]),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let mut b = base.as_bytes().to_vec();
        for (at, byte) in edits {
            let i = at % (b.len() + 1);
            match byte % 3 {
                0 => b.insert(i, byte),
                1 if i < b.len() => { b.remove(i); }
                _ if i < b.len() => b[i] = byte,
                _ => {}
            }
        }
        let rs = parse_checked(&b);
        prop_assert!(rs.is_ok(), "{:?}", rs.err());
        if let Ok(rs) = rs {
            prop_assert_eq!(match_checked(&rs, &b, &[7, 30, 31]), Ok(()));
        }
    }
}

/// Found by `fuzz/fuzz_targets/rules_match.rs`: a long run of one fast pattern with a negation after it used to
/// confirm a waiting candidate early on partial data when the pending list filled up, depending on the split.
#[test]
fn regression_pending_overflow_with_negation() {
    let rules = r#"alert tcp any any -> any any (content:"aaaa"; content:"aaaa"; distance:0; within:8; content:!"b"; distance:0; sid:13;)"#;
    let rs = parse_checked(rules.as_bytes()).unwrap();
    let input: &[u8] = b"\x61\x9c\x62\x61\x64\x2d\x75\x6e\x6b\x6e\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x6f\x77\x6e\x9e\x61\x61\x3f\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\xff\x3d\x00\x00\x7f\xff\x25\x00\x00\xcf\x61\x61\x61\x61\x61\x61\x9c\x61\x61\x9e\x61\xff\x3d\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x61\x20\x67\x65\x66\x2f\xff\xff\x66\x00\x00\x00\x00\xff\x3a\x20\x61\x71\x61\x05\x62\x78";
    let (head, body) = input.split_at(8);
    let cuts: Vec<usize> = head.iter().map(|&b| usize::from(b)).collect();
    assert_eq!(match_checked(&rs, body, &cuts), Ok(()));
    assert!(
        stream_sids(&rs, body, &cuts).is_empty(),
        "the trailing \"b\" vetoes every occurrence"
    );
}
