//! `cargo fleet`: the fleet tool for any workspace, installed with `cargo
//! install --path xtask` (see docs/fleet.md). The same library and commands
//! as this workspace's `cargo xtask`; cargo runs it as `cargo-fleet fleet
//! ARGS`, and the leading `fleet` is dropped (see
//! [`xtask::cli::cargo_subcommand_args`]).

fn main() {
    // a file-size limit makes a write fail (handled), never kills mid-write
    xtask::journal::signals::ignore_file_size_limit();
    let args = xtask::cli::cargo_subcommand_args(std::env::args_os().skip(1));
    let code = xtask::cli::run_as(
        "cargo fleet",
        args,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    // a write interrupted by SIGINT/SIGTERM rolled back; now die by the signal
    xtask::journal::signals::exit_if_interrupted();
    std::process::exit(code);
}
