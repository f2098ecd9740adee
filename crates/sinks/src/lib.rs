//! # Sinks: the last stage. Suricata-compatible EVE JSON events and human-readable summaries.
