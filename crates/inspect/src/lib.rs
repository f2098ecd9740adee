//! # Inspect: the fifth stage. The stateful inspection engine: connection tracking, IP defragmentation, TCP reassembly, application identification and content matching, run by whichever worker owns a flow bundle.

pub mod reassembly;
