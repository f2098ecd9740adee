//! # Ingest: the first stage of the data path
//!
//! Turns capture files (and, behind the `live` feature, interfaces) into [`PacketRecord`]s: a timestamp, the
//! link type the bytes start with, and a borrowed slice of the captured bytes. Nothing here looks inside a
//! packet; that is [`flowbundle-decode`]'s job.
//!
//! Two ways to read, because the two consumers want opposite things:
//!
//! * **Streaming** (`CaptureReader`): constant memory whatever the file size; `inspect` and the trace tools use it.
//!   Each record borrows the reader's buffer until the next call (a lending iterator), so no packet is copied.
//! * **Preloaded** (`Trace`): the whole capture in one contiguous block plus a packet index, as the ANCS'10 harness
//!   loads a capture before it starts its clock. Records borrow that block; indexing is O(1), so the dispatcher of the
//!   bench harness can hand a worker a `u32` packet number instead of a pointer and a length.
//!
//! Gzip-compressed files are recognised by their magic bytes, not their name.

pub mod linktype;
pub mod record;

pub use linktype::LinkType;
pub use record::PacketRecord;
