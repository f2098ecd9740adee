//! Hostile rule files: every one loads or fails with a clear, line-numbered error, in bounded memory, without panic.

use flowbundle_rules::{LoadOptions, LoadReport, RuleSet, Vars};

fn load(text: &[u8]) -> LoadReport {
    let (rs, rep) =
        RuleSet::parse(text, &Vars::new()).expect("per-rule problems never fail the whole load");
    assert_eq!(rep.rules_read, rep.loaded + rep.skipped + rep.errors_total);
    assert_eq!(rs.len(), rep.loaded);
    rep
}

fn first_error(rep: &LoadReport) -> (usize, &str) {
    let e = rep.errors.first().expect("an error");
    (e.line, e.message.as_str())
}

#[test]
fn unbalanced_quotes_and_parentheses() {
    let rep = load(b"alert tcp any any -> any any (msg:\"open; sid:1;)\nalert tcp any any -> any any (sid:2;\nalert tcp any any -> any any sid:3;)\n)))(((\n");
    let lines: Vec<usize> = rep.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![1, 2, 3, 4]);
    assert!(rep.errors[0].message.contains("unterminated quoted string"));
    assert!(rep.errors[1].message.contains("missing `)`"));
    assert!(rep.errors[2].message.contains("missing `(`"));
}

#[test]
fn deep_nesting_is_refused() {
    let deep = format!(
        "alert tcp {}1.2.3.4{} any -> any any (sid:1;)\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let rep = load(deep.as_bytes());
    assert_eq!(first_error(&rep).0, 1);
    assert!(
        first_error(&rep).1.contains("nesting"),
        "{}",
        first_error(&rep).1
    );
    let mut vars = Vars::new();
    vars.set("LOOP", "[$LOOP,1.2.3.4]");
    let (_, rep) = RuleSet::parse("alert tcp $LOOP any -> any any (sid:1;)", &vars).unwrap();
    assert!(
        rep.errors[0]
            .message
            .contains("variable cycle $LOOP -> $LOOP"),
        "{}",
        rep.errors[0].message
    );
    let pcre = format!(
        "alert tcp any any -> any any (content:\"a\"; pcre:\"/{}a{}/\"; sid:1;)",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let rep = load(pcre.as_bytes());
    assert_eq!(rep.loaded, 0);
    assert_eq!(rep.skipped + rep.errors_total, 1);
}

#[test]
fn invalid_utf8_reports_the_line_and_column() {
    let rep = load(b"alert tcp any any -> any any (sid:1;)\nalert tcp any any -> any any (msg:\"\xc3\x28\"; sid:2;)\n");
    assert_eq!(rep.loaded, 1);
    assert_eq!(
        first_error(&rep),
        (2, "invalid UTF-8 (byte 0xc3 at column 36)")
    );
}

#[test]
fn absurd_numbers() {
    let rep = load(
        b"alert tcp any any -> any any (content:\"a\"; depth:99999999999999999999999; sid:1;)\n\
alert tcp any any -> any any (content:\"a\"; sid:4294967296;)\n\
alert tcp any any -> any any (content:\"a\"; distance:-2000000; sid:3;)\n\
alert tcp any any -> any 99999 (sid:4;)\n\
alert tcp any any -> any any (priority:300; sid:5;)\n\
alert tcp any any -> any any (content:\"a\"; bsize:99999999999999999999999; sid:6;)\n",
    );
    assert_eq!(rep.loaded, 0);
    assert_eq!(
        rep.errors.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 6]
    );
}

#[test]
fn huge_inputs_are_bounded() {
    // One rule line of 1 MiB: refused by length, not buffered whole after the cap.
    let mut long = b"alert tcp any any -> any any (msg:\"".to_vec();
    long.extend(std::iter::repeat_n(b'x', 1 << 20));
    long.extend_from_slice(b"\"; sid:1;)\n");
    let rep = load(&long);
    assert!(first_error(&rep).1.contains("longer than"));
    // 100,000 continuation lines.
    let cont = "alert tcp any any -> any any (msg:\"x\"; \\\n".repeat(100_000);
    let rep = load(cont.as_bytes());
    assert_eq!(rep.rules_read, 1);
    assert!(first_error(&rep).1.contains("longer than"));
    // Thousands of options in one rule, and thousands of contents.
    let many = format!(
        "alert tcp any any -> any any ({} sid:1;)",
        "nocase; ".repeat(5000)
    );
    assert!(first_error(&load(many.as_bytes())).1.contains("options"));
    let contents = format!(
        "alert tcp any any -> any any ({} sid:1;)",
        "content:\"ab\"; ".repeat(300)
    );
    assert!(
        first_error(&load(contents.as_bytes()))
            .1
            .contains("content/pcre options")
    );
    // A pcre whose program would be huge is refused, not built.
    let rep =
        load(br#"alert tcp any any -> any any (content:"a"; pcre:"/(\w{1000}){1000}/"; sid:1;)"#);
    assert_eq!(rep.skipped, 1);
    // 50,000 rules of garbage and valid ones mixed: every line accounted for.
    let mut text = String::new();
    for i in 0..50_000 {
        if i % 2 == 0 {
            text.push_str(&format!(
                "alert tcp any any -> any any (content:\"r{i}\"; sid:{};)\n",
                i + 1
            ));
        } else {
            text.push_str("garbage (((\n");
        }
    }
    let rep = load(text.as_bytes());
    assert_eq!((rep.loaded, rep.errors_total), (25_000, 25_000));
}

#[test]
fn binary_noise_never_panics() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut bytes = Vec::with_capacity(1 << 18);
    for _ in 0..(1 << 18) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.push(match x % 7 {
            0 => b'\n',
            1 => b'"',
            2 => b';',
            3 => b'(',
            4 => b')',
            _ => (x >> 32) as u8,
        });
    }
    load(&bytes);
}

#[test]
fn pcre_memory_is_budgeted_across_the_rule_set() {
    // Each expression is allowed on its own; together they would need gigabytes.
    let mut text = String::new();
    for i in 0..400 {
        text.push_str(&format!(
            "alert tcp any any -> any any (content:\"a\"; pcre:\"/(\\\\w{{250}}){{30}}x{i}/\"; sid:{};)\n",
            i + 1
        ));
    }
    let rep = load(text.as_bytes());
    assert_eq!(rep.loaded + rep.skipped, 400);
    assert!(
        rep.skipped == 0
            || rep
                .skip_reasons
                .contains_key("pcre memory budget of the rule set exhausted")
    );
}

/// A `pcre` value written in several rules is compiled once and its program counted once against the budget: 1,100
/// rules sharing one back-referencing expression (counted at 256 KiB each, the backtracking engine's estimate) all
/// load, where counting it per rule would have skipped the 76 past 256 MiB; under a budget that one program fits,
/// every rule sharing it loads and a second program is refused.
#[test]
fn a_shared_pcre_program_counts_once_against_the_budget() {
    let rule = |sid: usize, pcre: &str| {
        format!("alert tcp any any -> any any (content:\"a\"; pcre:\"{pcre}\"; sid:{sid};)\n")
    };
    let shared: String = (1..=1100).map(|i| rule(i, "/(a)\\1b/")).collect();
    let rep = load(shared.as_bytes());
    assert_eq!(
        (rep.loaded, rep.skipped),
        (1100, 0),
        "{:?}",
        rep.skip_reasons
    );

    let budget = |text: &str, bytes: usize| {
        let opts = LoadOptions {
            vars: Vars::new(),
            pcre_memory: bytes,
            ..LoadOptions::default()
        };
        RuleSet::parse_with(&[("<text>", text.as_bytes())], &opts)
            .expect("per-rule problems never fail the whole load")
            .1
    };
    let text = format!(
        "{}{}{}{}",
        rule(1, "/(a)\\1b/"),
        rule(2, "/(a)\\1b/"),
        rule(3, "/(c)\\1d/"),
        rule(4, "/(a)\\1b/")
    );
    let one = (256 << 10) + 1024;
    let rep = budget(&text, one);
    assert_eq!((rep.loaded, rep.skipped), (3, 1), "{:?}", rep.skip_reasons);
    assert_eq!(rep.skipped_rules[0].sid, Some(3));
    assert_eq!(
        rep.skip_reasons
            .get("pcre memory budget of the rule set exhausted"),
        Some(&1)
    );
    // Room for both programs: everything loads; none at all: nothing with a pcre does.
    assert_eq!(budget(&text, 2 * one).loaded, 4);
    assert_eq!(budget(&text, 0).loaded, 0);
}

/// Every keyword of the keyword table, with garbage values and in every kind of buffer: each rule loads, is skipped
/// with a reason, or is a one-line error with its line; loaded rules then run over the garbage on every entry point
/// (the `rules_keywords` fuzz target does the same with arbitrary values).
#[test]
fn every_keyword_with_garbage_values() {
    let values = [
        "",
        ",,,,",
        "!",
        "-1",
        "99999999999999999999999999",
        "\"unterminated",
        "1,2,3,4,5,6,7,8,9,10,11,12",
        "relative,relative,little,big,string,hex,dec,oct",
        "bytes 2, offset -70000, oper <<, rvalue 99, result r",
        "\u{0}\u{7f}\u{ff}",
        "<>",
        "5<>1",
        "|41 4|",
        "/(a)\\1(?=b)(?<!c)(?>d)e++/RUYK",
        "/((((((((((a))))))))))\\10/",
    ];
    for k in flowbundle_rules::keyword::KEYWORDS {
        for v in values {
            let mut text = String::new();
            for prefix in ["", "http.uri; ", "dns.query; ", "tls.sni; ", "file_data; "] {
                text.push_str(&format!(
                    "alert ip any any -> any any ({prefix}content:\"a\"; {}:{v}; sid:1;)\n",
                    k.name
                ));
            }
            let rep = load(text.as_bytes());
            for e in &rep.errors {
                assert!(
                    !e.message.contains('\n') && e.line >= 1,
                    "{}: {}",
                    k.name,
                    e.message
                );
            }
            let rules = flowbundle_rules::testing::parse_checked(text.as_bytes())
                .unwrap_or_else(|e| panic!("{}:{v}: {e}", k.name));
            flowbundle_rules::testing::match_checked(&rules, v.as_bytes(), &[1])
                .unwrap_or_else(|e| panic!("{}:{v}: {e}", k.name));
        }
    }
}
