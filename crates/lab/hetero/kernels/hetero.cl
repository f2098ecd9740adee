// OpenCL C versions of the three packet applications (flowbundle-hetero). One work-item per packet.
// Every kernel follows the rules of the CPU reference in src/kernels.rs and src/dfa.rs bit for bit:
//   dpi: walk the DFA table (one row per state, premultiplied ids, see src/dfa.rs); count = saturating sum of the
//        output counts stored in the rows of matching states (ids >= match_start), first = the first matching
//        state's smallest output id (earliest end, smallest id on ties), 0xffffffff when none.
//   md5: RFC 1321.
//   aes: AES-128-CBC in place, key per connection, IV = E_K(seq_le64 || 0^64), trailing partial block XORed with
//        E_K(last ciphertext block) (residual block termination), length preserved.

// ---------------------------------------------------------------------------------------------------- dpi
__kernel void dpi(__global const uchar *data, __global const uint *offsets, const uint n,
                  __global const uint *trans, __constant uchar *classes, const uint match_start,
                  const uint out_off, __global uint2 *results) {
    uint i = get_global_id(0);
    if (i >= n) return;
    uint s = 0, count = 0, first = 0xffffffffu;
    uint end = offsets[i + 1];
    for (uint p = offsets[i]; p < end; ++p) {
        s = trans[s + classes[data[p]]];
        if (s >= match_start) {
            count = add_sat(count, trans[s + out_off]);
            if (first == 0xffffffffu) first = trans[s + out_off + 1];
        }
    }
    results[i] = (uint2)(count, first);
}

// ---------------------------------------------------------------------------------------------------- md5
__constant uint MD5_K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
__constant uint MD5_R[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                             5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                             4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                             6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

static void md5_block(uint *h, const uint *m) {
    uint a = h[0], b = h[1], c = h[2], d = h[3];
    for (uint i = 0; i < 64; ++i) {
        uint f, g;
        if (i < 16) { f = (b & c) | (~b & d); g = i; }
        else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) & 15; }
        else if (i < 48) { f = b ^ c ^ d; g = (3 * i + 5) & 15; }
        else { f = c ^ (b | ~d); g = (7 * i) & 15; }
        uint t = d;
        d = c;
        c = b;
        b = b + rotate(a + f + MD5_K[i] + m[g], MD5_R[i]);
        a = t;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
}

__kernel void md5(__global const uchar *data, __global const uint *offsets, const uint n,
                  __global uchar *digests) {
    uint i = get_global_id(0);
    if (i >= n) return;
    uint start = offsets[i], len = offsets[i + 1] - start;
    __global const uchar *p = data + start;
    uint h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    uint m[16];
    uint full = len / 64;
    for (uint b = 0; b < full; ++b) {
        for (uint w = 0; w < 16; ++w) {
            __global const uchar *q = p + b * 64 + w * 4;
            m[w] = (uint)q[0] | ((uint)q[1] << 8) | ((uint)q[2] << 16) | ((uint)q[3] << 24);
        }
        md5_block(h, m);
    }
    // Tail: remaining bytes, 0x80, zeros, bit length (little-endian u64); one or two blocks.
    uint rem = len - full * 64;
    uchar tail[128];
    for (uint k = 0; k < 128; ++k) tail[k] = 0;
    for (uint k = 0; k < rem; ++k) tail[k] = p[full * 64 + k];
    tail[rem] = 0x80;
    uint blocks = rem < 56 ? 1 : 2;
    ulong bits = (ulong)len * 8;
    for (uint k = 0; k < 8; ++k) tail[blocks * 64 - 8 + k] = (uchar)(bits >> (8 * k));
    for (uint b = 0; b < blocks; ++b) {
        for (uint w = 0; w < 16; ++w) {
            uint o = b * 64 + w * 4;
            m[w] = (uint)tail[o] | ((uint)tail[o + 1] << 8) | ((uint)tail[o + 2] << 16) | ((uint)tail[o + 3] << 24);
        }
        md5_block(h, m);
    }
    for (uint w = 0; w < 4; ++w)
        for (uint k = 0; k < 4; ++k) digests[i * 16 + w * 4 + k] = (uchar)(h[w] >> (8 * k));
}

// ---------------------------------------------------------------------------------------------------- aes
__constant uchar SBOX[256] = {
    0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b, 0xfe, 0xd7, 0xab, 0x76, 0xca, 0x82,
    0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0, 0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0, 0xb7, 0xfd, 0x93, 0x26,
    0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15, 0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96,
    0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2, 0xeb, 0x27, 0xb2, 0x75, 0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0,
    0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84, 0x53, 0xd1, 0x00, 0xed, 0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb,
    0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf, 0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f,
    0x50, 0x3c, 0x9f, 0xa8, 0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5, 0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff,
    0xf3, 0xd2, 0xcd, 0x0c, 0x13, 0xec, 0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
    0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14, 0xde, 0x5e, 0x0b, 0xdb, 0xe0, 0x32,
    0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c, 0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79, 0xe7, 0xc8, 0x37, 0x6d,
    0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08, 0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6,
    0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f, 0x4b, 0xbd, 0x8b, 0x8a, 0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e,
    0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e, 0xe1, 0xf8, 0x98, 0x11, 0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e,
    0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf, 0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f,
    0xb0, 0x54, 0xbb, 0x16};

static uchar xtime(uchar x) { return (uchar)((x << 1) ^ ((x & 0x80) ? 0x1b : 0x00)); }

static void aes_expand(const uchar *key, uchar *rk) {
    uchar rcon = 1;
    for (uint k = 0; k < 16; ++k) rk[k] = key[k];
    for (uint w = 4; w < 44; ++w) {
        uchar t0 = rk[(w - 1) * 4], t1 = rk[(w - 1) * 4 + 1], t2 = rk[(w - 1) * 4 + 2], t3 = rk[(w - 1) * 4 + 3];
        if (w % 4 == 0) {
            uchar u = t0;
            t0 = SBOX[t1] ^ rcon;
            t1 = SBOX[t2];
            t2 = SBOX[t3];
            t3 = SBOX[u];
            rcon = xtime(rcon);
        }
        rk[w * 4] = rk[(w - 4) * 4] ^ t0;
        rk[w * 4 + 1] = rk[(w - 4) * 4 + 1] ^ t1;
        rk[w * 4 + 2] = rk[(w - 4) * 4 + 2] ^ t2;
        rk[w * 4 + 3] = rk[(w - 4) * 4 + 3] ^ t3;
    }
}

// FIPS-197 cipher on a 16-byte state laid out column by column (byte r of column c at s[4c + r]).
static void aes_encrypt_block(const uchar *rk, uchar *s) {
    for (uint k = 0; k < 16; ++k) s[k] ^= rk[k];
    for (uint round = 1; round <= 10; ++round) {
        uchar t[16];
        // SubBytes + ShiftRows: row r rotates left by r columns.
        for (uint c = 0; c < 4; ++c)
            for (uint r = 0; r < 4; ++r) t[4 * c + r] = SBOX[s[4 * ((c + r) & 3) + r]];
        if (round < 10) {
            for (uint c = 0; c < 4; ++c) {
                uchar a0 = t[4 * c], a1 = t[4 * c + 1], a2 = t[4 * c + 2], a3 = t[4 * c + 3];
                uchar all = a0 ^ a1 ^ a2 ^ a3;
                s[4 * c] = a0 ^ all ^ xtime(a0 ^ a1);
                s[4 * c + 1] = a1 ^ all ^ xtime(a1 ^ a2);
                s[4 * c + 2] = a2 ^ all ^ xtime(a2 ^ a3);
                s[4 * c + 3] = a3 ^ all ^ xtime(a3 ^ a0);
            }
        } else {
            for (uint k = 0; k < 16; ++k) s[k] = t[k];
        }
        for (uint k = 0; k < 16; ++k) s[k] ^= rk[round * 16 + k];
    }
}

__kernel void aes(__global uchar *data, __global const uint *offsets, const uint n, __global const uint *conns,
                  __global const uint *seqs, __global const uchar *keys) {
    uint i = get_global_id(0);
    if (i >= n) return;
    uchar key[16], rk[176], prev[16], blk[16];
    uint conn = conns[i];
    for (uint k = 0; k < 16; ++k) key[k] = keys[conn * 16 + k];
    aes_expand(key, rk);
    uint seq = seqs[i];
    for (uint k = 0; k < 16; ++k) prev[k] = k < 4 ? (uchar)(seq >> (8 * k)) : 0;
    aes_encrypt_block(rk, prev);
    uint start = offsets[i], len = offsets[i + 1] - start;
    __global uchar *p = data + start;
    uint full = len / 16;
    for (uint b = 0; b < full; ++b) {
        for (uint k = 0; k < 16; ++k) blk[k] = p[b * 16 + k] ^ prev[k];
        aes_encrypt_block(rk, blk);
        for (uint k = 0; k < 16; ++k) { p[b * 16 + k] = blk[k]; prev[k] = blk[k]; }
    }
    uint rem = len - full * 16;
    if (rem > 0) {
        aes_encrypt_block(rk, prev);
        for (uint k = 0; k < rem; ++k) p[full * 16 + k] ^= prev[k];
    }
}
