//! Fuzz the bench harness's per-packet cost file reader (`flowbundle_bench::cost::parse`, the entry point its
//! proptests call) on arbitrary bytes: no panic, memory bounded by the trace size whatever the file says.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let packets = data.first().map_or(0, |&b| usize::from(b));
    if let Ok(f) = flowbundle_bench::cost::parse(data, packets) {
        assert_eq!(f.cost_ns.len(), packets);
        assert!(f.examples.len() <= 5);
    }
});
