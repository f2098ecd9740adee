//! The three packet applications as batch kernels, and their CPU reference implementations.
//!
//! | app | per packet | output |
//! |---|---|---|
//! | `dpi` | Aho-Corasick over the payload with the loaded pattern set ([`crate::dfa`]) | [`DpiResult`]: match count, first pattern id |
//! | `md5` | RFC 1321 digest of the payload | 16 bytes |
//! | `aes` | AES-128-CBC of the payload with its connection's key, **in place** | the payload, encrypted |
//!
//! # AES rules (every device follows them bit for bit)
//! * **Key**: one 128-bit key per connection, `batch.keys()[batch.conns()[i]]`.
//! * **IV**: `E_K(seq_le64 ‖ 0^64)`, the connection's key applied to the packet's sequence number in its connection
//!   (little-endian `u64`, zero-padded to 16 bytes). This is the NIST SP 800-38A Appendix C recommendation (encrypt a
//!   nonce under the same key): unpredictable, never repeated within a connection, and derivable on a device from
//!   data it already has, so no IV table is shipped.
//! * **Length is preserved (no padding)**: the payload is encrypted in place and returned, so it cannot grow. The
//!   `len / 16` whole blocks are CBC-encrypted; a trailing partial block of `r = len % 16` bytes is XORed with the
//!   first `r` bytes of `E_K(C_last)`, where `C_last` is the last ciphertext block (the IV when the payload is
//!   shorter than a block). This is *residual block termination*; [`aes_decrypt_packet`] inverts it.
//!
//! [`aes_encrypt_packet`] (the per-packet reference) runs whole blocks through RustCrypto's `cbc` over `aes`, which
//! picks AES-NI at run time when the CPU has it. The batch kernel interleaves eight packets' chains through the
//! AES-NI pipeline ([`crate::aeslanes`]): same bytes, about 3× the speed of one chain per packet.
//!
//! # Parallelism and speed per core
//! The CPU kernels split a batch over the current rayon pool (the CPU device owns one sized to its cores), in
//! chunks of packets so the per-task overhead stays far below the per-packet work. Within a chunk each kernel uses
//! the independence of packets the way its algorithm allows: `dpi` walks eight packets at once
//! ([`Dfa::scan_lanes`]: eight independent table loads in flight; four walks and the prefiltered scan measured
//! slower), `md5` hashes 16 packets per AVX-512 register ([`crate::md5lanes`]) and `aes` encrypts eight
//! chains at once ([`crate::aeslanes`]). `BENCHMARKS.md` ("Heterogeneous kernels") has the figures.

use aes::Aes128;
use aes::cipher::{
    Block, BlockCipherEncrypt, BlockModeDecrypt, BlockModeEncrypt, InnerIvInit, KeyInit,
};
use md5::Digest;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::aeslanes::{Packet as LanePacket, RoundKeys, encrypt_many};
use crate::batch::PacketBatch;
use crate::dfa::{Dfa, DpiResult};

/// The packet applications Pythia runs (paper §II-b).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PacketApp {
    /// Deep packet inspection: Aho-Corasick multi-pattern search.
    Dpi,
    /// Packet hashing: MD5 per packet.
    Md5,
    /// Encryption: AES-128-CBC per packet, a key per connection.
    Aes,
}

impl PacketApp {
    /// Every application, in the paper's order.
    pub const ALL: [PacketApp; 3] = [PacketApp::Dpi, PacketApp::Md5, PacketApp::Aes];

    /// Lower-case name, as on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            PacketApp::Dpi => "dpi",
            PacketApp::Md5 => "md5",
            PacketApp::Aes => "aes",
        }
    }

    /// Whether the kernel changes the payload (so a discrete device must copy it back).
    pub fn writes_payload(self) -> bool {
        self == PacketApp::Aes
    }
}

impl std::fmt::Display for PacketApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PacketApp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "dpi" => Ok(PacketApp::Dpi),
            "md5" => Ok(PacketApp::Md5),
            "aes" => Ok(PacketApp::Aes),
            other => Err(format!(
                "unknown application `{other}` (expected dpi, md5 or aes)"
            )),
        }
    }
}

/// Per-packet results of one batch. `aes` results are the batch's payloads themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchOutput {
    /// `dpi`: one result per packet.
    pub dpi: Vec<DpiResult>,
    /// `md5`: one digest per packet.
    pub md5: Vec<[u8; 16]>,
}

/// Packets the `dpi` kernel walks at once (see [`Dfa::scan_lanes`]).
const DPI_LANES: usize = 8;

/// Packets per rayon task: big enough that scheduling costs little against ~1,500-byte packets.
const CHUNK: usize = 64;

/// Runs `app` over `batch` on the current rayon pool, writing `out` (and, for `aes`, the payloads).
pub fn run_cpu(app: PacketApp, dfa: &Dfa, batch: &mut PacketBatch, out: &mut BatchOutput) {
    match app {
        PacketApp::Dpi => dpi_batch(dfa, batch, &mut out.dpi),
        PacketApp::Md5 => md5_batch(batch, &mut out.md5),
        PacketApp::Aes => aes_batch(batch),
    }
}

/// `dpi` over a batch.
pub fn dpi_batch(dfa: &Dfa, batch: &PacketBatch, out: &mut Vec<DpiResult>) {
    let n = batch.len();
    out.clear();
    out.resize(n, DpiResult::NONE);
    let payload = |i: usize| batch.payload(i).unwrap_or(&[]);
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, res)| {
        let base = c * CHUNK;
        // Eight interleaved walks over class blocks (`Dfa::scan_lanes`): eight loads in flight per byte position.
        // Measured against four walks and the prefiltered scan (0.35x) in BENCHMARKS.md. The lanes advance
        // together only as far as the shortest packet of the group (the rest is walked one packet at a time), so
        // the chunk's packets are grouped by length first: with mixed sizes, neighbours in length order share most
        // of their length (mixed 40-1,500-byte batch: 3.9 Gbit/s against 1.8 without grouping; equal sizes within
        // noise). A stable sort of at most `CHUNK` indices, results written back in batch order. Not done:
        // refilling a lane as its packet ends (as `md5lanes` does), which would remove the single-walk tails.
        let mut order = [0u16; CHUNK];
        let len = res.len().min(CHUNK);
        for (k, o) in order.iter_mut().enumerate().take(len) {
            *o = k as u16;
        }
        let order = &mut order[..len];
        order.sort_by_key(|&k| payload(base + k as usize).len());
        let mut group = order.chunks_exact(DPI_LANES);
        for g in &mut group {
            let r =
                dfa.scan_lanes::<DPI_LANES>(std::array::from_fn(|k| payload(base + g[k] as usize)));
            for (&k, r) in g.iter().zip(r) {
                if let Some(slot) = res.get_mut(k as usize) {
                    *slot = r;
                }
            }
        }
        for &k in group.remainder() {
            if let Some(slot) = res.get_mut(k as usize) {
                *slot = dfa.scan(payload(base + k as usize));
            }
        }
    });
}

/// `md5` over a batch.
pub fn md5_batch(batch: &PacketBatch, out: &mut Vec<[u8; 16]>) {
    out.clear();
    out.resize(batch.len(), [0; 16]);
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, res)| {
        let mut msgs: [&[u8]; CHUNK] = [&[]; CHUNK];
        for (k, m) in msgs.iter_mut().enumerate().take(res.len()) {
            *m = batch.payload(c * CHUNK + k).unwrap_or(&[]);
        }
        crate::md5lanes::digest_many(&msgs[..res.len()], res);
    });
}

/// `md5` of one payload with the `md-5` crate: the reference [`md5_batch`] is tested against.
pub fn md5_packet(payload: &[u8]) -> [u8; 16] {
    md5::Md5::digest(payload).into()
}

/// `aes` over a batch, in place.
pub fn aes_batch(batch: &mut PacketBatch) {
    let keys: Vec<[u8; 16]> = batch.keys().to_vec();
    let conns: Vec<u32> = batch.conns().to_vec();
    let seqs: Vec<u32> = batch.seqs().to_vec();
    let mut payloads = batch.payloads_mut();
    payloads
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, ps)| {
            // Each connection's key is expanded once per chunk (the batcher keeps a flow's packets together, so a
            // chunk holds few connections).
            let mut expanded: Vec<(u32, RoundKeys)> = Vec::new();
            let mut which = [0usize; CHUNK];
            for (k, w) in which.iter_mut().enumerate().take(ps.len()) {
                let conn = conns.get(c * CHUNK + k).copied().unwrap_or(0);
                *w = match expanded.iter().rposition(|(cc, _)| *cc == conn) {
                    Some(pos) => pos,
                    None => {
                        let key = keys.get(conn as usize).copied().unwrap_or([0; 16]);
                        expanded.push((conn, RoundKeys::new(&key)));
                        expanded.len() - 1
                    }
                };
            }
            let expanded = &expanded;
            encrypt_many(ps.iter_mut().enumerate().filter_map(|(k, p)| {
                Some(LanePacket {
                    payload: p,
                    seq: seqs.get(c * CHUNK + k).copied().unwrap_or(0),
                    keys: &expanded.get(*which.get(k)?)?.1,
                })
            }));
        });
}

/// The IV of a packet: `E_K(seq_le64 ‖ 0^64)`.
fn packet_iv(cipher: &Aes128, seq: u32) -> Block<Aes128> {
    let mut iv = Block::<Aes128>::default();
    iv[..8].copy_from_slice(&u64::from(seq).to_le_bytes());
    cipher.encrypt_block(&mut iv);
    iv
}

/// Encrypts one payload in place under `key` with sequence number `seq` (see the module docs for the rules).
pub fn aes_encrypt_packet(key: &[u8; 16], seq: u32, payload: &mut [u8]) {
    aes_encrypt_with(&Aes128::new(&(*key).into()), seq, payload);
}

fn aes_encrypt_with(cipher: &Aes128, seq: u32, payload: &mut [u8]) {
    let iv = packet_iv(cipher, seq);
    let (blocks, tail) = Block::<Aes128>::slice_as_chunks_mut(payload);
    let last = match blocks.last() {
        None => iv,
        Some(_) => {
            let mut enc = cbc::Encryptor::<Aes128>::inner_iv_init(cipher.clone(), &iv);
            enc.encrypt_blocks(blocks);
            blocks.last().copied().unwrap_or(iv)
        }
    };
    if !tail.is_empty() {
        let mut pad = last;
        cipher.encrypt_block(&mut pad);
        for (t, k) in tail.iter_mut().zip(pad.iter()) {
            *t ^= k;
        }
    }
}

/// Inverts [`aes_encrypt_packet`].
pub fn aes_decrypt_packet(key: &[u8; 16], seq: u32, payload: &mut [u8]) {
    let cipher = Aes128::new(&(*key).into());
    let iv = packet_iv(&cipher, seq);
    let (blocks, tail) = Block::<Aes128>::slice_as_chunks_mut(payload);
    let last = blocks.last().copied().unwrap_or(iv);
    if !tail.is_empty() {
        let mut pad = last;
        cipher.encrypt_block(&mut pad);
        for (t, k) in tail.iter_mut().zip(pad.iter()) {
            *t ^= k;
        }
    }
    if !blocks.is_empty() {
        let mut dec = cbc::Decryptor::<Aes128>::inner_iv_init(cipher, &iv);
        dec.decrypt_blocks(blocks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::BatchLimits;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        crate::dfa::parse_hex_patterns(s).0.concat()
    }

    /// NIST SP 800-38A F.2.1 (CBC-AES128.Encrypt), run through the same CBC core as the kernel.
    #[test]
    fn nist_sp800_38a_cbc_aes128() {
        let key: [u8; 16] = hex("2b7e151628aed2a6abf7158809cf4f3c").try_into().unwrap();
        let iv: [u8; 16] = hex("000102030405060708090a0b0c0d0e0f").try_into().unwrap();
        let mut data = hex(
            "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
             30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
        );
        let want = hex(
            "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2\
             73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7",
        );
        let cipher = Aes128::new(&key.into());
        let (blocks, _) = Block::<Aes128>::slice_as_chunks_mut(&mut data);
        cbc::Encryptor::<Aes128>::inner_iv_init(cipher, &iv.into()).encrypt_blocks(blocks);
        assert_eq!(data, want);
    }

    /// The packet rule on an exact multiple of the block size is plain CBC with IV = E_K(seq ‖ 0).
    #[test]
    fn packet_rule_is_cbc_with_encrypted_nonce_iv() {
        let key: [u8; 16] = hex("2b7e151628aed2a6abf7158809cf4f3c").try_into().unwrap();
        let cipher = Aes128::new(&key.into());
        let mut nonce = Block::<Aes128>::default();
        nonce[0] = 5;
        cipher.encrypt_block(&mut nonce);
        let mut data = vec![0x42u8; 48];
        let mut want = data.clone();
        let (blocks, _) = Block::<Aes128>::slice_as_chunks_mut(&mut want);
        cbc::Encryptor::<Aes128>::inner_iv_init(cipher, &nonce).encrypt_blocks(blocks);
        aes_encrypt_packet(&key, 5, &mut data);
        assert_eq!(data, want);
    }

    /// RFC 1321 appendix A.5 test suite.
    #[test]
    fn rfc1321_suite() {
        let suite: [(&[u8], &str); 7] = [
            (b"", "d41d8cd98f00b204e9800998ecf8427e"),
            (b"a", "0cc175b9c0f1b6a831c399e269772661"),
            (b"abc", "900150983cd24fb0d6963f7d28e17f72"),
            (b"message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            (
                b"abcdefghijklmnopqrstuvwxyz",
                "c3fcd3d76192e4007dfb496cca67e13b",
            ),
            (
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                "d174ab98d277d9f5a5611c2c9f419d9f",
            ),
            (
                b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ];
        let mut batch = PacketBatch::new(BatchLimits::default());
        for (i, (m, _)) in suite.iter().enumerate() {
            batch.push(i as u64, &[0; 16], 0, i as u64, m).unwrap();
        }
        let mut out = Vec::new();
        md5_batch(&batch, &mut out);
        for (i, (_, d)) in suite.iter().enumerate() {
            assert_eq!(out[i].to_vec(), hex(d), "message {i}");
        }
    }

    #[test]
    fn app_names_round_trip() {
        for a in PacketApp::ALL {
            assert_eq!(a.name().parse::<PacketApp>(), Ok(a));
        }
        assert!("gpu".parse::<PacketApp>().is_err());
    }

    proptest! {
        /// Encryption preserves length, changes a payload of 8 bytes or more (a shorter one keeps its value with
        /// probability 256^-len, 1 in 256 for one byte, so only the round trip is asserted there), and decrypts back.
        #[test]
        fn aes_round_trips(key in any::<[u8; 16]>(), seq in any::<u32>(), data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut buf = data.clone();
            aes_encrypt_packet(&key, seq, &mut buf);
            prop_assert_eq!(buf.len(), data.len());
            if data.len() >= 8 { prop_assert_ne!(&buf, &data); }
            aes_decrypt_packet(&key, seq, &mut buf);
            prop_assert_eq!(buf, data);
        }

        /// The `dpi` batch kernel (eight lanes over class blocks, packets grouped by length) equals the single
        /// walk per packet, for mixed lengths around and across the block size.
        #[test]
        fn dpi_batch_matches_per_packet(
            pats in proptest::collection::vec(proptest::collection::vec(0u8..4, 1..5), 1..10),
            payloads in proptest::collection::vec(proptest::collection::vec(0u8..5, 0..300), 0..90),
        ) {
            let dfa = Dfa::build(&pats, crate::dfa::DfaLimits::default()).unwrap();
            let mut batch = PacketBatch::new(BatchLimits::default());
            for (i, p) in payloads.iter().enumerate() {
                batch.push(i as u64, &[0; 16], 0, i as u64, p).unwrap();
            }
            let mut out = Vec::new();
            dpi_batch(&dfa, &batch, &mut out);
            prop_assert_eq!(out.len(), payloads.len());
            for (i, p) in payloads.iter().enumerate() {
                prop_assert_eq!(out[i], dfa.scan(p));
            }
        }

        /// The batch kernels equal the per-packet functions, whatever the batch shape.
        #[test]
        fn batch_kernels_match_per_packet(payloads in proptest::collection::vec((0u64..5, proptest::collection::vec(any::<u8>(), 0..70)), 0..150)) {
            let mut batch = PacketBatch::new(BatchLimits::default());
            let mut seqs = std::collections::HashMap::new();
            for (i, (flow, p)) in payloads.iter().enumerate() {
                let s = seqs.entry(*flow).or_insert(0u32);
                batch.push(*flow, &[*flow as u8; 16], *s, i as u64, p).unwrap();
                *s += 1;
            }
            let mut md = Vec::new();
            md5_batch(&batch, &mut md);
            let mut enc = batch.clone();
            aes_batch(&mut enc);
            for (i, (flow, p)) in payloads.iter().enumerate() {
                prop_assert_eq!(md[i], <[u8; 16]>::from(md5::Md5::digest(p)));
                let mut want = p.clone();
                aes_encrypt_packet(&[*flow as u8; 16], batch.seqs()[i], &mut want);
                prop_assert_eq!(enc.payload(i).unwrap(), &want[..]);
            }
        }
    }
}
