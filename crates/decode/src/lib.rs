//! Decoding: zero-copy typed views over L2–L4 headers, flow keys and flow hashes.
