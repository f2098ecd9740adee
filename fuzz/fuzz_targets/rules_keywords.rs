//! Arbitrary values for every rule keyword: the first byte picks a keyword of the keyword table, the rest is its
//! value, placed after a content in a sticky buffer of each kind. Each rule loads, is skipped with a reason, or is an
//! error with its line; nothing panics. Rules that load run over the value's bytes on every entry point, and the
//! `xbits` of those that have them are checked and applied on a small table (addresses and times from the bytes),
//! which stays within its capacity; so are the `tag`s (host tags on a small host table, session tags on a flow's
//! list, packets counted towards both).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let table = flowbundle_rules::keyword::KEYWORDS;
    let Some(k) = table.get(usize::from(pick) % table.len()) else {
        return;
    };
    let value = String::from_utf8_lossy(rest).replace(['\n', '\r'], " ");
    let mut text = String::new();
    for prefix in ["", "http.uri; ", "dns.query; ", "tls.sni; ", "tcp.hdr; "] {
        text.push_str(&format!(
            "alert ip any any -> any any ({prefix}content:\"a\"; {}:{value}; sid:1;)\n",
            k.name
        ));
        text.push_str(&format!(
            "alert ip any any -> any any ({prefix}content:\"a\"; {}; {value} sid:2;)\n",
            k.name
        ));
    }
    match flowbundle_rules::testing::parse_checked(text.as_bytes()) {
        Ok(rules) => {
            if let Err(e) =
                flowbundle_rules::testing::match_checked(&rules, rest, &[rest.len() / 2])
            {
                panic!("{e}");
            }
            let mut table = flowbundle_rules::XbitTable::with_capacity(4);
            let mut hosts = flowbundle_rules::HostTags::with_capacity(4);
            let mut session = flowbundle_rules::TagList::default();
            for (i, r) in rules.rules().iter().enumerate() {
                for (j, b) in rest.iter().enumerate().take(16) {
                    let src = std::net::IpAddr::from([10, 0, 0, b & 7]);
                    let dst = std::net::IpAddr::from([10, 0, 0, (b >> 3) & 7]);
                    let now = (i as u64 * 16 + j as u64) * u64::from(*b) * 100_000_000;
                    if table.conditions_hold(&r.xbits, src, dst, now) {
                        table.apply(&r.xbits, src, dst, now);
                    }
                    assert!(table.len() <= 4);
                    let secs = now / 1_000_000_000;
                    for t in &r.tags {
                        match t.scope {
                            flowbundle_rules::tag::TagScope::Session => {
                                session.add(1, r.sid, t, secs);
                            }
                            flowbundle_rules::tag::TagScope::Host(side) => {
                                let host = match side {
                                    flowbundle_rules::tag::HostSide::Src => src,
                                    flowbundle_rules::tag::HostSide::Dst => dst,
                                };
                                hosts.add(host, 1, r.sid, t, secs);
                            }
                        }
                    }
                    hosts.on_packet(src, dst, secs, u32::from(*b));
                    session.on_packet(secs, u32::from(*b));
                    assert!(hosts.hosts() <= 4);
                    assert!(session.len() <= flowbundle_rules::tag::MAX_TAGS);
                }
            }
        }
        Err(e) => panic!("{e}"),
    }
});
