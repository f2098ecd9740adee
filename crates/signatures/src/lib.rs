//! L7-filter compatible signature engine: loads `.pat` files and classifies connections by their first bytes.

pub mod pat;
pub mod translate;
