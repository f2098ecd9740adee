//! Loads an L7-filter signature set and prints the load report: files, loaded and rejected patterns per
//! directory with reasons, translation warnings, DFA groups.
//!
//! ```sh
//! cargo run --release -p flowbundle-signatures --example l7_report -- ../shared/data/l7-protocols [--all] [--legacy]
//! ```

use flowbundle_signatures::{Options, SignatureSet};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: l7_report DIR [--all] [--legacy]");
        std::process::exit(2);
    };
    let mut options = if args.iter().any(|a| a == "--all") {
        Options::all()
    } else {
        Options::default()
    };
    options.legacy = args.iter().any(|a| a == "--legacy");
    match SignatureSet::load_dir(dir, &options) {
        Ok((set, report)) => {
            print!("{report}");
            println!("{} signatures in precedence order:", set.len());
            let names: Vec<&str> = set.iter().map(|(_, s)| s.name.as_str()).collect();
            println!("{}", names.join(" "));
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
