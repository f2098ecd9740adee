//! L7-filter compatible signature engine: loads `.pat` files and classifies connections by their first bytes.
//!
//! L7-filter identifies a connection's application protocol by matching one regular expression per protocol
//! against the connection's first application bytes (both directions, NULs removed, at most 2047 bytes and 10
//! packets), keeping per connection one of three states: NO_MATCH_YET, MATCHED or NO_MATCH ([`Verdict`]).
//! This crate reads the L7-filter signature set (`../shared/data/l7-protocols`), translates its regex dialect
//! ([`translate`]) and matches all patterns incrementally: each packet's bytes are fed once into a few shared,
//! immutable DFAs whose state per connection is a small `Copy` value ([`ConnState`]). See [`set`] for the
//! matching semantics, precedence and costs, and [`reference`] for the literal re-scanning algorithm the
//! tests compare it with.
//!
//! ```no_run
//! use flowbundle_signatures::{Options, SignatureSet, Verdict};
//! let (set, report) = SignatureSet::load_dir("../shared/data/l7-protocols", &Options::default())?;
//! println!("{report}");
//! let mut conn = set.new_state();
//! for payload in [&b"220 ProFTPD Server ready\r\n"[..]] {
//!     if let Verdict::Matched(id) = set.feed(&mut conn, payload) {
//!         println!("{}", set.name(id));
//!     }
//! }
//! # Ok::<(), flowbundle_signatures::LoadError>(())
//! ```

pub mod pat;
pub mod reference;
pub mod set;
pub mod translate;

pub use set::{
    Category, ConnState, DirReport, GroupInfo, LoadError, LoadReport, MAX_GROUPS, Options,
    RejectReason, Rejection, SigId, Signature, SignatureSet, Verdict,
};
