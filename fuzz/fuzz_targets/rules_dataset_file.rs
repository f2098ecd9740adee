//! A `dataset`/`datarep` data file of each set type (the first byte picks it), read as a rule's `load` reads it,
//! under a small memcap. Never panics; bad lines are skipped and counted; a set that loaded writes out (as `save`
//! does) to a file that loads back whole to the same set.
#![no_main]

use flowbundle_rules::dataset::{SetType, Table};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const TYPES: [SetType; 5] = [
    SetType::String,
    SetType::Md5,
    SetType::Sha256,
    SetType::Ipv4,
    SetType::Ip,
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, file)) = data.split_first() else {
        return;
    };
    let kind = TYPES[usize::from(sel) % TYPES.len()];
    let path = Path::new("fuzz.lst");
    let mut t = Table::new("fuzz", kind, 4096, None);
    let Ok(read) = t.load_from(file, path) else {
        return;
    };
    assert!(t.len() <= read.loaded);
    assert!(read.skipped.len() <= read.skipped_total.min(20));
    let mut saved = Vec::new();
    t.write_to(&mut saved).expect("writing to memory");
    let mut back = Table::new("fuzz", kind, 4096, None);
    let m = back.load_from(&saved[..], path).expect("a saved set loads");
    assert_eq!(
        m.skipped_total, 0,
        "a saved set loads whole: {:?}",
        m.skipped
    );
    assert_eq!((m.loaded, back.len()), (t.len(), t.len()));
    let mut again = Vec::new();
    back.write_to(&mut again).expect("writing to memory");
    assert_eq!(saved, again, "a saved set loads back to itself");
});
