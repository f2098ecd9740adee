//! Fuzz the bench harness's pre-scheduling stage (`flowbundle_bench::prep::prepare`, as its proptest does): arbitrary
//! bytes read as a capture, then decoded, defragmented and hashed into descriptors. No panic; descriptor ids index the
//! dispatched trace.
#![no_main]

use flowbundle_bench::prep::{PrepOptions, prepare};
use flowbundle_ingest::Trace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok((trace, _)) = Trace::from_vec_partial(data.to_vec()) else {
        return;
    };
    let p = prepare(vec![("fuzz".into(), trace)], &PrepOptions::default());
    assert_eq!(p.trace.len(), p.descs.len());
    for (i, d) in p.descs.iter().enumerate() {
        assert_eq!(d.id as usize, i);
    }
});
