//! A `dataset`/`datarep` data file of each set type (the first byte picks it), read as a rule's `load` reads it,
//! under a small memcap. Never panics; a set that loaded writes out (as `save` does) to a file that loads back
//! to the same set.
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
    let Ok(n) = t.load_from(file, path) else {
        return;
    };
    assert!(t.len() <= n);
    let mut saved = Vec::new();
    t.write_to(&mut saved).expect("writing to memory");
    let mut back = Table::new("fuzz", kind, 4096, None);
    let m = back.load_from(&saved[..], path).expect("a saved set loads");
    assert_eq!((m, back.len()), (t.len(), t.len()));
    let mut again = Vec::new();
    back.write_to(&mut again).expect("writing to memory");
    assert_eq!(saved, again, "a saved set loads back to itself");
});
