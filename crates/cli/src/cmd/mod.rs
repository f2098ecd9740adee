//! One module per command group; each owns its clap arguments and a `run` function.

pub mod bench;
pub mod demo;
pub mod hetero;
pub mod inspect;
pub mod simulate;
pub mod trace;
