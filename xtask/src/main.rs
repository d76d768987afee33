//! `cargo xtask`: see [`xtask::cli`].

fn main() {
    // a file-size limit makes a write fail (handled), never kills mid-write
    xtask::journal::signals::ignore_file_size_limit();
    let code = xtask::cli::run(
        std::env::args_os().skip(1),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    );
    // a write interrupted by SIGINT/SIGTERM rolled back; now die by the signal
    xtask::journal::signals::exit_if_interrupted();
    std::process::exit(code);
}
