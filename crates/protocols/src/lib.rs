//! Application-layer protocol detectors and parsers, probed on a connection's first payloads (Certain / Unsure / NotForUs).
