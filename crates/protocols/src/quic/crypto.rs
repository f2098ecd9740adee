//! The Initial packets' protection (RFC 9001 §5, RFC 9369 for v2): keys derived from the destination connection
//! id, header protection removed, the payload opened.

use aes::Aes128;
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes_gcm::{AeadInOut, Aes128Gcm};
use hkdf::Hkdf;
use sha2::Sha256;

use super::*;

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
pub(super) fn expand_label(secret: &[u8], label: &str, out: &mut [u8]) -> Option<()> {
    let hk = Hkdf::<Sha256>::from_prk(secret).ok()?;
    let full = [b"tls13 ".as_slice(), label.as_bytes()].concat();
    let len = u16::try_from(out.len()).ok()?.to_be_bytes();
    let info = [&len[..], &[u8::try_from(full.len()).ok()?], &full, &[0u8]].concat();
    hk.expand(&info, out).ok()
}

/// Initial packet protection keys for one direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitialKeys {
    pub key: [u8; 16],
    pub iv: [u8; 12],
    pub hp: [u8; 16],
}

/// Derives the client's (`client = true`) or server's Initial keys from the client's first DCID.
pub fn initial_keys(version: u32, dcid: &[u8], client: bool) -> Option<InitialKeys> {
    let (initial, _) = Hkdf::<Sha256>::extract(Some(salt(version)), dcid);
    let mut secret = [0u8; 32];
    expand_label(
        &initial,
        if client { "client in" } else { "server in" },
        &mut secret,
    )?;
    let v2 = family(version) == Some(Family::V2);
    let (lk, li, lh) = if v2 {
        ("quicv2 key", "quicv2 iv", "quicv2 hp")
    } else {
        ("quic key", "quic iv", "quic hp")
    };
    let mut k = InitialKeys {
        key: [0; 16],
        iv: [0; 12],
        hp: [0; 16],
    };
    expand_label(&secret, lk, &mut k.key)?;
    expand_label(&secret, li, &mut k.iv)?;
    expand_label(&secret, lh, &mut k.hp)?;
    Some(k)
}

/// Removes header protection and decrypts one Initial packet (`pkt` = this packet only, from its first byte to
/// the end of its Length). Returns the plaintext payload (frames) in `out`.
pub fn decrypt_initial(
    pkt: &[u8],
    h: &LongHeader<'_>,
    keys: &InitialKeys,
    out: &mut Vec<u8>,
) -> Option<()> {
    let sample = pkt.get(h.pn_offset + 4..h.pn_offset + 20)?;
    let hp = Aes128::new_from_slice(&keys.hp).ok()?;
    let mut mask = aes::Block::try_from(sample).ok()?;
    hp.encrypt_block(&mut mask);
    let first = h.first ^ (mask[0] & 0x0f);
    let pn_len = usize::from(first & 3) + 1;
    let mut header = pkt.get(..h.pn_offset + pn_len)?.to_vec();
    header[0] = first;
    let mut pn: u64 = 0;
    for i in 0..pn_len {
        let b = header[h.pn_offset + i] ^ mask[1 + i];
        header[h.pn_offset + i] = b;
        pn = (pn << 8) | u64::from(b);
    }
    let end = h.pn_offset + h.length;
    let ct = pkt.get(h.pn_offset + pn_len..end)?;
    if ct.len() < 16 {
        return None;
    }
    let (body, tag) = ct.split_at(ct.len() - 16);
    let mut nonce = keys.iv;
    for (i, b) in pn.to_be_bytes().iter().enumerate() {
        nonce[4 + i] ^= b;
    }
    let aead = Aes128Gcm::new_from_slice(&keys.key).ok()?;
    out.clear();
    out.extend_from_slice(body);
    let nonce = aes_gcm::Nonce::try_from(&nonce[..]).ok()?;
    let tag = aes_gcm::Tag::try_from(tag).ok()?;
    aead.decrypt_inout_detached(&nonce, &header, out.as_mut_slice().into(), &tag)
        .ok()?;
    Some(())
}
