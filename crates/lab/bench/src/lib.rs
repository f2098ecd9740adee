//! The evaluation harness (ANCS'10 §4.1): preloaded traces, raw and scaled throughput, latency, reordering, balance, plots.
