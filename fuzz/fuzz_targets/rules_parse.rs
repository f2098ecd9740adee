//! Arbitrary bytes as a rule file: no panic, no hang, bounded memory, and every rule accounted for exactly once
//! (loaded, skipped with a reason, or an error with its line). Rules that load are then run over the same bytes
//! as stream, datagram and HTTP data. Same entry points as the crate's proptests (`flowbundle_rules::testing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match flowbundle_rules::testing::parse_checked(data) {
        Ok(rules) => {
            if let Err(e) = flowbundle_rules::testing::match_checked(
                &rules,
                data,
                &[data.len() / 3, data.len() / 2],
            ) {
                panic!("{e}");
            }
        }
        Err(e) => panic!("{e}"),
    }
});
