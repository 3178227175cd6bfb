fn main() {
    if let Some(code) = evo::measure::helper::maybe_run_helper() {
        std::process::exit(code);
    }
}
