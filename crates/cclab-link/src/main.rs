//! `cclab-link` — see README.md and src/cli.rs (the command line, shared
//! with `python -m cclab._link`).

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let code = cclab_link::cli::main(&argv);
    if code != 0 {
        std::process::exit(code);
    }
}
