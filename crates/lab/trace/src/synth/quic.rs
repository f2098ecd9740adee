//! QUIC version 1 Initial packets, protected for real (RFC 9001 §5): the engine (and Wireshark) derive the same
//! public Initial keys from the client's Destination Connection ID and decrypt the ClientHello inside.
//!
//! `initial_secret = HKDF-Extract(salt_v1, DCID)`; the client and server secrets are `HKDF-Expand-Label` of it with
//! `client in` / `server in`; each gives an AES-128-GCM key, an IV and a header-protection key. A packet's payload
//! is sealed with nonce `IV ⊕ packet number` and the header as associated data, then the first byte's low bits and
//! the packet number are masked with `AES-ECB(hp, sample)`, the sample being 16 bytes taken 4 bytes after the start
//! of the packet number. RFC 9001 Appendix A's vectors check the key schedule.

use aes::Aes128;
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes_gcm::{AeadInOut, Aes128Gcm};
use hkdf::Hkdf;
use sha2::Sha256;

use super::tls::varint;

/// RFC 9001 §5.2 salt of QUIC version 1.
const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];

/// Packet protection keys of one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    pub key: [u8; 16],
    pub iv: [u8; 12],
    pub hp: [u8; 16],
}

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
fn expand_label(prk: &Hkdf<Sha256>, label: &str, out: &mut [u8]) {
    let full = [b"tls13 ".as_slice(), label.as_bytes()].concat();
    let mut info = Vec::with_capacity(4 + full.len());
    info.extend_from_slice(&(out.len() as u16).to_be_bytes());
    info.push(full.len() as u8);
    info.extend_from_slice(&full);
    info.push(0);
    // Output lengths here (16, 12, 32) are far below HKDF's limit, so expand cannot fail.
    let _ = prk.expand(&info, out);
}

/// The Initial keys of the client (`client = true`) or the server for a connection whose client chose `dcid`.
pub(crate) fn initial_keys(dcid: &[u8], client: bool) -> Keys {
    let (_, initial) = Hkdf::<Sha256>::extract(Some(&SALT_V1), dcid);
    let mut secret = [0u8; 32];
    expand_label(
        &initial,
        if client { "client in" } else { "server in" },
        &mut secret,
    );
    let hk =
        Hkdf::<Sha256>::from_prk(&secret).unwrap_or_else(|_| Hkdf::<Sha256>::new(None, &secret));
    let mut k = Keys {
        key: [0; 16],
        iv: [0; 12],
        hp: [0; 16],
    };
    expand_label(&hk, "quic key", &mut k.key);
    expand_label(&hk, "quic iv", &mut k.iv);
    expand_label(&hk, "quic hp", &mut k.hp);
    k
}

/// Builds a protected long-header Initial packet: `dcid`, `scid`, packet number `pn` (4 bytes on the wire),
/// plaintext `frames` (padded with PADDING frames so the packet is at least `min_len` bytes).
pub(crate) fn initial_packet(
    keys: &Keys,
    dcid: &[u8],
    scid: &[u8],
    pn: u32,
    frames: &[u8],
    min_len: usize,
) -> Vec<u8> {
    const PN_LEN: usize = 4;
    let mut header = Vec::with_capacity(64);
    header.push(0xc0 | (PN_LEN as u8 - 1));
    header.extend_from_slice(&1u32.to_be_bytes());
    header.push(dcid.len() as u8);
    header.extend_from_slice(dcid);
    header.push(scid.len() as u8);
    header.extend_from_slice(scid);
    varint(0, &mut header); // token length
    // Length (2-byte varint) covers the packet number, the payload and the 16-byte tag.
    let fixed = header.len() + 2 + PN_LEN + 16;
    let mut payload = frames.to_vec();
    if fixed + payload.len() < min_len {
        payload.resize(min_len - fixed, 0);
    }
    // The header-protection sample needs 4 + 16 bytes after the packet number start.
    if payload.len() + 16 < 20 {
        payload.resize(4, 0);
    }
    let length = PN_LEN + payload.len() + 16;
    header.extend_from_slice(&((length as u16) | 0x4000).to_be_bytes());
    let pn_offset = header.len();
    header.extend_from_slice(&pn.to_be_bytes());
    let mut nonce = keys.iv;
    for (i, b) in u64::from(pn).to_be_bytes().iter().enumerate() {
        nonce[4 + i] ^= b;
    }
    let mut body = payload;
    let aead = Aes128Gcm::new(&keys.key.into());
    let tag = aead
        .encrypt_inout_detached(&nonce.into(), &header, body.as_mut_slice().into())
        .map(|t| t.to_vec())
        .unwrap_or_else(|_| vec![0; 16]);
    let mut pkt = header;
    pkt.extend_from_slice(&body);
    pkt.extend_from_slice(&tag);
    // Header protection.
    let mut sample = [0u8; 16];
    sample.copy_from_slice(&pkt[pn_offset + 4..pn_offset + 20]);
    let hp = Aes128::new(&keys.hp.into());
    let mut mask = aes::Block::from(sample);
    hp.encrypt_block(&mut mask);
    pkt[0] ^= mask[0] & 0x0f;
    for i in 0..PN_LEN {
        pkt[pn_offset + i] ^= mask[1 + i];
    }
    pkt
}

/// A CRYPTO frame carrying `data` at `offset`.
pub(crate) fn crypto_frame(offset: u64, data: &[u8], out: &mut Vec<u8>) {
    out.push(0x06);
    varint(offset, out);
    varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn rfc9001_appendix_a_keys() {
        let dcid = hex("8394c8f03e515708");
        let c = initial_keys(&dcid, true);
        assert_eq!(c.key.to_vec(), hex("1f369613dd76d5467730efcbe3b1a22d"));
        assert_eq!(c.iv.to_vec(), hex("fa044b2f42a3fd3b46fb255c"));
        assert_eq!(c.hp.to_vec(), hex("9f50449e04a0e810283a1e9933adedd2"));
        let s = initial_keys(&dcid, false);
        assert_eq!(s.key.to_vec(), hex("cf3a5331653c364c88f0f379b6067e37"));
        assert_eq!(s.iv.to_vec(), hex("0ac1493ca1905853b0bba03e"));
        assert_eq!(s.hp.to_vec(), hex("c206b8d9b9f0f37644430b490eeaa314"));
    }

    #[test]
    fn the_engine_decrypts_our_initial() {
        use flowbundle_protocols::quic;
        let dcid = hex("8394c8f03e515708");
        let keys = initial_keys(&dcid, true);
        let mut frames = Vec::new();
        crypto_frame(0, b"hello crypto", &mut frames);
        let pkt = initial_packet(&keys, &dcid, &[1, 2, 3, 4], 2, &frames, 1200);
        assert!(pkt.len() >= 1200);
        let theirs = quic::initial_keys(1, &dcid, true).unwrap();
        assert_eq!(
            (theirs.key, theirs.iv, theirs.hp),
            (keys.key, keys.iv, keys.hp)
        );
        let h = quic::parse_long_header(&pkt).expect("long header");
        let mut out = Vec::new();
        quic::decrypt_initial(&pkt, &h, &theirs, &mut out).expect("decrypts");
        assert_eq!(&out[..frames.len()], &frames[..]);
        assert!(
            out[frames.len()..].iter().all(|&b| b == 0),
            "PADDING frames"
        );
    }
}
