//! Fuzz `flowbundle_decode::decode_bytes` on every link type, with and without tunnel decapsulation, then the
//! flow key, the FID and the three scheduler hashes of whatever decoded (the proptest `decode_never_panics`
//! calls the same entry point).
#![no_main]

use flowbundle_decode::{DecodeOptions, Fid, FlowHasher, FlowKey, decode_bytes};
use flowbundle_ingest::LinkType;
use libfuzzer_sys::fuzz_target;

const LINKS: [LinkType; 14] = [
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::LINUX_SLL,
    LinkType::LINUX_SLL2,
    LinkType::NULL,
    LinkType::LOOP,
    LinkType::RAW_BSD12,
    LinkType::RAW_BSD14,
    LinkType::C_HDLC,
    LinkType::PPP,
    LinkType::PPP_HDLC,
    LinkType(147),
];

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    let link = LINKS[usize::from(sel) % LINKS.len()];
    let opts = DecodeOptions {
        decap_tunnels: sel & 0x80 != 0,
        verify_ipv4_checksum: sel & 0x40 != 0,
        ..DecodeOptions::default()
    };
    let d = decode_bytes(link, bytes, &opts);
    assert!(d.payload.len() <= bytes.len());
    if let Some((k, _)) = FlowKey::from_decoded(&d) {
        let _ = FlowHasher::new(0).hashes(&k);
    }
    let _ = Fid::from_decoded(&d).map(|f| f.crc16());
});
