//! Arbitrary bytes into both capture readers (streaming and preloaded, plain and through the gzip detector): no
//! panic, no hang, and the two must agree on every record, counter and error. Same entry point as the crate's
//! proptests (`flowbundle_ingest::testing::read_both`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = flowbundle_ingest::testing::read_both(data) {
        panic!("streaming and preloaded readers disagree: {disagreement}");
    }
});
