//! The contract evo's differential lane relies on: `check` output is a function of the arguments.
//! Runs the real binary (libtorch must be on the loader path: `eval "$(scripts/setup-torch --env)"`).

use std::process::Command;

fn tinygpt(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_tinygpt"))
        .args(args)
        .output()
        .expect("tinygpt runs");
    assert!(
        output.status.success(),
        "tinygpt {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

#[test]
fn check_is_byte_identical_for_a_seed_and_differs_across_seeds() {
    let first = tinygpt(&["check", "--steps", "3", "--seed", "5"]);
    assert_eq!(first, tinygpt(&["check", "--steps", "3", "--seed", "5"]));
    assert_ne!(first, tinygpt(&["check", "--steps", "3", "--seed", "6"]));
    let steps: Vec<&str> = first.lines().filter(|l| l.starts_with("step ")).collect();
    assert_eq!(steps.len(), 3);
    assert!(steps[0].starts_with("step 1 loss "));
}

#[test]
fn selftest_passes_and_bad_flags_exit_2() {
    assert!(tinygpt(&["selftest"]).starts_with("selftest ok"));
    let status = Command::new(env!("CARGO_BIN_EXE_tinygpt"))
        .arg("--steps=x")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}
